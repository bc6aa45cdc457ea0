/**
 * A panel's contact-keyed data is split by a hash of the contact into buckets, and buckets
 * into partitions, each on one shard (decision 0038). No I/O here: the bucket of a key and
 * the rules a partition map must keep.
 */

/** Buckets per panel: a panel can be split into at most this many partitions. */
export const BUCKETS = 4096;
export const LAST_BUCKET = BUCKETS - 1;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

/**
 * FNV-1a, 32 bits, over the UTF-8 bytes of `text`. Encoded by hand rather than through
 * TextEncoder: it runs once per contact written and per event recorded, and needs no buffer.
 */
export function fnv1a32(text: string): number {
  return fnvOver(FNV_OFFSET, text) >>> 0;
}

/**
 * The FNV-1a state after `text`'s UTF-8 bytes, from `hash` (the hash is a running one, so a
 * common prefix's state can be kept). Each byte is folded in line: an import spent a sixth of
 * its CPU here with a closure per byte (bench:profile, PROFILE=import).
 */
function fnvOver(hash: number, text: string): number {
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    if (code < 0x80) {
      hash = Math.imul(hash ^ code, FNV_PRIME);
      continue;
    }
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        i++;
      }
    }
    // A lone surrogate is encoded as U+FFFD, as TextEncoder does.
    if (code >= 0xd800 && code <= 0xdfff) code = 0xfffd;
    if (code < 0x800) {
      hash = Math.imul(hash ^ (0xc0 | (code >> 6)), FNV_PRIME);
    } else {
      if (code < 0x10000) {
        hash = Math.imul(hash ^ (0xe0 | (code >> 12)), FNV_PRIME);
      } else {
        hash = Math.imul(hash ^ (0xf0 | (code >> 18)), FNV_PRIME);
        hash = Math.imul(hash ^ (0x80 | ((code >> 12) & 0x3f)), FNV_PRIME);
      }
      hash = Math.imul(hash ^ (0x80 | ((code >> 6) & 0x3f)), FNV_PRIME);
    }
    hash = Math.imul(hash ^ (0x80 | (code & 0x3f)), FNV_PRIME);
  }
  return hash;
}

/**
 * The bucket of a contact of a panel: `key` is the contact's primary-key value (`pk_value`),
 * or an anonymous profile's uniqueid. The panel id is hashed in, so two panels' keys spread
 * differently over the same shards.
 */
export function contactBucket(panelId: string, key: string): number {
  return (fnvOver(panelPrefixState(panelId), key) >>> 0) % BUCKETS;
}

// The hash state after `panel:` of the last panel asked: an import's or a batch's keys are all
// one panel's, and the prefix is about half of what each key's hash would read.
let prefixPanel: string | null = null;
let prefixState = 0;

function panelPrefixState(panelId: string): number {
  if (panelId !== prefixPanel) {
    prefixState = fnvOver(FNV_OFFSET, `${panelId}:`);
    prefixPanel = panelId;
  }
  return prefixState;
}

export type PartitionState = "active" | "moving";

/** One partition of a panel: buckets first..last (inclusive) live on the shard numbered `shard` (SHARD_n). */
export interface Partition {
  firstBucket: number;
  lastBucket: number;
  shard: number;
  state: PartitionState;
}

/** Ranges of buckets, [first, last] inclusive, in bucket order. */
export type BucketRanges = ReadonlyArray<readonly [number, number]>;

/** The bucket ranges of the partitions on `shard` (none: an empty list), in bucket order. */
export function bucketRangesOn(partitions: readonly Partition[], shard: number): BucketRanges {
  return partitions
    .filter((p) => p.shard === shard)
    .sort((a, b) => a.firstBucket - b.firstBucket)
    .map((p) => [p.firstBucket, p.lastBucket] as const);
}

/** Whether `bucket` lies in one of `ranges`. */
export function inRanges(ranges: BucketRanges, bucket: number): boolean {
  return ranges.some(([first, last]) => first <= bucket && bucket <= last);
}

/** The map of a panel made before partitions (no rows): one partition of every bucket, on its home shard. */
export function wholePanelPartition(shard: number): Partition[] {
  return [{ firstBucket: 0, lastBucket: LAST_BUCKET, shard, state: "active" }];
}

/**
 * Why a panel's partitions are not a valid map, or null: the ranges are whole buckets within
 * 0..4095, first ≤ last, and together cover every bucket exactly once.
 */
export function partitionMapProblem(partitions: readonly Partition[]): string | null {
  if (partitions.length === 0) return "a panel has at least one partition";
  const sorted = [...partitions].sort((a, b) => a.firstBucket - b.firstBucket);
  let next = 0;
  for (const p of sorted) {
    const range = `${p.firstBucket}–${p.lastBucket}`;
    if (!Number.isInteger(p.firstBucket) || !Number.isInteger(p.lastBucket)) return `buckets ${range} are not whole numbers`;
    if (p.firstBucket < 0 || p.lastBucket > LAST_BUCKET) return `buckets ${range} fall outside 0–${LAST_BUCKET}`;
    if (p.firstBucket > p.lastBucket) return `buckets ${range} end before they start`;
    if (p.firstBucket < next) return `buckets ${range} overlap the partition before (which ends at ${next - 1})`;
    if (p.firstBucket > next) return `buckets ${next}–${p.firstBucket - 1} are in no partition`;
    if (!Number.isInteger(p.shard) || p.shard < 0) return `buckets ${range} name no shard (${p.shard})`;
    next = p.lastBucket + 1;
  }
  if (next <= LAST_BUCKET) return `buckets ${next}–${LAST_BUCKET} are in no partition`;
  return null;
}

/** The partition holding `bucket` (the map is valid: exactly one does). */
export function partitionOfBucket<P extends Partition>(partitions: readonly P[], bucket: number): P {
  const found = partitions.find((p) => p.firstBucket <= bucket && bucket <= p.lastBucket);
  if (!found) throw new Error(`no partition holds bucket ${bucket}`);
  return found;
}

/** One partition per shard, of (nearly) equal bucket ranges, in order: how a panel is laid out across shards. */
export function evenPartitions(shards: readonly number[]): Partition[] {
  const n = shards.length;
  return shards.map((shard, i) => ({
    firstBucket: Math.floor((i * BUCKETS) / n),
    lastBucket: Math.floor(((i + 1) * BUCKETS) / n) - 1,
    shard,
    state: "active",
  }));
}
