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

/**
 * A UUIDv7 (RFC 9562): a 48-bit millisecond timestamp, then random bits. Ids made later sort
 * later, so an index over them grows at its end instead of at random pages.
 */
export function uuidV7(now = Date.now()): string {
  const bytes = randomBytes(16);
  let time = now;
  for (let i = 5; i >= 0; i--) {
    bytes[i] = time % 256;
    time = Math.floor(time / 256);
  }
  bytes[6] = (bytes[6]! & 0x0f) | 0x70;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = toHex(bytes);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
