import { importX509 } from "jose";
import { readAtMost } from "../../../lib/bytes";
import { TtlCache } from "../../../lib/ttl-cache";

/**
 * Amazon SNS's side of the SES bounce endpoint: which URLs are SNS's, and whether a message was
 * signed by SNS (https://docs.aws.amazon.com/sns/latest/dg/sns-verify-signature-of-message.html).
 * The path secret alone let anyone who learnt it post bounces and complaints that suppress a
 * panel's audience; a signature needs SNS's private key.
 */

/** SNS's own hosts. */
const SNS_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/;

/**
 * Whether `url` is SNS's: https on one of SNS's own hosts, or, when `origin` is set (tests: a
 * local stand-in of SNS), on that origin and nowhere else. The one rule for the SubscribeURL that
 * is followed and the SigningCertURL that is trusted.
 */
export function isSnsUrl(url: string, origin: string | undefined): boolean {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.username || parsed.password) return false;
  if (origin !== undefined) return parsed.origin === origin;
  return parsed.protocol === "https:" && SNS_HOST.test(parsed.hostname) && parsed.port === "";
}

/** The fields each type of message signs, in the order signed (AWS: "Verifying the signature"). */
const SIGNED_FIELDS: Record<string, ReadonlyArray<{ name: string; optional?: boolean }>> = {
  Notification: [{ name: "Message" }, { name: "MessageId" }, { name: "Subject", optional: true }, { name: "Timestamp" }, { name: "TopicArn" }, { name: "Type" }],
  SubscriptionConfirmation: [{ name: "Message" }, { name: "MessageId" }, { name: "SubscribeURL" }, { name: "Timestamp" }, { name: "Token" }, { name: "TopicArn" }, { name: "Type" }],
  UnsubscribeConfirmation: [{ name: "Message" }, { name: "MessageId" }, { name: "SubscribeURL" }, { name: "Timestamp" }, { name: "Token" }, { name: "TopicArn" }, { name: "Type" }],
};

/**
 * The string SNS signed: "Name\nvalue\n" for each signed field of the message's Type, values as
 * JSON decoded them. Null when the Type is not SNS's or a field it signs is missing. A Subject
 * of null (as Lambda shows it) is absent.
 */
export function snsStringToSign(message: Record<string, unknown>): string | null {
  const fields = typeof message.Type === "string" && Object.hasOwn(SIGNED_FIELDS, message.Type) ? SIGNED_FIELDS[message.Type]! : null;
  if (!fields) return null;
  let text = "";
  for (const { name, optional } of fields) {
    const value = message[name];
    if (typeof value === "string") text += `${name}\n${value}\n`;
    else if (!(optional && (value === undefined || value === null))) return null;
  }
  return text;
}

/** The hash of each SignatureVersion: 1 is RSA PKCS#1 v1.5 with SHA-1, 2 with SHA-256. */
const HASHES = { "1": "SHA-1", "2": "SHA-256" } as const;
type SnsHash = (typeof HASHES)[keyof typeof HASHES];

/**
 * Verified; refused (no signature, a wrong one, an unknown version, a certificate from anywhere
 * but SNS: the sender is not SNS, and a retry changes nothing); or unverifiable (the certificate
 * could not be fetched or read: SNS's trouble or the network's, and SNS retries what it gets no
 * 2xx for).
 */
export type SnsVerdict = { ok: true } | { ok: false; kind: "refused" | "unverifiable"; reason: string };

const refused = (reason: string): SnsVerdict => ({ ok: false, kind: "refused", reason });

export async function verifySnsMessage(message: Record<string, unknown>, origin: string | undefined, now = Date.now()): Promise<SnsVerdict> {
  const version = message.SignatureVersion;
  const hash = typeof version === "string" && Object.hasOwn(HASHES, version) ? HASHES[version as keyof typeof HASHES] : null;
  if (!hash) return refused(`SignatureVersion ${JSON.stringify(version ?? null)} is not 1 or 2`);
  const signed = snsStringToSign(message);
  if (signed === null) return refused(`a field the ${String(message.Type)} signs is missing`);
  const signature = typeof message.Signature === "string" ? fromBase64(message.Signature) : null;
  if (!signature?.length) return refused("Signature is missing or not base64");
  const certUrl = message.SigningCertURL;
  if (typeof certUrl !== "string" || !isSnsUrl(certUrl, origin) || !new URL(certUrl).pathname.endsWith(".pem")) {
    return refused("SigningCertURL is not an Amazon SNS certificate (.pem) URL");
  }
  const keys = await signingKeys(certUrl, now);
  if (!keys.ok) return { ok: false, kind: "unverifiable", reason: keys.reason };
  const valid = await crypto.subtle.verify("RSASSA-PKCS1-v1_5", keys.keys[hash], signature, new TextEncoder().encode(signed));
  return valid ? { ok: true } : refused("the signature does not match the message");
}

function fromBase64(text: string): Uint8Array | null {
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

type SigningKeys = Record<SnsHash, CryptoKey>;

// SNS signs with one certificate per region for months, and a new one gets a new URL, so a
// burst of notifications fetches it once per isolate. An hour bounds how long a certificate
// replaced at the same URL is still trusted; failures are not kept.
const CERT_TTL_MS = 60 * 60_000;
const signingKeyCache = new TtlCache<SigningKeys>(CERT_TTL_MS, 32);
const CERT_TIMEOUT_MS = 10_000;
/** A certificate is about 2 KiB; anything far larger is not one. */
const MAX_CERT_BYTES = 64 * 1024;

/**
 * The public key of the certificate at `url`, imported for both hashes. Fetched without
 * following redirects (only what SNS's host itself serves is trusted) within 10 s. The chain is
 * not checked: https to SNS's own host is what vouches for the certificate, as in AWS's own
 * validators.
 */
async function signingKeys(url: string, now: number): Promise<{ ok: true; keys: SigningKeys } | { ok: false; reason: string }> {
  const cached = signingKeyCache.get(url, now);
  if (cached) return { ok: true, keys: cached };
  let pem: string;
  try {
    const response = await fetch(url, { redirect: "manual", signal: AbortSignal.timeout(CERT_TIMEOUT_MS) });
    if (!response.ok) {
      await response.body?.cancel();
      return { ok: false, reason: `the signing certificate could not be fetched (HTTP ${response.status})` };
    }
    const bytes = await readAtMost(response.body, MAX_CERT_BYTES);
    if (!bytes) return { ok: false, reason: "the signing certificate is too large" };
    pem = new TextDecoder().decode(bytes).trim();
  } catch (error) {
    return { ok: false, reason: `the signing certificate could not be fetched (${error instanceof Error ? error.message : String(error)})` };
  }
  let keys: SigningKeys;
  try {
    // jose reads the X.509 DER for its SubjectPublicKeyInfo and refuses a key that is not RSA;
    // it imports for SHA-256 only, so the SHA-1 key is imported again from the same SPKI.
    const sha256 = await importX509(pem, "RS256", { extractable: true });
    const spki = await crypto.subtle.exportKey("spki", sha256);
    const sha1 = await crypto.subtle.importKey("spki", spki, { name: "RSASSA-PKCS1-v1_5", hash: "SHA-1" }, false, ["verify"]);
    keys = { "SHA-1": sha1, "SHA-256": sha256 };
  } catch (error) {
    return { ok: false, reason: `the signing certificate could not be read (${error instanceof Error ? error.message : String(error)})` };
  }
  signingKeyCache.set(url, keys, now);
  return { ok: true, keys };
}
