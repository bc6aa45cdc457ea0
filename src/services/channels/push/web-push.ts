import { importJWK, SignJWT } from "jose";
import type { PushPayload } from "../../../domain/push";
import { base64UrlDecode, base64UrlEncode } from "../../../lib/random";
import { callProvider, isRetryableStatus } from "../provider-call";
import type { PushDelivery } from "./delivery";

/**
 * Web push (RFC 8030) with VAPID (RFC 8292): the payload is encrypted for the browser's keys as
 * RFC 8291 says (aes128gcm, one record) on WebCrypto, and padded up to a size bucket (below).
 * The encryption is done here rather than by @block65/webcrypto-web-push because that library
 * pads either to 4096 bytes or not at all; the padding is RFC 8188's (the 0x02 delimiter, then
 * zeros) inside the encrypted record. The VAPID JWT is signed with jose (ES256, as RFC 8292
 * requires).
 */

export interface VapidKeys {
  subject: string;
  /** The uncompressed P-256 point (65 bytes), base64url: the applicationServerKey browsers subscribe with. */
  publicKey: string;
  /** The private scalar `d`, base64url. */
  privateKey: string;
}

export interface WebSubscription {
  endpoint: string;
  p256dh: string;
  auth: string;
}

/** A new VAPID key pair for a panel. */
export async function generateVapidKeys(): Promise<Omit<VapidKeys, "subject">> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])) as CryptoKeyPair;
  const [raw, jwk] = await Promise.all([crypto.subtle.exportKey("raw", pair.publicKey) as Promise<ArrayBuffer>, crypto.subtle.exportKey("jwk", pair.privateKey) as Promise<JsonWebKey>]);
  return { publicKey: base64UrlEncode(new Uint8Array(raw)), privateKey: jwk.d! };
}

/** How long a VAPID token is good for; RFC 8292 allows up to 24 hours. */
const VAPID_TOKEN_SECONDS = 12 * 60 * 60;

/** `Authorization: vapid t=<JWT>, k=<public key>` for the endpoint's push service (its origin is the audience). */
export async function vapidAuthorization(endpoint: string, keys: VapidKeys, now: number): Promise<string> {
  const point = base64UrlDecode(keys.publicKey)!;
  const key = await importJWK({ kty: "EC", crv: "P-256", x: base64UrlEncode(point.slice(1, 33)), y: base64UrlEncode(point.slice(33, 65)), d: keys.privateKey }, "ES256");
  const seconds = Math.floor(now / 1000);
  const jwt = await new SignJWT({})
    .setProtectedHeader({ typ: "JWT", alg: "ES256" })
    .setAudience(new URL(endpoint).origin)
    .setExpirationTime(seconds + VAPID_TOKEN_SECONDS)
    .setSubject(keys.subject)
    .sign(key);
  return `vapid t=${jwt}, k=${keys.publicKey}`;
}

/** How long a push service keeps a message for a browser that is offline. */
const WEB_PUSH_TTL_SECONDS = 4 * 24 * 60 * 60;

/**
 * The sizes a whole encrypted body is padded up to: the smallest that fits the message. Buckets
 * rather than the exact length, so the size tells a push service or an onlooker little of the
 * text; small ones, so an ordinary notification (a few hundred bytes of JSON) travels as 1 KiB.
 * 3070 is the smallest limit a push service is known to set, and 4096 what RFC 8030 asks every
 * push service to take (and the most sent).
 */
export const WEB_PUSH_BODY_BUCKETS = [1024, 2048, 3070, 4096] as const;
/** RFC 8188's header: salt (16), record size (4), key id length (1), the sender's ephemeral P-256 key (65). */
const HEADER_BYTES = 16 + 4 + 1 + 65;
/** Added to the plaintext in the record: the padding delimiter and the AES-GCM tag. */
const RECORD_OVERHEAD = 1 + 16;
/** The `rs` announced; RFC 8291 wants it larger than the one record, which every bucket keeps it. */
const RECORD_SIZE = 4096;

const utf8 = new TextEncoder();

async function hkdf(salt: Uint8Array, secret: BufferSource, info: Uint8Array, bytes: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", secret, "HKDF", false, ["deriveBits"]);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt, info }, key, bytes * 8));
}

