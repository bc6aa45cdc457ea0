const HEX = "0123456789abcdef";
// Crockford base32 without the ambiguous I, L, O, U: ids stay readable when spoken or copied.
const BASE32 = "0123456789abcdefghjkmnpqrstvwxyz";

function randomBytes(length: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(length));
}

export function toHex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += HEX[byte >> 4]! + HEX[byte & 15]!;
  return out;
}

export function randomHex(byteLength: number): string {
  return toHex(randomBytes(byteLength));
}

/** A short random id with a type prefix, e.g. `pnl_3k9x...`, for objects addressed by admin routes. */
export function newId(prefix: string, length = 16): string {
  let out = "";
  for (const byte of randomBytes(length)) out += BASE32[byte & 31]!;
  return `${prefix}_${out}`;
}

export function randomBase64Url(byteLength: number): string {
  return base64UrlEncode(randomBytes(byteLength));
}

export function base64UrlEncode(bytes: Uint8Array): string {
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
