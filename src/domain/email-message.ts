import { canonicalAttributeName, type AttributeValue } from "./attributes";

/**
 * Campaign email rendering, without I/O: merge tags, tracked links, the open pixel, the
 * unsubscribe link and the MIME text. The tracking URLs themselves are signed by the caller
 * (services/channels/email/tracking.ts) and passed in.
 */

/** `{{NAME}}`, `{{ name | there }}`: an attribute with an optional fallback. */
const MERGE_TAG = /\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*(?:\|([^}]*))?\}\}/g;

/** The merge tag that places the unsubscribe URL where the body wants it. */
export const UNSUBSCRIBE_TAG = "UNSUBSCRIBE";
// Private-use characters mark the unsubscribe URL's place until the URL is known.
const UNSUBSCRIBE_MARK = "\uE000unsubscribe\uE001";

type Part = string | { name: string; fallback: string };

/** A body or subject split once per campaign into text and merge tags. */
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

/** Fills the merge tags with the contact's attributes; values are HTML-escaped when `html`. */
export function personalize(template: Template, attributes: Readonly<Record<string, AttributeValue>>, html: boolean): string {
  let out = "";
  for (const part of template.parts) {
    if (typeof part === "string") {
      out += part;
      continue;
    }
    if (part.name === UNSUBSCRIBE_TAG && html) {
      out += UNSUBSCRIBE_MARK;
      continue;
    }
    const value = attributes[part.name];
    const textValue = value === undefined || value === "" ? part.fallback : String(value);
    out += html ? escapeHtml(textValue) : textValue;
  }
  return out;
}

const ANCHOR_HREF = /(<a\b[^>]*?\bhref\s*=\s*)("([^"]*)"|'([^']*)')/gi;

function unescapeAttribute(value: string): string {
  return value
    .replace(/&amp;/gi, "&")
    .replace(/&#38;/g, "&")
    .replace(/&quot;/gi, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/gi, "<")
    .replace(/&gt;/gi, ">")
    .trim();
}

/** The http(s) links of anchors in a personalised body, in order of appearance. */
export function trackableLinks(html: string): string[] {
  const links: string[] = [];
  for (const match of html.matchAll(ANCHOR_HREF)) {
    const href = unescapeAttribute(match[3] ?? match[4] ?? "");
    if (/^https?:\/\//i.test(href) && !href.includes(UNSUBSCRIBE_MARK)) links.push(href);
  }
  return links;
}

export interface TrackingUrls {
  /** One click URL per entry of trackableLinks(html), same order. */
  clicks: string[];
  open: string;
  unsubscribe: string;
}

/**
 * Rewrites each trackable link to its click URL, puts the unsubscribe URL where the body
 * asked for it (or in a footer when it did not) and adds the open pixel before </body>.
 */
export function applyTracking(html: string, urls: TrackingUrls): string {
  let index = 0;
  let body = html.replace(ANCHOR_HREF, (whole, prefix: string, _quoted, double?: string, single?: string) => {
    const href = unescapeAttribute(double ?? single ?? "");
    if (!/^https?:\/\//i.test(href) || href.includes(UNSUBSCRIBE_MARK)) return whole;
    const tracked = urls.clicks[index++];
    return tracked === undefined ? whole : `${prefix}"${escapeHtml(tracked)}"`;
  });
  const unsubscribe = escapeHtml(urls.unsubscribe);
  if (body.includes(UNSUBSCRIBE_MARK)) body = body.split(UNSUBSCRIBE_MARK).join(unsubscribe);
  else {
    body = insertBeforeBodyEnd(
      body,
      `<p style="font-size:12px;color:#666">If you no longer want these emails, <a href="${unsubscribe}">unsubscribe</a>.</p>`,
    );
  }
  return insertBeforeBodyEnd(body, `<img src="${escapeHtml(urls.open)}" width="1" height="1" alt="" style="display:block;border:0">`);
}

function insertBeforeBodyEnd(html: string, fragment: string): string {
  const end = html.search(/<\/body\s*>/i);
  return end < 0 ? html + fragment : html.slice(0, end) + fragment + html.slice(end);
}

// ---------------------------------------------------------------------------------------
// MIME (RFC 5322 / 2045 / 2047). Written here rather than with a library: a campaign builds
// one single-part HTML message per recipient on the hot path, and that needs only headers
// and a base64 body.

const encoder = new TextEncoder();

export function base64OfBytes(bytes: Uint8Array): string {
  let binary = "";
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) binary += String.fromCharCode(...bytes.subarray(i, i + step));
  return btoa(binary);
}

/** An RFC 2047 encoded word when the text is not plain printable ASCII. */
export function encodeHeaderText(text: string): string {
  const clean = text.replace(/[\r\n]+/g, " ");
  if (/^[\x20-\x7e]*$/.test(clean)) return clean;
  // Encoded words are at most 75 characters: cut the text at character boundaries.
  const words: string[] = [];
  let current = "";
  for (const char of clean) {
    if (encoder.encode(current + char).length > 45) {
      words.push(current);
      current = "";
    }
    current += char;
  }
  if (current) words.push(current);
  return words.map((w) => `=?UTF-8?B?${base64OfBytes(encoder.encode(w))}?=`).join("\r\n ");
}

export function formatMailbox(name: string, address: string): string {
  if (!name) return address;
  const display = /^[\x20-\x7e]*$/.test(name) ? `"${name.replace(/["\\\r\n]/g, "")}"` : encodeHeaderText(name);
  return `${display} <${address}>`;
}

export interface MimeMessage {
  from: { name: string; address: string };
  to: string;
  subject: string;
  html: string;
  messageId: string;
  date: number;
  unsubscribeUrl: string;
  headers?: Record<string, string>;
}

/** The message as RFC 5322 text (CRLF line ends), ready for an .eml file or a raw send. */
export function buildMime(message: MimeMessage): string {
  const domain = message.from.address.split("@")[1] ?? "localhost";
  const headers = [
    `From: ${formatMailbox(message.from.name, message.from.address)}`,
    `To: ${message.to}`,
    `Subject: ${encodeHeaderText(message.subject)}`,
    `Date: ${new Date(message.date).toUTCString().replace("GMT", "+0000")}`,
    `Message-ID: <${message.messageId}@${domain}>`,
    "MIME-Version: 1.0",
    `List-Unsubscribe: <${message.unsubscribeUrl}>`,
    "List-Unsubscribe-Post: List-Unsubscribe=One-Click",
    ...Object.entries(message.headers ?? {}).map(([name, value]) => `${name}: ${value.replace(/[\r\n]+/g, " ")}`),
    "Content-Type: text/html; charset=UTF-8",
    "Content-Transfer-Encoding: base64",
  ];
  const body = base64OfBytes(encoder.encode(message.html)).replace(/.{76}(?=.)/g, "$&\r\n");
  return `${headers.join("\r\n")}\r\n\r\n${body}\r\n`;
}