/** `plaintext` encrypted for the browser (RFC 8291) as one aes128gcm record, padded so the body is `bodyBytes` long. */
export async function encryptWebPush(subscription: Pick<WebSubscription, "p256dh" | "auth">, plaintext: Uint8Array, bodyBytes: number): Promise<Uint8Array> {
  const browserPublic = base64UrlDecode(subscription.p256dh);
  const authSecret = base64UrlDecode(subscription.auth);
  if (browserPublic?.length !== 65 || authSecret?.length !== 16) throw new Error("the subscription's keys are not a P-256 public key and a 16-byte auth secret");
  if (bodyBytes < plaintext.length + HEADER_BYTES + RECORD_OVERHEAD) throw new Error(`${plaintext.length} bytes do not fit a ${bodyBytes}-byte body`);
  const browserKey = await crypto.subtle.importKey("raw", browserPublic, { name: "ECDH", namedCurve: "P-256" }, false, []);
  const local = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"])) as CryptoKeyPair;
  const localPublic = new Uint8Array((await crypto.subtle.exportKey("raw", local.publicKey)) as ArrayBuffer);
  // WebCrypto names the peer's key `public`; workers-types spells the member `$public`.
  const ecdh = await crypto.subtle.deriveBits({ name: "ECDH", public: browserKey } as unknown as SubtleCryptoDeriveKeyAlgorithm, local.privateKey, 256);
  const keyInfo = new Uint8Array([...utf8.encode("WebPush: info\0"), ...browserPublic, ...localPublic]);
  const ikm = await hkdf(authSecret, ecdh, keyInfo, 32);
  const salt = crypto.getRandomValues(new Uint8Array(16));
  const cek = await hkdf(salt, ikm, utf8.encode("Content-Encoding: aes128gcm\0"), 16);
  const nonce = await hkdf(salt, ikm, utf8.encode("Content-Encoding: nonce\0"), 12);
  // The last (and only) record: the plaintext, the 0x02 delimiter, then zeros up to the size.
  const record = new Uint8Array(bodyBytes - HEADER_BYTES - 16);
  record.set(plaintext);
  record[plaintext.length] = 2;
  const key = await crypto.subtle.importKey("raw", cek, "AES-GCM", false, ["encrypt"]);
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv: nonce }, key, record));
  const body = new Uint8Array(bodyBytes);
  body.set(salt);
  new DataView(body.buffer).setUint32(16, RECORD_SIZE);
  body[20] = localPublic.length;
  body.set(localPublic, 21);
  body.set(sealed, HEADER_BYTES);
  return body;
}

type Attempt = PushDelivery | { tooLarge: true; text: string };

/**
 * Sends one message to one browser; 201 (or any 2xx) is taken, 404/410 mean the subscription is
 * gone. The body is padded to the smallest bucket that fits; a push service that refuses it as
 * too large (413) gets it once more unpadded, and a second 413 fails the message for good.
 */
export async function sendWebPush(subscription: WebSubscription, payload: PushPayload, keys: VapidKeys, now: number): Promise<PushDelivery> {
  const plaintext = utf8.encode(JSON.stringify(payload));
  const exact = plaintext.length + HEADER_BYTES + RECORD_OVERHEAD;
  const bucket = WEB_PUSH_BODY_BUCKETS.find((size) => size >= exact);
  const failed = (error: string): PushDelivery => ({ ok: false, gone: false, retryable: false, error });
  if (bucket === undefined) {
    return failed(`the message is ${exact} bytes encrypted, more than the ${WEB_PUSH_BODY_BUCKETS.at(-1)} every push service takes; shorten its title or text`);
  }
  let authorization: string;
  try {
    authorization = await vapidAuthorization(subscription.endpoint, keys, now);
  } catch (error) {
    return failed(`the VAPID header could not be signed: ${error instanceof Error ? error.message : String(error)}`);
  }
  const attempt = async (bodyBytes: number): Promise<Attempt> => {
    let body: Uint8Array;
    try {
      body = await encryptWebPush(subscription, plaintext, bodyBytes);
    } catch (error) {
      return failed(`the message could not be encrypted for this subscription: ${error instanceof Error ? error.message : String(error)}`);
    }
    const called = await callProvider("the push service", subscription.endpoint, {
      method: "POST",
      headers: { authorization, ttl: String(WEB_PUSH_TTL_SECONDS), urgency: "normal", "content-encoding": "aes128gcm", "content-type": "application/octet-stream" },
      body,
    });
    if (!called.ok) return { ...called, gone: false };
    const { response, text } = called;
    if (response.ok) return { ok: true, id: response.headers.get("location") ?? subscription.endpoint };
    if (response.status === 413) return { tooLarge: true, text };
    const gone = response.status === 404 || response.status === 410;
    return { ok: false, gone, retryable: !gone && isRetryableStatus(response.status), error: `the push service answered ${response.status}: ${text.slice(0, 300)}` };
  };
  const padded = await attempt(bucket);
  if (!("tooLarge" in padded)) return padded;
  // A 413 means the message was not taken, so sending it again smaller cannot make it twice.
  if (exact === bucket) return failed(`the push service refused the message as too large (413) at ${bucket} bytes, its size unpadded: ${padded.text.slice(0, 300)}`);
  const unpadded = await attempt(exact);
  if (!("tooLarge" in unpadded)) return unpadded;
  return failed(`the push service refused the message as too large (413) at ${bucket} bytes padded and at ${exact} bytes unpadded; shorten its title or text: ${unpadded.text.slice(0, 300)}`);
}
