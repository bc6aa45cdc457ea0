import { admin, call, type TestPanel } from "./helpers";

/**
 * A browser's side of web push, written from RFC 8291 and RFC 8188 rather than taken from the
 * Worker: the subscription's keys, and the decryption a browser does of what the push service
 * hands it. The stand-in push service (the loopback receiver) keeps the encrypted body.
 */

const b64url = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
export const fromB64url = (text: string) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "=")), (c) => c.charCodeAt(0));
const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

export interface BrowserKeys {
  privateKey: CryptoKey;
  /** The subscription's `keys` as PushSubscription.toJSON() gives them. */
  p256dh: string;
  auth: string;
}

export async function browserKeys(): Promise<BrowserKeys> {
  const pair = (await crypto.subtle.generateKey({ name: "ECDH", namedCurve: "P-256" }, true, ["deriveBits"])) as CryptoKeyPair;
  const raw = new Uint8Array((await crypto.subtle.exportKey("raw", pair.publicKey)) as ArrayBuffer);
  return { privateKey: pair.privateKey, p256dh: b64url(raw), auth: b64url(crypto.getRandomValues(new Uint8Array(16))) };
}

async function hmac(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, data));
}

const concat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};
const text = (s: string) => new TextEncoder().encode(s);

/** Decrypts an aes128gcm body (base64, as the receiver keeps it) with the browser's keys; returns the plaintext. */
export async function decryptPush(bodyBase64: string, keys: BrowserKeys): Promise<string> {
  const body = fromBase64(bodyBase64);
  const salt = body.slice(0, 16);
  const idLength = body[20]!;
  const serverPublic = body.slice(21, 21 + idLength);
  const ciphertext = body.slice(21 + idLength);
  const serverKey = await crypto.subtle.importKey("raw", serverPublic, { name: "ECDH", namedCurve: "P-256" }, false, []);
  // WebCrypto names the peer's key `public`; workers-types spells the member `$public`.
  const ecdhParams = { name: "ECDH", public: serverKey } as unknown as SubtleCryptoDeriveKeyAlgorithm;
  const ecdh = new Uint8Array(await crypto.subtle.deriveBits(ecdhParams, keys.privateKey, 256));
  const browserPublic = fromB64url(keys.p256dh);
  // RFC 8291 section 3.4: the IKM from the auth secret, then RFC 8188's key and nonce from the salt.
  const prkKey = await hmac(fromB64url(keys.auth), ecdh);
  const ikm = (await hmac(prkKey, concat(text("WebPush: info\0"), browserPublic, serverPublic, new Uint8Array([1])))).slice(0, 32);
  const prk = await hmac(salt, ikm);
  const cek = (await hmac(prk, concat(text("Content-Encoding: aes128gcm\0"), new Uint8Array([1])))).slice(0, 16);
  const nonce = (await hmac(prk, concat(text("Content-Encoding: nonce\0"), new Uint8Array([1])))).slice(0, 12);
  const key = await crypto.subtle.importKey("raw", cek, "AES-GCM", false, ["decrypt"]);
  const padded = new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: nonce }, key, ciphertext));
  let end = padded.length - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (padded[end] !== 2) throw new Error("not the last record: no 0x02 delimiter");
  return new TextDecoder().decode(padded.slice(0, end));
}

/** Checks a VAPID JWT's ES256 signature with the public key (raw point, base64url); returns its claims. */
export async function verifyVapid(authorization: string, publicKey: string): Promise<Record<string, unknown>> {
  const match = /^vapid t=([^,]+), k=(.+)$/.exec(authorization);
  if (!match) throw new Error(`not a vapid header: ${authorization}`);
  const [, jwt, k] = match;
  if (k !== publicKey) throw new Error("k is not the panel's public key");
  const [header, claims, signature] = jwt!.split(".");
  const key = await crypto.subtle.importKey("raw", fromB64url(publicKey), { name: "ECDSA", namedCurve: "P-256" }, false, ["verify"]);
  const ok = await crypto.subtle.verify({ name: "ECDSA", hash: "SHA-256" }, key, fromB64url(signature!), text(`${header}.${claims}`));
  if (!ok) throw new Error("the VAPID signature does not verify");
  if (JSON.parse(new TextDecoder().decode(fromB64url(header!))).alg !== "ES256") throw new Error("VAPID must be ES256");
  return JSON.parse(new TextDecoder().decode(fromB64url(claims!)));
}

/** A Google service account's key file for tests: a fresh RSA key, and the public key to check its JWTs. */
export async function serviceAccount(projectId: string, clientEmail: string): Promise<{ json: Record<string, string>; publicKey: CryptoKey }> {
  const pair = (await crypto.subtle.generateKey(
    { name: "RSASSA-PKCS1-v1_5", modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: "SHA-256" },
    true,
    ["sign", "verify"],
  )) as CryptoKeyPair;
  const pkcs8 = new Uint8Array((await crypto.subtle.exportKey("pkcs8", pair.privateKey)) as ArrayBuffer);
  const pem = `-----BEGIN PRIVATE KEY-----\n${btoa(String.fromCharCode(...pkcs8)).replace(/(.{64})/g, "$1\n")}\n-----END PRIVATE KEY-----\n`;
  return {
    json: { type: "service_account", project_id: projectId, private_key_id: "k1", private_key: pem, client_email: clientEmail, token_uri: "https://oauth2.googleapis.com/token" },
    publicKey: pair.publicKey,
  };
}

/** Checks an RS256 JWT with the public key; returns its claims. */
export async function verifyRs256(jwt: string, publicKey: CryptoKey): Promise<Record<string, unknown>> {
  const [header, claims, signature] = jwt.split(".");
  const ok = await crypto.subtle.verify("RSASSA-PKCS1-v1_5", publicKey, fromB64url(signature!), text(`${header}.${claims}`));
  if (!ok) throw new Error("the JWT signature does not verify");
  return JSON.parse(new TextDecoder().decode(fromB64url(claims!)));
}

/** Web push set up for the panel (VAPID keys made), as the admin's push screen does. */
export async function webPushOn(panel: TestPanel): Promise<void> {
  const put = await admin("PUT", `/panels/${panel.id}/push`, { web_push: { subject: "mailto:ops@shop.example" } });
  if (put.status !== 200) throw new Error(`web push not set up: ${JSON.stringify(put.body)}`);
}

/** A browser (keys of its own) subscribing at `endpoint` for the contact `identity`, as a site's script does; the answer's status. */
export async function subscribeBrowserOf(panel: TestPanel, endpoint: string, identity: string): Promise<number> {
  const keys = await browserKeys();
  const response = await call(`/v1/push/web/${encodeURIComponent(panel.clientId)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ subscription: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } }, identity }),
  });
  return response.status;
}

/** The push screen's figures: [browsers subscribed, app installs registered]. */
export async function pushFigures(panel: TestPanel): Promise<[number, number]> {
  const { web_push, fcm } = (await admin("GET", `/panels/${panel.id}/push`)).body;
  return [web_push.subscriptions, fcm.tokens];
}
