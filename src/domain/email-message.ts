import { escapeHtml, PREFERENCES_MARK, UNSUBSCRIBE_MARK } from "./merge-tags";
import { preferencesUrlOf } from "./preferences";

/**
 * Campaign and journey email rendering, without I/O: tracked links, the open pixel, the
 * unsubscribe link and the MIME text (merge tags are filled by merge-tags.ts). The tracking URLs themselves are signed by the caller
 * (services/channels/email/tracking.ts) and passed in.
 */

/** A campaign's message to a contact: its id (Message-ID, outbox key, tracking and events' msgid). */
export function campaignMessageId(campaignId: string, contactId: number): string {
  return `${campaignId}.${contactId}`;
}

const hasLinkMark = (text: string) => text.includes(UNSUBSCRIBE_MARK) || text.includes(PREFERENCES_MARK);

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
    if (/^https?:\/\//i.test(href) && !hasLinkMark(href)) links.push(href);
  }
  return links;
}

export interface TrackingUrls {
  /** One click URL per entry of trackableLinks(html), same order. */
  clicks: string[];
  open: string;
  unsubscribe: string;
}

/** Who sends a message and on whose list the recipient is: what the footer tells the recipient. */
export interface SenderFacts {
  senderName: string;
  senderAddress: string;
  /** The panel: the organisation whose mailing list holds the address. */
  panelName: string;
}

function senderLabel(facts: SenderFacts): string {
  return facts.senderName ? `${facts.senderName} (${facts.senderAddress})` : facts.senderAddress;
}

/** The footer of a body that placed no {{UNSUBSCRIBE}} itself: who sends, why, and the way out. */
export function footerHtml(facts: SenderFacts, unsubscribeUrl: string): string {
  const muted = "margin:24px 0 0;padding-top:12px;border-top:1px solid #d0d4da;font:13px/1.5 Arial,Helvetica,sans-serif;color:#4a5058";
  return (
    `<div role="contentinfo" style="${muted}"><p style="margin:0 0 8px">This email was sent by ${escapeHtml(senderLabel(facts))} ` +
    `because your address is on the mailing list of ${escapeHtml(facts.panelName)}.</p>` +
    `<p style="margin:0">Don't want these emails? <a href="${escapeHtml(unsubscribeUrl)}" style="color:#1a56b8;text-decoration:underline">Unsubscribe</a> ` +
    `with one click, or <a href="${escapeHtml(preferencesUrlOf(unsubscribeUrl))}" style="color:#1a56b8;text-decoration:underline">choose what you receive</a>.</p></div>`
  );
}

export function footerText(facts: SenderFacts, unsubscribeUrl: string): string {
  return (
    `--\r\nThis email was sent by ${senderLabel(facts)} because your address is on the mailing list of ${facts.panelName}.\r\n` +
    `Don't want these emails? Unsubscribe: ${unsubscribeUrl}\r\nChoose what you receive: ${preferencesUrlOf(unsubscribeUrl)}`
  );
}

/**
 * Rewrites each trackable link to its click URL, puts the unsubscribe URL where the body
 * asked for it (or in a footer when it did not) and adds the open pixel before </body>.
 */
