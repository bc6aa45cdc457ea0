/**
 * Reads a raw message as a mail client would, written independently of the builder: headers
 * unfolded, the multipart/alternative split at its boundary, each part decoded from its
 * Content-Transfer-Encoding.
 */
export interface ParsedPart {
  headers: Map<string, string>;
  body: string;
}

export interface ParsedMessage extends ParsedPart {
  /** The header section as written (folded), for checks of line lengths and folding. */
  headerText: string;
  parts: ParsedPart[];
  html: string;
  text: string;
}

function splitHead(raw: string): { headerText: string; headers: Map<string, string>; body: string } {
  const end = raw.indexOf("\r\n\r\n");
  const headerText = raw.slice(0, end);
  const headers = new Map<string, string>();
  for (const field of headerText.split(/\r\n(?![ \t])/)) {
    const colon = field.indexOf(":");
    headers.set(field.slice(0, colon).toLowerCase(), field.slice(colon + 1).replace(/\r\n([ \t])/g, "$1").trim());
  }
  return { headerText, headers, body: raw.slice(end + 4) };
}

const decoder = new TextDecoder();

function decodeBody(body: string, encoding: string): string {
  if (encoding === "base64") return decoder.decode(Uint8Array.from(atob(body.replace(/\s+/g, "")), (c) => c.charCodeAt(0)));
  if (encoding === "quoted-printable") {
    const soft = body.replace(/=\r\n/g, "");
    const bytes: number[] = [];
    for (let i = 0; i < soft.length; i++) {
      if (soft[i] === "=" && /^[0-9A-F]{2}$/.test(soft.slice(i + 1, i + 3))) {
        bytes.push(parseInt(soft.slice(i + 1, i + 3), 16));
        i += 2;
      } else bytes.push(soft.charCodeAt(i));
    }
    return decoder.decode(new Uint8Array(bytes));
  }
  return body;
}

export function parseMessage(raw: string): ParsedMessage {
  const { headerText, headers, body } = splitHead(raw);
  const type = headers.get("content-type") ?? "";
  const boundary = /boundary="([^"]+)"/.exec(type)?.[1];
  const parts: ParsedPart[] = [];
  if (boundary) {
    const sections = body.split(`--${boundary}`);
    for (const section of sections.slice(1, -1)) {
      const part = splitHead(section.replace(/^\r\n/, "").replace(/\r\n$/, ""));
      parts.push({ headers: part.headers, body: decodeBody(part.body, part.headers.get("content-transfer-encoding") ?? "7bit") });
    }
  } else {
    parts.push({ headers, body: decodeBody(body, headers.get("content-transfer-encoding") ?? "7bit") });
  }
  const of = (kind: string) => parts.find((p) => (p.headers.get("content-type") ?? "").startsWith(kind))?.body ?? "";
  return { headerText, headers, body, parts, html: of("text/html"), text: of("text/plain") };
}

/** The URIs of a raw message's List-Unsubscribe (RFC 2369), read from its unfolded value: each in angle brackets, comma-separated. */
export function unsubscribeUris(raw: string): string[] {
  const value = splitHead(raw).headers.get("list-unsubscribe");
  return value === undefined ? [] : value.split(",").map((item) => /^\s*<([^>]*)>\s*$/.exec(item)?.[1] ?? item);
}

/** A raw message's header fields in order, duplicates kept: each name as written and its value unfolded (CRLF before white space removed, RFC 5322 2.2.3). */
export function headerFields(raw: string): Array<{ name: string; value: string; lines: string[] }> {
  const head = raw.slice(0, raw.indexOf("\r\n\r\n"));
  return head.split(/\r\n(?![ \t])/).map((field) => {
    const colon = field.indexOf(":");
    return { name: field.slice(0, colon), value: field.slice(colon + 1).replace(/\r\n(?=[ \t])/g, ""), lines: field.split("\r\n") };
  });
}

const ENCODED_WORD = /^=\?([^?*]+)(?:\*[^?]*)?\?([BbQq])\?([^?]*)\?=$/;

/** One RFC 2047 encoded word decoded, or null when `token` is not one (or names a charset the runtime does not know). */
function decodeEncodedWord(token: string): string | null {
  const match = ENCODED_WORD.exec(token);
  if (!match) return null;
  const [, charset, encoding, text] = match;
  let bytes: Uint8Array;
  if (encoding!.toUpperCase() === "B") {
    try {
      bytes = Uint8Array.from(atob(text!), (c) => c.charCodeAt(0));
    } catch {
      return null;
    }
  } else {
    const out: number[] = [];
    for (let i = 0; i < text!.length; i++) {
      if (text![i] === "_") out.push(0x20);
      else if (text![i] === "=" && /^[0-9A-Fa-f]{2}$/.test(text!.slice(i + 1, i + 3))) {
        out.push(parseInt(text!.slice(i + 1, i + 3), 16));
        i += 2;
      } else out.push(text!.charCodeAt(i));
    }
    bytes = new Uint8Array(out);
  }
  try {
    return new TextDecoder(charset!, { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    return null;
  }
}

/**
 * What a mail client shows of an unstructured field (Subject): each white-space-delimited
 * encoded word decoded, the white space between two adjacent encoded words dropped (RFC 2047
 * 6.2), everything else as written.
 */
export function decodeUnstructured(value: string): string {
  const tokens = value.split(/([ \t]+)/);
  let out = "";
  let pendingSpace = "";
  let lastEncoded = false;
  for (const token of tokens) {
    if (/^[ \t]*$/.test(token)) {
      pendingSpace += token;
      continue;
    }
    const decoded = decodeEncodedWord(token);
    out += (decoded !== null && lastEncoded ? "" : pendingSpace) + (decoded ?? token);
    pendingSpace = "";
    lastEncoded = decoded !== null;
  }
  return (out + pendingSpace).trim();
}

/**
 * A mailbox field's display name and address as a client reads them (RFC 5322 3.4 name-addr):
 * quoted-strings unquoted and unescaped, encoded words decoded (never inside a quoted-string,
 * RFC 2047 5), the white space between words kept and between adjacent encoded words dropped.
 * Null when the phrase does not parse (an unterminated quote, a special outside quotes).
 */
export function parseMailbox(value: string): { name: string; address: string } | null {
  const match = /^([^]*)<([^<>]*)>[ \t]*$/.exec(value);
  if (!match) return /^[ \t]*[^\s<>"]+[ \t]*$/.test(value) ? { name: "", address: value.trim() } : null;
  const phrase = match[1]!;
  let name = "";
  let pendingSpace = "";
  let lastEncoded = false;
  for (let i = 0; i < phrase.length; ) {
    if (phrase[i] === " " || phrase[i] === "\t") {
      pendingSpace += phrase[i++];
      continue;
    }
    const space = name === "" ? "" : pendingSpace;
    pendingSpace = "";
    if (phrase[i] === '"') {
      let text = "";
      let j = i + 1;
      for (; j < phrase.length && phrase[j] !== '"'; j++) {
        if (phrase[j] === "\\") j++;
        text += phrase[j] ?? "";
      }
      if (j >= phrase.length) return null;
      name += space + text;
      lastEncoded = false;
      i = j + 1;
      continue;
    }
    const atom = /^[A-Za-z0-9!#$%&'*+\-/=?^_`{|}~.]+/.exec(phrase.slice(i))?.[0];
    if (!atom) return null;
    const decoded = decodeEncodedWord(atom);
    name += (decoded !== null && lastEncoded ? "" : space) + (decoded ?? atom);
    lastEncoded = decoded !== null;
    i += atom.length;
  }
  return { name, address: match[2]!.trim() };
}
