import type { KeyedContact } from "../../store/contacts";
import { getSegment, listSegments, segmentHistory, segmentMembersPage, type Segment } from "../../store/segments";
import type { ShardDb } from "../../store/shards";
import { memberFigures, type CountFigure } from "../overview/counts";
import { countSegment, type MatchCount } from "./definitions";

/** The panel's saved segments, each with its members as last counted (services/overview/counts.ts). */
export async function segmentsWithMembers(db: ShardDb, panelId: string, now = Date.now()): Promise<{ segment: Segment; members: CountFigure }[]> {
  const segments = await listSegments(db, panelId);
  const members = await memberFigures(db, panelId, segments.map((s) => s.id), now);
  return segments.map((segment) => ({ segment, members: members.get(segment.id)! }));
}

async function membersOf(db: ShardDb, panelId: string, segmentId: string, now: number): Promise<CountFigure> {
  return (await memberFigures(db, panelId, [segmentId], now)).get(segmentId)!;
}

/**
 * A saved segment with its count now (null when its definition no longer checks out) and its
 * members as last counted; null when there is no such segment. Past what a request counts, the
 * count is its members as last counted (panel_counts, with its time) where that is no floor,
 * else the estimate.
 */
export async function segmentWithCount(
  db: ShardDb,
  panelId: string,
  segmentId: string,
  now = Date.now(),
  cap?: number,
): Promise<{ segment: Segment; count: MatchCount | null; members: CountFigure } | null> {
  const segment = await getSegment(db, panelId, segmentId);
  if (!segment) return null;
  const [counted, members] = await Promise.all([countSegment(db, panelId, segment.match, now, cap), membersOf(db, panelId, segment.id, now)]);
  const count = !counted.ok ? null : counted.value.estimated && !members.atLeast ? { n: members.n, estimated: true } : counted.value;
  return { segment, count, members };
}

/** A page of the segment's members after contact id `afterId`; null when there is no such segment. */
export async function segmentMembers(db: ShardDb, panelId: string, segmentId: string, afterId: number, limit: number): Promise<KeyedContact[] | null> {
  const segment = await getSegment(db, panelId, segmentId);
  return segment ? segmentMembersPage(db, panelId, segment.id, afterId, limit) : null;
}

/** Entries and exits per day (UTC) since `since`, and the members as last counted; null when there is no such segment. */
export async function segmentSizeHistory(
  db: ShardDb,
  panelId: string,
  segmentId: string,
  since: number,
  now = Date.now(),
): Promise<{ members: CountFigure; days: Awaited<ReturnType<typeof segmentHistory>> } | null> {
  const segment = await getSegment(db, panelId, segmentId);
  if (!segment) return null;
  return { members: await membersOf(db, panelId, segment.id, now), days: await segmentHistory(db, panelId, segment.id, since) };
}
