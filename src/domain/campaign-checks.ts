import { trackableLinks } from "./email-message";
import { mergeTagNames, personalize, PREFERENCES_TAG, UNSUBSCRIBE_TAG } from "./merge-tags";

/**
 * What a campaign's body is checked for before it is scheduled (issue 43, item 5), without
 * I/O: images without alt text, the links to try (services/broadcasts/preview.ts asks each
 * through the outbound guard), a body that places no unsubscribe link, and merge tags that
 * name no attribute of the panel (they would always print their fallback, or nothing).
 */

export type CheckKind = "image_alt" | "link" | "unsubscribe" | "merge_tag";

export interface CampaignWarning {
  kind: CheckKind;
  message: string;
  /** What it is about: an image's src, a link, a tag's name; null for the body as a whole. */
  subject: string | null;
}

const IMG_TAG = /<img\b[^>]*>/gi;
const ALT_ATTRIBUTE = /\balt\s*=/i;
const SRC_ATTRIBUTE = /\bsrc\s*=\s*("([^"]*)"|'([^']*)'|([^\s>]+))/i;

/** The src of each image with no alt attribute (alt="" is a decorative image's, and fine). */
export function imagesWithoutAlt(html: string): string[] {
  const found: string[] = [];
  for (const [tag] of html.matchAll(IMG_TAG)) {
    if (ALT_ATTRIBUTE.test(tag)) continue;
    const src = tag.match(SRC_ATTRIBUTE);
    found.push(src ? (src[2] ?? src[3] ?? src[4] ?? "") : "");
  }
  return found;
}

/** The http(s) links of the body, each once, with merge tags in them filled by their fallbacks as a stranger would get them. */
export function linksToCheck(html: string): string[] {
  return [...new Set(trackableLinks(personalize(html, {}, "html")))];
}

/** Whether the body places {{UNSUBSCRIBE}} itself (else the send appends a standard footer with the link). */
export function placesUnsubscribe(html: string): boolean {
  return mergeTagNames(html).includes(UNSUBSCRIBE_TAG);
}

/** The merge tags of `sources` naming no attribute in `attributes` (canonical names), each once. */
export function unknownMergeTags(sources: readonly string[], attributes: ReadonlySet<string>): string[] {
  return mergeTagNames(...sources).filter((name) => name !== UNSUBSCRIBE_TAG && name !== PREFERENCES_TAG && !attributes.has(name));
}

/** The warnings of the checks that need no I/O, in the order a reader fixes them. */
export function bodyWarnings(subject: string, html: string, attributes: ReadonlySet<string>): CampaignWarning[] {
  const warnings: CampaignWarning[] = [];
  for (const name of unknownMergeTags([subject, html], attributes)) {
    warnings.push({ kind: "merge_tag", subject: name, message: `{{${name}}} names no attribute of this panel: every recipient gets its fallback` });
  }
  if (!placesUnsubscribe(html)) {
    warnings.push({ kind: "unsubscribe", subject: null, message: "the body has no {{UNSUBSCRIBE}} link: a standard footer with the unsubscribe link is added at the end" });
  }
  for (const src of imagesWithoutAlt(html)) {
    warnings.push({ kind: "image_alt", subject: src, message: "image without alt text: readers that block images or read aloud get nothing in its place" });
  }
  return warnings;
}
