import { toHex } from "./random";

const encoder = new TextEncoder();

export async function sha256Hex(text: string): Promise<string> {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(text))));
}

/** Compares two strings without leaking, through timing, where they first differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  if (left.byteLength !== right.byteLength) {
    // Still spend the comparison so a length mismatch is not faster than a content mismatch.
    crypto.subtle.timingSafeEqual(left, left);
    return false;
  }
  return crypto.subtle.timingSafeEqual(left, right);
}

/** The isolate's imported SECRETS_KEY: importing it was a tenth of a form submission's CPU. */
let aesKey: { base64: string; key: Promise<CryptoKey> } | undefined;

function importAesKey(base64Key: string): Promise<CryptoKey> {
  if (aesKey?.base64 !== base64Key) aesKey = { base64: base64Key, key: importAesKeyNow(base64Key) };
  return aesKey.key;
}

async function importAesKeyNow(base64Key: string): Promise<CryptoKey> {
  const raw = Uint8Array.from(atob(base64Key), (c) => c.charCodeAt(0));
  if (raw.byteLength !== 32) throw new Error("SECRETS_KEY must be 32 bytes, base64-encoded");
  return crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
}

/** Encrypts a secret for storage: base64 of a 12-byte IV followed by the AES-GCM ciphertext. */
export async function encryptSecret(base64Key: string, plaintext: string): Promise<string> {
  const key = await importAesKey(base64Key);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, encoder.encode(plaintext)));
  const out = new Uint8Array(iv.byteLength + sealed.byteLength);
  out.set(iv);
  out.set(sealed, iv.byteLength);
  let binary = "";
  for (const byte of out) binary += String.fromCharCode(byte);
  return btoa(binary);
}

export async function decryptSecret(base64Key: string, stored: string): Promise<string> {
  const key = await importAesKey(base64Key);
  const bytes = Uint8Array.from(atob(stored), (c) => c.charCodeAt(0));
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.subarray(0, 12) }, key, bytes.subarray(12));
  return new TextDecoder().decode(plain);
}

/**
 * PBKDF2-SHA-256 iterations for operator passwords: the most Workers' WebCrypto accepts (it
 * refuses counts above 100,000), about 40 ms of CPU per sign-in.
 */
export const PASSWORD_ITERATIONS = 100_000;

function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary);
}

async function pbkdf2(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, ["deriveBits"]);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt, iterations }, key, 256));
}

/** A stored password: `pbkdf2-sha256$<iterations>$<salt base64>$<hash base64>`. */
export async function hashPassword(password: string): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  return `pbkdf2-sha256$${PASSWORD_ITERATIONS}$${toBase64(salt)}$${toBase64(await pbkdf2(password, salt, PASSWORD_ITERATIONS))}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, iterations, salt, hash] = stored.split("$");
  if (scheme !== "pbkdf2-sha256" || !iterations || !salt || !hash) return false;
  const derived = await pbkdf2(password, Uint8Array.from(atob(salt), (c) => c.charCodeAt(0)), Number(iterations));
  return constantTimeEqual(toBase64(derived), hash);
}
