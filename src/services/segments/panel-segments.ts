import type { ShardDb } from "../../store/shards";
import { TtlCache } from "../../lib/ttl-cache";
import { conditionsOf, type SegmentNode } from "../../domain/segments";
import type { SegmentCatalog } from "../../store/segment-sql";
import { listSegments, loadSegmentCatalog, type Segment } from "../../store/segments";

/**
 * The saved segments of a panel, as an isolate last read them. Every contact write and every
 * event batch asks which segments the change concerns; a panel without segments, the common
 * case, then costs no D1 read. Freshness is the API-key cache's rule (decision 0006, 10 s): a
 * segment saved or deleted through another isolate is seen here within that time, in the
 * isolate that changed it at once (forgetPanelSegments). A stale definition changes nothing:
 * membership statements only act for the segment's current version, and a saved segment is
 * built over every contact after its save. A contact written meanwhile through an isolate not
 * knowing the save, after the build passed it, is re-checked once this time is over
 * (recheck_upto, membership.ts).
 */
export const PANEL_SEGMENTS_CACHE_MS = 10_000;
/** A read of the panel's segments, shared by concurrent callers; `segments` once it succeeded. */
interface CachedSegments {
  read: Promise<Segment[]>;
  segments?: Segment[];
}
const cache = new TtlCache<CachedSegments>(PANEL_SEGMENTS_CACHE_MS, 1000);

export function panelSegments(db: ShardDb, panelId: string): Promise<Segment[]> {
  const cached = cache.get(panelId);
  if (cached) return cached.read;
  const entry: CachedSegments = { read: listSegments(db, panelId) };
  cache.set(panelId, entry);
  // A failed read is not kept; a successful one is kept as a value too, for knownPanelSegments.
  entry.read.then(
    (segments) => {
      entry.segments = segments;
    },
    () => {
      if (cache.get(panelId) === entry) cache.delete(panelId);
    },
  );
  return entry.read;
}

/** The panel's segments as panelSegments would answer them now, when that answer is already read; undefined otherwise (nothing is read). */
export function knownPanelSegments(panelId: string): readonly Segment[] | undefined {
  return cache.get(panelId)?.segments;
}

/** A segment of the panel was saved or deleted in this isolate: the panel's answer is read again. */
export function forgetPanelSegments(panelId: string): void {
  cache.delete(panelId);
  catalogs.delete(panelId);
}

const catalogs = new TtlCache<Promise<SegmentCatalog>>(PANEL_SEGMENTS_CACHE_MS, 1000);

/**
 * The panel's attribute types and activity definitions that compiled segments read, as this
 * isolate last read them (the same freshness as the segments): every membership check needs
 * them. Read again when a match names an attribute or activity the cached one lacks (defined
 * since), so a segment saved just after its activity is never compiled without it.
 */
export async function panelCatalog(db: ShardDb, panelId: string, matches: readonly SegmentNode[]): Promise<SegmentCatalog> {
  const cached = catalogs.get(panelId);
  if (cached) {
    const catalog = await cached.catch(() => null);
    if (catalog && matches.every((match) => covers(catalog, match))) return catalog;
  }
  const read = loadSegmentCatalog(db, panelId);
  catalogs.set(panelId, read);
  read.catch(() => catalogs.delete(panelId));
  return read;
}

function covers(catalog: SegmentCatalog, match: SegmentNode): boolean {
  return conditionsOf(match).every((c) => {
    if ("attribute" in c) return catalog.attributes.has(c.attribute);
    if ("activity" in c) return catalog.activities.has(c.activity.toLowerCase());
    return true;
  });
}
