import type { KeyedContact } from "../../store/contacts";
import { getSegment, listSegments, segmentHistory, segmentMembersPage, type Segment } from "../../store/segments";
import { mergedContactPage, type ContactPage, type OwningShards } from "../access/partitions";
import { panelMemberFigures, type CountFigure } from "../overview/counts";
import { countSavedSegment, type MatchCount } from "./definitions";

/**
 * The panel's saved segments as its screens show them. `shards` are the panel's
 * (panelOwningShards: the home first, which holds the definitions, then each other shard holding
 * a partition, decision 0038, with the buckets the map gives it): members live on their contact's
 * shard, so every figure and page is summed or merged over them, a bounded read each. A panel
 * without a map reads its home alone, as before.
 */

/** The panel's saved segments, each with its members as last counted (services/overview/counts.ts). */
export async function segmentsWithMembers(shards: OwningShards, panelId: string, now = Date.now()): Promise<{ segment: Segment; members: CountFigure }[]> {
  const segments = await listSegments(shards[0].db, panelId);
  const members = await panelMemberFigures(shards, panelId, segments.map((s) => s.id), now);
  return segments.map((segment) => ({ segment, members: members.get(segment.id)! }));
}

async function membersOf(shards: OwningShards, panelId: string, segmentId: string, now: number): Promise<CountFigure> {
  return (await panelMemberFigures(shards, panelId, [segmentId], now)).get(segmentId)!;
}

/**
 * A saved segment with its count now (read as its build reads it, even when what it names has
 * gone since) and its members as last counted; null when there is no such segment. Past what a
 * request counts, the count is its members as last counted (panel_counts, with its time) where
 * that is no floor, else the estimate.
 */
export async function segmentWithCount(
  shards: OwningShards,
  panelId: string,
  segmentId: string,
  now = Date.now(),
  cap?: number,
): Promise<{ segment: Segment; count: MatchCount; members: CountFigure } | null> {
  const segment = await getSegment(shards[0].db, panelId, segmentId);
  if (!segment) return null;
  const [counted, members] = await Promise.all([countSavedSegment(shards, panelId, segment.match, now, cap), membersOf(shards, panelId, segment.id, now)]);
  const count = counted.estimated && !members.atLeast ? { n: members.n, estimated: true } : counted;
  return { segment, count, members };
}

/**
 * A page of the segment's members after contact id `afterId`, merged over the panel's shards
 * (at most `limit` a shard; ids are unique across shards); null when there is no such segment.
 */
export async function segmentMembers(shards: OwningShards, panelId: string, segmentId: string, afterId: number, limit: number): Promise<ContactPage<KeyedContact> | null> {
  const segment = await getSegment(shards[0].db, panelId, segmentId);
  if (!segment) return null;
  return mergedContactPage<KeyedContact>(panelId, shards, (db, last) => segmentMembersPage(db, panelId, segment.id, last?.id ?? afterId, limit), (a, b) => a.id - b.id, limit);
}

/** Entries and exits per day (UTC) since `since`, each day's summed over the shards, and the members as last counted; null when there is no such segment. */
export async function segmentSizeHistory(
  shards: OwningShards,
  panelId: string,
  segmentId: string,
  since: number,
  now = Date.now(),
): Promise<{ members: CountFigure; days: Awaited<ReturnType<typeof segmentHistory>> } | null> {
  const segment = await getSegment(shards[0].db, panelId, segmentId);
  if (!segment) return null;
  const [members, histories] = await Promise.all([membersOf(shards, panelId, segment.id, now), Promise.all(shards.map(({ db }) => segmentHistory(db, panelId, segment.id, since)))]);
  if (histories.length === 1) return { members, days: histories[0]! };
  const days = new Map<string, { day: string; entered: number; exited: number }>();
  for (const d of histories.flat()) {
    const sum = days.get(d.day) ?? { day: d.day, entered: 0, exited: 0 };
    days.set(d.day, { day: d.day, entered: sum.entered + d.entered, exited: sum.exited + d.exited });
  }
  return { members, days: [...days.values()].sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0)) };
}
