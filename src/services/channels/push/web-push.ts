import { encryptNotification } from "@block65/webcrypto-web-push";
import { importJWK, SignJWT } from "jose";
import type { PushPayload } from "../../../domain/push";
import { base64UrlDecode, base64UrlEncode } from "../../../lib/random";
import { callProvider, isRetryableStatus } from "../provider-call";
import type { PushDelivery } from "./delivery";

/**
 * Web push (RFC 8030) with VAPID (RFC 8292): the payload is encrypted for the browser's keys as
 * RFC 8291 says (aes128gcm, padded to one 4096-byte record) by @block65/webcrypto-web-push,
 * which runs on WebCrypto in workerd. Its VAPID header refuses http endpoints, which the local
 * stand-ins are, so the VAPID JWT is signed here with jose (ES256, as RFC 8292 requires).
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

/** Sends one message to one browser; 201 (or any 2xx) is taken, 404/410 mean the subscription is gone. */
export async function sendWebPush(subscription: WebSubscription, payload: PushPayload, keys: VapidKeys, now: number): Promise<PushDelivery> {
  let body: Uint8Array;
  let authorization: string;
  try {
    body = await encryptNotification({ endpoint: subscription.endpoint, expirationTime: null, keys: { p256dh: subscription.p256dh, auth: subscription.auth } }, new TextEncoder().encode(JSON.stringify(payload)));
    authorization = await vapidAuthorization(subscription.endpoint, keys, now);
  } catch (error) {
    return { ok: false, gone: false, retryable: false, error: `the message could not be encrypted for this subscription: ${error instanceof Error ? error.message : String(error)}` };
  }
  const called = await callProvider("the push service", subscription.endpoint, {
    method: "POST",
    headers: { authorization, ttl: String(WEB_PUSH_TTL_SECONDS), urgency: "normal", "content-encoding": "aes128gcm", "content-type": "application/octet-stream" },
    body,
  });
  if (!called.ok) return { ...called, gone: false };
  const { response, text } = called;
  if (response.ok) return { ok: true, id: response.headers.get("location") ?? subscription.endpoint };
  const gone = response.status === 404 || response.status === 410;
  return { ok: false, gone, retryable: !gone && isRetryableStatus(response.status), error: `the push service answered ${response.status}: ${text.slice(0, 300)}` };
}
