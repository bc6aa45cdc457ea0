import { readAtMost } from "./bytes";

/**
 * Reads a zip archive with a bound on what it inflates to. The sizes an archive states are
 * claims, not facts (a 1 MB zip can claim 1,000 bytes and inflate to gigabytes), so each entry
 * is inflated as a stream (the runtime's DecompressionStream) and the bytes actually produced
 * are counted; the read stops as soon as the total passes the limit. The entries are inflated
 * inside the request because every rule about the files must hold before anything is written;
 * the streaming inflate yields to the isolate's other requests every megabyte, so no request
 * waits on it for more than a moment.
 */

export interface ZipEntry {
  /** The path inside the archive. */
  path: string;
  bytes: Uint8Array;
}

export type UnzipOutcome =
  | { ok: true; entries: ZipEntry[] }
  | { ok: false; kind: "too_large" | "unreadable" | "refused"; message: string };

export interface UnzipOptions {
  /** Largest total of the inflated entries, in bytes. */
  limit: number;
  /** Entries left out (folders, system files); they are neither inflated nor counted. */
  skip?(path: string): boolean;
  /** Why an entry may not be in the archive at all (checked before anything is inflated); null when it may. */
  refuse?(path: string): string | null;
}

const YIELD_EVERY_BYTES = 1024 * 1024;
const EOCD = 0x06054b50;
const EOCD64_LOCATOR = 0x07064b50;
const EOCD64 = 0x06064b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
const MAX_32 = 0xffffffff;

class Unreadable extends Error {}

interface CentralEntry {
  path: string;
  method: number;
  encrypted: boolean;
  compressedSize: number;
  localOffset: number;
}

function decodeName(bytes: Uint8Array, utf8: boolean): string {
  if (utf8) return new TextDecoder().decode(bytes);
  let name = "";
  for (const byte of bytes) name += String.fromCharCode(byte);
  return name;
}

function uint64(view: DataView, at: number): number {
  return view.getUint32(at, true) + view.getUint32(at + 4, true) * 2 ** 32;
}

function endOfCentralDirectory(view: DataView): { count: number; offset: number } {
  // The record is 22 bytes, followed by a comment of at most 65,535 bytes.
  const lowest = Math.max(0, view.byteLength - 22 - 0xffff);
  for (let at = view.byteLength - 22; at >= lowest; at--) {
    if (view.getUint32(at, true) !== EOCD) continue;
    let count = view.getUint16(at + 10, true);
    let offset = view.getUint32(at + 16, true);
    if ((count === 0xffff || offset === MAX_32) && at >= 20 && view.getUint32(at - 20, true) === EOCD64_LOCATOR) {
      const record = uint64(view, at - 12);
      if (record + 56 > view.byteLength || view.getUint32(record, true) !== EOCD64) throw new Unreadable("its zip64 directory is damaged");
      count = uint64(view, record + 32);
      offset = uint64(view, record + 48);
    }
    return { count, offset };
  }
  throw new Unreadable("it has no central directory");
}

/** Sizes and offsets a zip64 entry keeps in its extra field (id 1) when the 32-bit field holds 0xFFFFFFFF. */
function zip64Values(view: DataView, extraStart: number, extraEnd: number, wanted: { uncompressed: boolean; compressed: boolean; offset: boolean }) {
  for (let at = extraStart; at + 4 <= extraEnd; ) {
    const id = view.getUint16(at, true);
    const size = view.getUint16(at + 2, true);
    if (id === 1) {
      let field = at + 4;
      const next = () => {
        if (field + 8 > at + 4 + size) throw new Unreadable("an entry's zip64 sizes are damaged");
        const value = uint64(view, field);
        field += 8;
        return value;
      };
      const uncompressed = wanted.uncompressed ? next() : undefined;
      return { uncompressed, compressed: wanted.compressed ? next() : undefined, offset: wanted.offset ? next() : undefined };
    }
    at += 4 + size;
  }
  throw new Unreadable("an entry's zip64 sizes are missing");
}

