import type { KeyedContact } from "../../store/contacts";
import { getSegment, listSegments, memberCount, segmentHistory, segmentMembersPage, type Segment } from "../../store/segments";
import type { ShardDb } from "../../store/shards";
import { countSegment } from "./definitions";

/** The panel's saved segments, each with its members now. */
export async function segmentsWithMembers(db: ShardDb, panelId: string): Promise<{ segment: Segment; members: number }[]> {
  const segments = await listSegments(db, panelId);
  const members = await Promise.all(segments.map((s) => memberCount(db, s.id)));
  return segments.map((segment, i) => ({ segment, members: members[i]! }));
}

/** A saved segment with its count now (null when its definition no longer checks out) and its members; null when there is no such segment. */
export async function segmentWithCount(db: ShardDb, panelId: string, segmentId: string): Promise<{ segment: Segment; count: number | null; members: number } | null> {
  const segment = await getSegment(db, panelId, segmentId);
  if (!segment) return null;
  const counted = await countSegment(db, panelId, segment.match);
  return { segment, count: counted.ok ? counted.value : null, members: await memberCount(db, segment.id) };
}

/** A page of the segment's members after contact id `afterId`; null when there is no such segment. */
export async function segmentMembers(db: ShardDb, panelId: string, segmentId: string, afterId: number, limit: number): Promise<KeyedContact[] | null> {
  const segment = await getSegment(db, panelId, segmentId);
  return segment ? segmentMembersPage(db, panelId, segment.id, afterId, limit) : null;
}

/** Entries and exits per day (UTC) since `since`, and the members now; null when there is no such segment. */
export async function segmentSizeHistory(
  db: ShardDb,
  panelId: string,
  segmentId: string,
  since: number,
): Promise<{ members: number; days: Awaited<ReturnType<typeof segmentHistory>> } | null> {
  const segment = await getSegment(db, panelId, segmentId);
  if (!segment) return null;
  return { members: await memberCount(db, segment.id), days: await segmentHistory(db, panelId, segment.id, since) };
}