export function applyTracking(html: string, urls: TrackingUrls, facts: SenderFacts): string {
  let index = 0;
  let body = html.replace(ANCHOR_HREF, (whole, prefix: string, _quoted, double?: string, single?: string) => {
    const href = unescapeAttribute(double ?? single ?? "");
    if (!/^https?:\/\//i.test(href) || hasLinkMark(href)) return whole;
    const tracked = urls.clicks[index++];
    return tracked === undefined ? whole : `${prefix}"${escapeHtml(tracked)}"`;
  });
  body = body.split(PREFERENCES_MARK).join(escapeHtml(preferencesUrlOf(urls.unsubscribe)));
  if (body.includes(UNSUBSCRIBE_MARK)) body = body.split(UNSUBSCRIBE_MARK).join(escapeHtml(urls.unsubscribe));
  else body = insertBeforeBodyEnd(body, footerHtml(facts, urls.unsubscribe));
  return insertBeforeBodyEnd(body, `<img src="${escapeHtml(urls.open)}" width="1" height="1" alt="" style="display:block;border:0">`);
}

/** The text body's unsubscribe URL where {{UNSUBSCRIBE}} asked for it, or the footer's text. */
export function applyTextUnsubscribe(text: string, unsubscribeUrl: string, facts: SenderFacts): string {
  const withPreferences = text.split(PREFERENCES_MARK).join(preferencesUrlOf(unsubscribeUrl));
  if (withPreferences.includes(UNSUBSCRIBE_MARK)) return withPreferences.split(UNSUBSCRIBE_MARK).join(unsubscribeUrl);
  return `${withPreferences.replace(/\s+$/, "")}\r\n\r\n${footerText(facts, unsubscribeUrl)}`;
}

/**
 * A personalised body with `placeholder` where {{UNSUBSCRIBE}} and {{PREFERENCES}} asked for
 * their links: a test copy goes to someone who is not a recipient, so it has neither.
 */
export function withoutLinkMarks(body: string, placeholder: string): string {
  return body.split(UNSUBSCRIBE_MARK).join(placeholder).split(PREFERENCES_MARK).join(placeholder);
}

function insertBeforeBodyEnd(html: string, fragment: string): string {
  const end = html.search(/<\/body\s*>/i);
  return end < 0 ? html + fragment : html.slice(0, end) + fragment + html.slice(end);
}

// ---------------------------------------------------------------------------------------
// MIME (RFC 5322 / 2045 / 2046 / 2047). Written here rather than with a library: a campaign
// builds one message per recipient on the hot path, and that needs only headers, one
// multipart/alternative and two encodings.

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function base64OfBytes(bytes: Uint8Array): string {
  let binary = "";
  const step = 0x8000;
  for (let i = 0; i < bytes.length; i += step) binary += String.fromCharCode(...bytes.subarray(i, i + step));
  return btoa(binary);
}

/** RFC 5322's recommended line length; 998 octets is the hard limit. */
const LINE = 78;
/** UTF-8 bytes per encoded word: 42 bytes are 56 base64 characters, 68 with `=?UTF-8?B?…?=`. */
const WORD_BYTES = 42;

function encodedWords(text: string): string[] {
  const words: string[] = [];
  let current = "";
  for (const char of text) {
    if (current && encoder.encode(current + char).length > WORD_BYTES) {
      words.push(current);
      current = "";
    }
    current += char;
  }
  if (current) words.push(current);
  return words.map((w) => `=?UTF-8?B?${base64OfBytes(encoder.encode(w))}?=`);
}

/**
 * Whether ASCII text can be written as it is, folded at its spaces: every word fits a line (the
 * first after the field's name), and no word is an encoded word (`=?UTF-8?B?SGk=?=`), which a
 * reader would decode into other text than was sent.
 */
function foldsAsWritten(text: string, used: number): boolean {
  if (!/^[\x20-\x7e]*$/.test(text)) return false;
  return text.split(" ").every((word, i) => (i === 0 ? used : 1) + word.length <= LINE && !/=\?.*\?=/.test(word));
}

/**
 * Header text, folded. Printable ASCII is folded at its spaces so lines stay within 78
 * characters; anything else, a word too long for a line, or a word that reads as an encoded
 * word, becomes RFC 2047 encoded words, one per line (68 characters each). Line breaks in the
 * text are removed, so a value can never start a header of its own.
 */
export function encodeHeaderText(text: string, nameLength = 0): string {
  const clean = text.replace(/[\r\n]+/g, " ");
  if (foldsAsWritten(clean, nameLength + 2)) return foldAtSpaces(clean, nameLength + 2);
  // The white space between adjacent encoded words is not part of the text (RFC 2047 6.2).
  return foldAtSpaces(encodedWords(clean).join(" "), nameLength + 2);
}

function foldAtSpaces(text: string, used: number): string {
  const words = text.split(" ");
  const lines: string[] = [];
  let line = words.shift()!;
  let width = used + line.length;
  for (const word of words) {
    // Never folded before an empty word: the continuation line would be only white space.
    if (width + 1 + word.length > LINE && word !== "" && line.trim() !== "") {
      lines.push(line);
      line = word;
      width = 1 + word.length;
    } else {
      line += ` ${word}`;
      width += 1 + word.length;
    }
  }
  lines.push(line);
  // Each continuation line starts with the space it was folded at.
  return lines.join("\r\n ");
}

/**
 * A display name and address. An ASCII name becomes an RFC 5322 quoted-string, its quotes and
 * backslashes escaped (not dropped: `Shop, "Best" Deals` keeps its quotes); a name with a word
 * too long for a line, or any other, becomes encoded words.
 */
export function formatMailbox(name: string, address: string, nameLength = "From".length): string {
  const clean = name.replace(/[\r\n]+/g, " ");
  if (!clean) return address;
  const quoted = `"${clean.replace(/["\\]/g, "\\$&")}"`;
  const display = foldsAsWritten(quoted, nameLength + 2) ? quoted : encodedWords(clean).join(" ");
  // Folded at its spaces: white space inside a quoted-string is folding white space too (RFC 5322 3.2.4).
  return foldAtSpaces(`${display} <${address}>`, nameLength + 2);
}

/**
 * The List-Unsubscribe field (RFC 2369): each URI in angle brackets, folded after the commas
 * between them, and the first on a continuation line of its own when it does not fit after the
 * name. A URI itself is never broken: RFC 2369 asks readers to ignore white space inside the
 * brackets, but a one-click (RFC 8058) that did not would post to a broken URL. So a URI longer
 * than 76 characters keeps its line longer than 78 (within 998 octets: the URIs are ours).
 */
export function listUnsubscribeField(uris: readonly string[]): string {
  const name = "List-Unsubscribe:";
  const value = uris.map((uri) => `<${uri}>`).join(", ");
  const first = value.split(" ")[0]!;
  return name.length + 1 + first.length <= LINE ? `${name} ${foldAtSpaces(value, name.length + 1)}` : `${name}\r\n ${foldAtSpaces(value, 1)}`;
}

/**
 * A field holding one bare address (To, Reply-To), in its ASCII form: on a continuation line of
 * its own when it does not fit after the name. An address is never broken, so one too long for
 * any line keeps its line longer than 78 (within 998 octets: addresses are at most 254).
 */
export function addressField(name: string, address: string): string {
  const ascii = asciiAddress(address);
  return name.length + 2 + ascii.length <= LINE ? `${name}: ${ascii}` : `${name}:\r\n ${ascii}`;
}

/** An address as a header carries it: an internationalised domain in its ASCII (punycode) form. */
export function asciiAddress(address: string): string {
  const at = address.lastIndexOf("@");
  if (at < 0 || /^[\x20-\x7e]*$/.test(address)) return address;
  try {
    return `${address.slice(0, at)}@${new URL(`http://${address.slice(at + 1)}`).hostname}`;
  } catch {
    return address;
  }
}

/**
 * Quoted-printable (RFC 2045 6.7) of UTF-8 text with CRLF line breaks: readable where the
 * text is ASCII, lines of at most 76 characters with soft breaks.
 */
export function quotedPrintable(text: string): string {
  const out: string[] = [];
  for (const line of text.replace(/\r?\n/g, "\n").split("\n")) {
    const bytes = encoder.encode(line);
    let current = "";
    for (let i = 0; i < bytes.length; i++) {
      const byte = bytes[i]!;
      const last = i === bytes.length - 1;
      const plain = (byte >= 33 && byte <= 126 && byte !== 61) || ((byte === 32 || byte === 9) && !last);
      const piece = plain ? String.fromCharCode(byte) : `=${byte.toString(16).toUpperCase().padStart(2, "0")}`;
      if (current.length + piece.length > 75) {
        out.push(`${current}=`);
        current = "";
      }
      current += piece;
    }
    out.push(current);
  }
  return out.join("\r\n");
}

export interface MimeMessage {
  from: { name: string; address: string };
  to: string;
  subject: string;
  html: string;
  /** The text/plain alternative, already filled; the unsubscribe URL is in it. */
  text: string;
  messageId: string;
  date: number;
  /** Absent for a test send, which goes to someone who is not a recipient. */
  unsubscribeUrl?: string;
  replyTo?: string | null;
  headers?: Record<string, string>;
}

// "=_" can appear neither in base64 nor in quoted-printable text, so the boundary never occurs in a part.
const BOUNDARY = "=_apiv2_alternative";

/**
 * The HTML part of a message buildMime wrote (a sent copy in the outbox), or null. Reads only
 * the shape buildMime writes (one base64 text/html part), which is why it is not a MIME parser.
 */
export function htmlOfMime(raw: string): string | null {
  const start = raw.indexOf("Content-Type: text/html; charset=UTF-8");
  if (start < 0) return null;
  const body = raw.indexOf("\r\n\r\n", start);
  const end = raw.indexOf(`--${BOUNDARY}--`, body);
  if (body < 0 || end < 0) return null;
  try {
    const binary = atob(raw.slice(body + 4, end).replace(/\s+/g, ""));
    return decoder.decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
  } catch {
    return null;
  }
}

/** The message as RFC 5322 text (CRLF line ends), ready for an .eml file or a raw send. */
export function buildMime(message: MimeMessage): string {
  const domain = asciiAddress(message.from.address).split("@")[1] ?? "localhost";
  const headers = [
    `From: ${formatMailbox(message.from.name, asciiAddress(message.from.address))}`,
    addressField("To", message.to),
    ...(message.replyTo ? [addressField("Reply-To", message.replyTo)] : []),
    `Subject: ${encodeHeaderText(message.subject, "Subject".length)}`,
    `Date: ${new Date(message.date).toUTCString().replace("GMT", "+0000")}`,
    `Message-ID: <${message.messageId}@${domain}>`,
    "MIME-Version: 1.0",
    ...(message.unsubscribeUrl ? [listUnsubscribeField([message.unsubscribeUrl]), "List-Unsubscribe-Post: List-Unsubscribe=One-Click"] : []),
    ...Object.entries(message.headers ?? {}).map(([name, value]) => `${name}: ${encodeHeaderText(value, name.length)}`),
    `Content-Type: multipart/alternative; boundary="${BOUNDARY}"`,
  ];
  const html = base64OfBytes(encoder.encode(message.html)).replace(/.{76}(?=.)/g, "$&\r\n");
  return [
    `${headers.join("\r\n")}\r\n`,
    `--${BOUNDARY}`,
    "Content-Type: text/plain; charset=UTF-8",
    "Content-Transfer-Encoding: quoted-printable\r\n",
    quotedPrintable(message.text),
    `--${BOUNDARY}`,
    "Content-Type: text/html; charset=UTF-8",
    "Content-Transfer-Encoding: base64\r\n",
    html,
    `--${BOUNDARY}--\r\n`,
  ].join("\r\n");
}