function centralDirectory(zip: Uint8Array): CentralEntry[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const { count, offset } = endOfCentralDirectory(view);
  const entries: CentralEntry[] = [];
  let at = offset;
  for (let i = 0; i < count; i++) {
    if (at + 46 > zip.byteLength || view.getUint32(at, true) !== CENTRAL) throw new Unreadable("its central directory is damaged");
    const flags = view.getUint16(at + 8, true);
    const nameLength = view.getUint16(at + 28, true);
    const extraLength = view.getUint16(at + 30, true);
    const commentLength = view.getUint16(at + 32, true);
    const end = at + 46 + nameLength + extraLength;
    if (end + commentLength > zip.byteLength) throw new Unreadable("its central directory is damaged");
    let compressedSize = view.getUint32(at + 20, true);
    let localOffset = view.getUint32(at + 42, true);
    const uncompressed32 = view.getUint32(at + 24, true);
    if (compressedSize === MAX_32 || localOffset === MAX_32 || uncompressed32 === MAX_32) {
      const wide = zip64Values(view, at + 46 + nameLength, end, {
        uncompressed: uncompressed32 === MAX_32,
        compressed: compressedSize === MAX_32,
        offset: localOffset === MAX_32,
      });
      compressedSize = wide.compressed ?? compressedSize;
      localOffset = wide.offset ?? localOffset;
    }
    entries.push({
      path: decodeName(zip.subarray(at + 46, at + 46 + nameLength), (flags & 0x800) !== 0),
      method: view.getUint16(at + 10, true),
      encrypted: (flags & 1) !== 0,
      compressedSize,
      localOffset,
    });
    at = end + commentLength;
  }
  return entries;
}

/** The entry's stored bytes, found through its local header (whose name and extra lengths may differ from the directory's). */
function storedBytes(zip: Uint8Array, entry: CentralEntry): Uint8Array {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const at = entry.localOffset;
  if (at + 30 > zip.byteLength || view.getUint32(at, true) !== LOCAL) throw new Unreadable(`the entry ${entry.path} is damaged`);
  const start = at + 30 + view.getUint16(at + 26, true) + view.getUint16(at + 28, true);
  if (start + entry.compressedSize > zip.byteLength) throw new Unreadable(`the entry ${entry.path} is cut short`);
  return zip.subarray(start, start + entry.compressedSize);
}

/** Inflates raw DEFLATE data, stopping once it produced more than `limit` bytes: null then. */
async function inflateAtMost(data: Uint8Array, limit: number, path: string): Promise<Uint8Array | null> {
  const stream = new Response(data).body!.pipeThrough(new DecompressionStream("deflate-raw"));
  try {
    return await readAtMost(stream, limit, { yieldEvery: YIELD_EVERY_BYTES });
  } catch (error) {
    throw new Unreadable(`the entry ${path} does not inflate: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export async function unzipAtMost(zip: Uint8Array, options: UnzipOptions): Promise<UnzipOutcome> {
  const tooLarge = (): UnzipOutcome => ({ ok: false, kind: "too_large", message: `inflates to more than the ${options.limit}-byte limit` });
  try {
    const wanted = centralDirectory(zip).filter((entry) => !options.skip?.(entry.path));
    for (const entry of wanted) {
      const refusal = options.refuse?.(entry.path) ?? null;
      if (refusal !== null) return { ok: false, kind: "refused", message: refusal };
      if (entry.encrypted) return { ok: false, kind: "unreadable", message: `the entry ${entry.path} is encrypted` };
      if (entry.method !== 0 && entry.method !== 8) {
        return { ok: false, kind: "unreadable", message: `the entry ${entry.path} uses compression method ${entry.method}; only stored and deflate are read` };
      }
    }
    const entries: ZipEntry[] = [];
    let total = 0;
    for (const entry of wanted) {
      const stored = storedBytes(zip, entry);
      const bytes = entry.method === 0 ? (stored.byteLength <= options.limit - total ? stored : null) : await inflateAtMost(stored, options.limit - total, entry.path);
      if (bytes === null) return tooLarge();
      total += bytes.byteLength;
      entries.push({ path: entry.path, bytes });
    }
    return { ok: true, entries };
  } catch (error) {
    if (error instanceof Unreadable) return { ok: false, kind: "unreadable", message: error.message };
    throw error;
  }
}
