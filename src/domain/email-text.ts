import { compile } from "html-to-text";

/**
 * The text/plain alternative of an HTML body, made by html-to-text (a maintained converter
 * that reads HTML as a browser would). It runs on the template before merge tags are filled:
 * tags are plain text to the converter, so one conversion serves every recipient, and the
 * text is filled with unescaped values afterwards. Lines are not wrapped, so a tag with a
 * fallback (`{{ NAME | dear reader }}`) is never cut; quoted-printable keeps lines short.
 */
const convert = compile({
  wordwrap: false,
  selectors: [
    { selector: "img", format: "skip" },
    ...["h1", "h2", "h3", "h4", "h5", "h6"].map((selector) => ({ selector, options: { uppercase: false } })),
    // Email lays out with tables; their cells read best as paragraphs.
    ...["table", "tr", "td", "th"].map((selector) => ({ selector, format: "block" })),
    { selector: "a", options: { hideLinkHrefIfSameAsText: true, noAnchorUrl: true } },
  ],
});

export function textOfHtml(html: string): string {
  return convert(html).trim();
}
