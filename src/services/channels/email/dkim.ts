import { base64OfBytes } from "../../../domain/email-message";

/**
 * DKIM signatures (RFC 6376) of outgoing mail, with WebCrypto: RSA-SHA256, and Ed25519-SHA256
 * (RFC 8463) as a second signature where the domain published its key. Canonicalization is
 * relaxed/relaxed, which survives the header refolding and trailing-space changes relays make.
 *
 * The signed headers are those a receiver and RFC 8058 look at (From, Reply-To, To, Subject,
 * Date, Message-ID, List-Unsubscribe, List-Unsubscribe-Post) and the MIME headers; From and
 * Subject are named once more than they occur, so a From or Subject added on the way breaks the
 * signature instead of being shown unsigned. Reply-To is named whether or not the message has
 * one: absent, it signs as empty, so a Reply-To added on the way breaks the signature too.
 */

export const SIGNED_HEADERS = [
  "from",
  "reply-to",
  "to",
  "subject",
  "date",
  "message-id",
  "list-unsubscribe",
  "list-unsubscribe-post",
  "mime-version",
  "content-type",
  "from",
  "subject",
];

export interface DkimKey {
  /** The signing domain (d=), the From address's domain. */
  domain: string;
  selector: string;
  algorithm: "rsa-sha256" | "ed25519-sha256";
  privateKey: CryptoKey;
}

const encoder = new TextEncoder();

/** Relaxed body canonicalization: spaces collapsed, trailing spaces and empty lines dropped. */
export function relaxedBody(body: string): string {
  const lines = body.split("\r\n").map((line) => line.replace(/[ \t]+/g, " ").replace(/ $/, ""));
  while (lines.length && lines[lines.length - 1] === "") lines.pop();
  return lines.length ? `${lines.join("\r\n")}\r\n` : "";
}

/** Relaxed header canonicalization of one field (`Name: value`, possibly folded). */
export function relaxedHeader(field: string): string {
  const colon = field.indexOf(":");
  const name = field.slice(0, colon).trim().toLowerCase();
  const value = field
    .slice(colon + 1)
    .replace(/\r\n(?=[ \t])/g, "")
    .replace(/[ \t]+/g, " ")
    .trim();
  return `${name}:${value}`;
}

/** The header fields of a header section, each with its folding, in order. */
function headerFields(head: string): string[] {
  return head.split(/\r\n(?![ \t])/);
}

/** The fields h= names, each name taking the next instance from the bottom; names with none left sign as empty. */
function selectHeaders(fields: readonly string[], names: readonly string[]): string[] {
  const used = new Set<number>();
  const chosen: string[] = [];
  for (const name of names) {
    for (let i = fields.length - 1; i >= 0; i--) {
      const field = fields[i]!;
      if (!used.has(i) && field.slice(0, field.indexOf(":")).trim().toLowerCase() === name) {
        used.add(i);
        chosen.push(relaxedHeader(field));
        break;
      }
    }
  }
  return chosen;
}

async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data));
}

/** Tag pieces after the header name, folded within 78 characters; a piece after a colon continues without a space. */
function foldTags(name: string, pieces: readonly string[]): string {
  const lines: string[] = [];
  let line = name;
  for (const piece of pieces) {
    const glue = line.endsWith(":") && line !== name ? "" : " ";
    if (line.length + glue.length + piece.length > 78 && line.trim() !== "") {
      lines.push(line);
      line = `\t${piece}`;
    } else line += glue + piece;
  }
  lines.push(line);
  return lines.join("\r\n");
}

/** Base64 cut into lines of a folded header (tab-indented continuation lines). */
function foldBase64(value: string, first: number): string {
  const parts = [value.slice(0, first)];
  for (let i = first; i < value.length; i += 72) parts.push(value.slice(i, i + 72));
  return parts.filter((p) => p !== "").join("\r\n\t");
}

/**
 * The message with one DKIM-Signature per key put on top (the last key's first). `now` is the
 * signature time (t=).
 */
