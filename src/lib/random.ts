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

/** The bytes of base64url text (padding optional); null when it is not base64url. */
export function base64UrlDecode(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(text.length / 4) * 4, "="));
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return null;
  }
}

const BYTE_HEX = Array.from({ length: 256 }, (_, byte) => HEX[byte >> 4]! + HEX[byte & 15]!);
const RANDOM_POOL_BYTES = 4096;
let randomPool = new Uint8Array(0);
let randomPoolOffset = 0;

/**
 * Where `length` random bytes start in randomPool, which is refilled 4 KiB at a time: one
 * getRandomValues call per ~400 guids instead of one each (a 1,000-event batch generates
 * 1,000), and no view allocated per guid. Bytes are never handed out twice.
 */
function pooledRandomOffset(length: number): number {
  if (randomPoolOffset + length > randomPool.length) {
    randomPool = crypto.getRandomValues(new Uint8Array(RANDOM_POOL_BYTES));
    randomPoolOffset = 0;
  }
  const at = randomPoolOffset;
  randomPoolOffset += length;
  return at;
}

/** The time part of the last uuidV7, kept: a batch makes all its guids with one `now`. */
let lastTime = { now: Number.NaN, text: "" };

/**
 * A UUIDv7 (RFC 9562): a 48-bit millisecond timestamp, then random bits. Ids made later sort
 * later, so an index over them grows at its end instead of at random pages.
 */
export function uuidV7(now = Date.now()): string {
  if (lastTime.now !== now) {
    const time = Math.floor(now).toString(16).padStart(12, "0");
    lastTime = { now, text: `${time.slice(0, 8)}-${time.slice(8, 12)}-7` };
  }
  const at = pooledRandomOffset(10);
  const r = randomPool;
  const hex = (i: number) => BYTE_HEX[r[at + i]!]!;
  // Version 7 in the 13th hex digit, variant 0b10 in the top bits of the 17th.
  return (
    `${lastTime.text}${HEX[r[at]! & 15]}${hex(1)}-${BYTE_HEX[(r[at + 2]! & 0x3f) | 0x80]}${hex(3)}-` +
    `${hex(4)}${hex(5)}${hex(6)}${hex(7)}${hex(8)}${hex(9)}`
  );
}
