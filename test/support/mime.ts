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