export async function signDkim(raw: string, keys: readonly DkimKey[], now: number): Promise<string> {
  if (keys.length === 0) return raw;
  const split = raw.indexOf("\r\n\r\n");
  const head = raw.slice(0, split);
  const body = raw.slice(split + 4);
  const bodyHash = base64OfBytes(await sha256(encoder.encode(relaxedBody(body))));
  const signed = selectHeaders(headerFields(head), SIGNED_HEADERS);
  const signatures: string[] = [];
  for (const key of keys) {
    const tags = [
      "v=1;",
      `a=${key.algorithm};`,
      "c=relaxed/relaxed;",
      `d=${key.domain};`,
      `s=${key.selector};`,
      `t=${Math.floor(now / 1000)};`,
      // h= may fold after each colon (RFC 6376 3.5: FWS around the colons is ignored).
      ...SIGNED_HEADERS.map((name, i) => (i === 0 ? "h=" : "") + name + (i === SIGNED_HEADERS.length - 1 ? ";" : ":")),
      `bh=${bodyHash};`,
    ];
    const unsigned = `${foldTags("DKIM-Signature:", tags)}\r\n\tb=`;
    const input = encoder.encode([...signed, relaxedHeader(unsigned)].join("\r\n"));
    const signature =
      key.algorithm === "rsa-sha256"
        ? await crypto.subtle.sign("RSASSA-PKCS1-v1_5", key.privateKey, input)
        : // RFC 8463: Ed25519 signs the SHA-256 hash of the canonical data (PureEdDSA over the hash).
          await crypto.subtle.sign("Ed25519", key.privateKey, await sha256(input));
    signatures.unshift(unsigned + foldBase64(base64OfBytes(new Uint8Array(signature)), 70));
  }
  return `${signatures.join("\r\n")}\r\n${raw}`;
}

/** A new key pair of a sender domain: the private key as PKCS #8, the public key as DNS publishes it. */
export interface GeneratedKey {
  privatePkcs8: string;
  /** The p= of the DNS record: SPKI for RSA, the raw 32-byte key for Ed25519 (RFC 8463). */
  publicKey: string;
}

export async function generateDkimKey(algorithm: DkimKey["algorithm"]): Promise<GeneratedKey> {
  if (algorithm === "rsa-sha256") {
    const pair = (await crypto.subtle.generateKey(
      { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
      true,
      ["sign", "verify"],
    )) as CryptoKeyPair;
    return {
      privatePkcs8: base64OfBytes(new Uint8Array((await crypto.subtle.exportKey("pkcs8", pair.privateKey)) as ArrayBuffer)),
      publicKey: base64OfBytes(new Uint8Array((await crypto.subtle.exportKey("spki", pair.publicKey)) as ArrayBuffer)),
    };
  }
  const pair = (await crypto.subtle.generateKey({ name: "Ed25519" }, true, ["sign", "verify"])) as CryptoKeyPair;
  return {
    privatePkcs8: base64OfBytes(new Uint8Array((await crypto.subtle.exportKey("pkcs8", pair.privateKey)) as ArrayBuffer)),
    publicKey: base64OfBytes(new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer)),
  };
}

export function importDkimPrivateKey(algorithm: DkimKey["algorithm"], pkcs8: string): Promise<CryptoKey> {
  const bytes = Uint8Array.from(atob(pkcs8), (c) => c.charCodeAt(0));
  return algorithm === "rsa-sha256"
    ? crypto.subtle.importKey("pkcs8", bytes, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" }, false, ["sign"])
    : crypto.subtle.importKey("pkcs8", bytes, { name: "Ed25519" }, false, ["sign"]);
}

/** The TXT record a domain publishes at `{selector}._domainkey.{domain}`. */
export function dkimRecord(algorithm: DkimKey["algorithm"], publicKey: string): string {
  return `v=DKIM1; k=${algorithm === "rsa-sha256" ? "rsa" : "ed25519"}; p=${publicKey}`;
}
