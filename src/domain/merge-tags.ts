import { canonicalAttributeName, type AttributeValue } from "./attributes";

/**
 * The one renderer of merge tags, for every channel: email subjects and bodies (campaign,
 * journey, test copies), SMS text and push titles and bodies. `{{NAME}}` and
 * `{{ name | there }}` name an attribute with an optional fallback, used when the contact's
 * value is missing or empty.
 */
const MERGE_TAG = /\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*(?:\|([^}]*))?\}\}/g;

/** The merge tags that place the unsubscribe URL and the preference page's where an email body wants them. */
export const UNSUBSCRIBE_TAG = "UNSUBSCRIBE";
export const PREFERENCES_TAG = "PREFERENCES";
// Private-use characters mark the URLs' places until they are known (email-message.ts puts them in).
export const UNSUBSCRIBE_MARK = "\uE000unsubscribe\uE001";
export const PREFERENCES_MARK = "\uE000preferences\uE001";
const LINK_MARKS: Readonly<Record<string, string>> = { [UNSUBSCRIBE_TAG]: UNSUBSCRIBE_MARK, [PREFERENCES_TAG]: PREFERENCES_MARK };

type Part = string | { name: string; fallback: string };

/** A source split once into text and merge tags (a campaign compiles its body once for every recipient). */
export interface Template {
  parts: Part[];
}

export function compileTemplate(source: string): Template {
  const parts: Part[] = [];
  let last = 0;
  for (const match of source.matchAll(MERGE_TAG)) {
    if (match.index > last) parts.push(source.slice(last, match.index));
    parts.push({ name: canonicalAttributeName(match[1]!), fallback: (match[2] ?? "").trim() });
    last = match.index + match[0].length;
  }
  if (last < source.length) parts.push(source.slice(last));
  return { parts };
}

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

/**
 * Escapes the text of a source for HTML but leaves its merge tags as written: their fallbacks
 * are escaped once, when personalize fills them (escaping the whole source escaped them twice:
 * a preheader's `{{NAME|Tom & Jerry}}` showed `Tom &amp;amp; Jerry`).
 */
export function escapeHtmlOutsideTags(source: string): string {
  let out = "";
  let last = 0;
  for (const match of source.matchAll(MERGE_TAG)) {
    out += escapeHtml(source.slice(last, match.index)) + match[0];
    last = match.index + match[0].length;
  }
  return out + escapeHtml(source.slice(last));
}

/**
 * How filled values are written. `html`: an email's HTML body, values escaped. `text`: an
 * email's text body. In both, {{UNSUBSCRIBE}} and {{PREFERENCES}} mark their links' places.
 * `plain`: a subject, an SMS text, a push title or body: values as they are, and no link
 * marks (those tags are filled as any attribute, usually with their fallback).
 */
export type FillMode = "html" | "text" | "plain";

type Attributes = Readonly<Record<string, AttributeValue>>;

/** Fills the merge tags of `template` (a source, or one compiled once) with the contact's attributes. */
export function personalize(template: Template | string, attributes: Attributes, mode: FillMode): string {
  const { parts } = typeof template === "string" ? compileTemplate(template) : template;
  let out = "";
  for (const part of parts) {
    if (typeof part === "string") {
      out += part;
      continue;
    }
    const mark = LINK_MARKS[part.name];
    if (mark !== undefined && mode !== "plain") {
      out += mark;
      continue;
    }
    const value = attributes[part.name];
    const textValue = value === undefined || value === "" ? part.fallback : String(value);
    out += mode === "html" ? escapeHtml(textValue) : textValue;
  }
  return out;
}

/** The attribute names the sources' merge tags read, each once. */
export function mergeTagNames(...sources: ReadonlyArray<Template | string>): string[] {
  const names = new Set<string>();
  for (const source of sources) {
    for (const part of (typeof source === "string" ? compileTemplate(source) : source).parts) if (typeof part !== "string") names.add(part.name);
  }
  return [...names];
}

/**
 * The values a message's merge tags (`names`, from mergeTagNames) were filled with, missing and
 * empty ones left out (their fallback stood for them): kept with the message, so its copy is
 * the same template filled again exactly as it was sent, for a few bytes a message rather
 * than its body. Null when there are none.
 */
export function mergeValuesOf(attributes: Attributes, names: readonly string[]): Record<string, AttributeValue> | null {
  let values: Record<string, AttributeValue> | null = null;
  for (const name of names) {
    const value = attributes[name];
    if (value !== undefined && value !== "" && !(name in LINK_MARKS)) (values ??= {})[name] = value;
  }
  return values;
}

/** Whether a template has merge tags: one without fills to itself. */
export function hasMergeTags(template: Template): boolean {
  return template.parts.some((part) => typeof part !== "string");
}
