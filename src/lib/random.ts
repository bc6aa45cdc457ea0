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

/**
 * `byteLength` random bytes as hex: ids, leases and claims (every request takes two, its id and
 * its span's). Drawn from randomPool and written as character codes in one call: with a
 * getRandomValues call and a joined string each, they were about 1% of a contact add's isolate
 * samples (bench:profile).
 */
export function randomHex(byteLength: number): string {
  if (byteLength > RANDOM_POOL_BYTES) return toHex(randomBytes(byteLength));
  const at = pooledRandomOffset(byteLength);
  const codes = new Array<number>(byteLength * 2);
  for (let i = 0; i < byteLength; i++) {
    const byte = randomPool[at + i]!;
    codes[2 * i] = HEX_CODES[byte >> 4]!;
    codes[2 * i + 1] = HEX_CODES[byte & 15]!;
  }
  return String.fromCharCode.apply(null, codes);
}

/** `length` random characters of the readable base32 alphabet (5 bits each). */
export function randomBase32(length: number): string {
  let out = "";
  for (const byte of randomBytes(length)) out += BASE32[byte & 31]!;
  return out;
}

/** A short random id with a type prefix, e.g. `pnl_3k9x...`, for objects addressed by admin routes. */
export function newId(prefix: string, length = 16): string {
  return `${prefix}_${randomBase32(length)}`;
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

const HEX_CODES = Array.from(HEX, (digit) => digit.charCodeAt(0));
const DASH = 45;
/** The character codes of the next uuidV7, reused: one array for every call. */
const uuidCodes = new Array<number>(36).fill(0);
/** The time part of the last uuidV7 (its first 15 characters), kept: a batch makes all its guids with one `now`. */
let lastTime = { now: Number.NaN, codes: [] as number[] };

/** Writes the two hex digits of `byte` at `at` of uuidCodes. */
function putHexByte(at: number, byte: number): void {
  uuidCodes[at] = HEX_CODES[byte >> 4]!;
  uuidCodes[at + 1] = HEX_CODES[byte & 15]!;
}

/**
 * A UUIDv7 (RFC 9562): a 48-bit millisecond timestamp, then random bits. Ids made later sort
 * later, so an index over them grows at its end instead of at random pages. Made from
 * character codes in one call: text joined from pieces is a tree the JSON of its batch has to
 * flatten again, a good part of recording a batch's CPU (bench:profile).
 */
export function uuidV7(now = Date.now()): string {
  if (lastTime.now !== now) {
    const time = Math.floor(now).toString(16).padStart(12, "0");
    lastTime = { now, codes: Array.from(`${time.slice(0, 8)}-${time.slice(8, 12)}-7`, (c) => c.charCodeAt(0)) };
  }
  const at = pooledRandomOffset(10);
  const r = randomPool;
  for (let i = 0; i < 15; i++) uuidCodes[i] = lastTime.codes[i]!;
  uuidCodes[15] = HEX_CODES[r[at]! & 15]!;
  putHexByte(16, r[at + 1]!);
  uuidCodes[18] = DASH;
  // Variant 0b10 in the top bits of the 17th hex digit (version 7 is in the time part above).
  putHexByte(19, (r[at + 2]! & 0x3f) | 0x80);
  putHexByte(21, r[at + 3]!);
  uuidCodes[23] = DASH;
  for (let i = 0; i < 6; i++) putHexByte(24 + 2 * i, r[at + 4 + i]!);
  return String.fromCharCode.apply(null, uuidCodes);
}
