import { DAY_MS } from "../../domain/time";
import { EVENT_CHANNELS } from "../../domain/events";
import { isReplayedKind, REPLAYED_MESSAGE_KINDS } from "../../domain/webhooks/replay";
import { archivedPartsBetween, countReplayEventRows, eventIdsHere, partRows, replayEventRows, type ArchivePart, type ReplaySelection } from "../../store/event-archive";
import type { EventRow } from "../../store/events";
import type { ShardDb } from "../../store/shards";
import type { ReplayCursor, ReplayFilter } from "../../store/webhook-replays";
import { archiveKey, readPartObject } from "../retention/archive";
import type { OwningShard } from "../access/partitions";

/**
 * The events a replay re-sends, in (occurred_at, id) order: the shard's rows and, for days moved
 * to R2 by event retention (services/retention/archive.ts), the rows of the day's part objects,
 * merged. A day being archived may have rows in both (a verified part whose rows are not yet
 * deleted, a late event that stays in the shard): each event is taken once, by id. A panel
 * spread over several shards (decision 0038) has each shard's pages merged: event ids are
 * unique across shards (decision 0030), so the order is one order over the panel.
 */

/** Archived days one page may pass through before it answers what it has. */
const ROUNDS_PER_PAGE = 20;

const dayOf = (at: number) => Math.floor(at / DAY_MS) * DAY_MS;
const order = (a: EventRow, b: EventRow) => a.occurred_at - b.occurred_at || a.id - b.id;
const after = (row: EventRow, cursor: ReplayCursor) => row.occurred_at > cursor.occurredAt || (row.occurred_at === cursor.occurredAt && row.id > cursor.id);

export function selectionOf(filter: ReplayFilter): ReplaySelection {
  return { channels: filter.channels ?? EVENT_CHANNELS, messageKinds: REPLAYED_MESSAGE_KINDS, journeyId: filter.journeyId };
}

function selected(row: EventRow, selection: ReplaySelection): boolean {
  return selection.channels.includes(row.channel) && isReplayedKind(row.channel, row.name) && (selection.journeyId === null || row.journey_id === selection.journeyId);
}

async function partObjectRows(bucket: R2Bucket, part: ArchivePart): Promise<EventRow[]> {
  const object = await bucket.get(archiveKey(part.panelId, part));
  // A verified part's object was read back whole before its rows went; missing now is a fault.
  if (!object) throw new Error(`archive part ${archiveKey(part.panelId, part)} is missing from R2`);
  return readPartObject(object);
}

/** The archived rows of `parts` a replay selects in [from, to), without those still in the shard (read there). */
async function archivedSelected(bucket: R2Bucket, db: ShardDb, parts: readonly ArchivePart[], selection: ReplaySelection, from: number, to: number): Promise<EventRow[]> {
  const rows: EventRow[] = [];
  for (const part of parts) {
    // A verified part's rows may not all be deleted yet; those left are counted from the shard.
    const inShard = part.state === "verified" ? new Set((await partRows(db, part)).map((row) => row.id)) : null;
    for (const row of await partObjectRows(bucket, part)) {
      if (row.occurred_at >= from && row.occurred_at < to && selected(row, selection) && !inShard?.has(row.id)) rows.push(row);
    }
  }
  return rows;
}

/**
 * How many events a replay of [from, to) with `selection` re-sends (its dry run) over the panel's
 * shards (`shards`, panelOwningShards), each event once, as the replay takes it (by id): between
 * a split's switch and its cleaning the moved events are on both shards, and a day may be
 * archived on both (decision 0047). So each shard counts its rows in the buckets its map gives it
 * (the source's copies of the moved rows are the target's), and the archived events are counted
 * by id over every shard, but for those counted as rows (an event one shard archived, still a row
 * on the shard owning it).
 */
export async function countReplayEvents(bucket: R2Bucket, shards: readonly OwningShard[], panelId: string, selection: ReplaySelection, from: number, to: number): Promise<number> {
  const counts = await Promise.all(shards.map((shard) => countShardEvents(bucket, shard, panelId, selection, from, to)));
  const rows = counts.reduce((sum, c) => sum + c.rows, 0);
  if (counts.length === 1) return rows + counts[0]!.archived.length;
  const archived = new Set(counts.flatMap((c) => c.archived));
  const asRows = await Promise.all(
    shards.map((shard, i) => {
      const own = new Set(counts[i]!.archived);
      const elsewhere = [...archived].filter((id) => !own.has(id));
      return elsewhere.length ? eventIdsHere(shard.db, panelId, elsewhere, shard.buckets) : [];
    }),
  );
  for (const id of asRows.flat()) archived.delete(id);
  return rows + archived.size;
}

/** One shard's count: its selected rows in its buckets, and the ids of its archived events that are not rows here. */
async function countShardEvents(bucket: R2Bucket, shard: OwningShard, panelId: string, selection: ReplaySelection, from: number, to: number): Promise<{ rows: number; archived: number[] }> {
  const rows = await countReplayEventRows(shard.db, panelId, selection, from, to, shard.buckets);
  const parts = await archivedPartsBetween(shard.db, panelId, dayOf(from), to);
  if (parts.length === 0) return { rows, archived: [] };
  return { rows, archived: (await archivedSelected(bucket, shard.db, parts, selection, from, to)).map((row) => row.id) };
}

/**
 * The shard's selected rows after `cursor`, before `to`. The next day is asked first: sorting
 * the rest of a long range for each page would read all of it every time.
 */
async function shardRows(db: ShardDb, panelId: string, selection: ReplaySelection, cursor: ReplayCursor, to: number, limit: number): Promise<EventRow[]> {
  const near = Math.min(to, dayOf(cursor.occurredAt) + 2 * DAY_MS);
  const first = await replayEventRows(db, panelId, selection, cursor, near, limit);
  if (first.length === limit || near >= to) return first;
  return replayEventRows(db, panelId, selection, cursor, to, limit);
}

/** A page of events: `exhausted` when none is left after its rows; `passed`, how far a page without rows got. */
export interface EventPage {
  rows: EventRow[];
  exhausted: boolean;
  passed: ReplayCursor;
}

const cursorOf = (row: EventRow): ReplayCursor => ({ occurredAt: row.occurred_at, id: row.id });
const earlier = (a: ReplayCursor, b: ReplayCursor) => a.occurredAt < b.occurredAt || (a.occurredAt === b.occurredAt && a.id < b.id);

/**
 * Up to `limit` of the panel's events after `cursor` (exclusive) before `to`, oldest first, from
 * each of `shards` (the home first; one page each) merged. `passed` is how far the read got
 * without finding events (archived days with none selected): a page without rows may still
 * move the cursor on.
 */
export async function nextReplayEvents(
  bucket: R2Bucket,
  shards: readonly ShardDb[],
  panelId: string,
  selection: ReplaySelection,
  cursor: ReplayCursor,
  to: number,
  limit: number,
): Promise<EventPage> {
  const pages = await Promise.all(shards.map((db) => shardEvents(bucket, db, panelId, selection, cursor, to, limit)));
  if (pages.length === 1) return pages[0]!;
  // A shard's page that did not reach the end vouches for its shard only up to its last row (or
  // how far it passed): the merged page ends at the nearest such frontier; later rows are read again.
  let frontier: ReplayCursor | null = null;
  for (const page of pages) {
    if (page.exhausted) continue;
    const reached = page.rows.length ? cursorOf(page.rows.at(-1)!) : page.passed;
    if (frontier === null || earlier(reached, frontier)) frontier = reached;
  }
  // A row copied to a split's target stays on its source until cleaning (decision 0047): taken once.
  const merged = pages
    .flatMap((page) => page.rows)
    .filter((row) => frontier === null || !after(row, frontier))
    .sort(order)
    .filter((row, i, all) => i === 0 || all[i - 1]!.id !== row.id);
  const rows = merged.slice(0, limit);
  return { rows, exhausted: frontier === null && merged.length <= limit, passed: rows.length === 0 && frontier ? frontier : cursor };
}

/** One shard's page: its rows and its archive's, merged. */
async function shardEvents(bucket: R2Bucket, db: ShardDb, panelId: string, selection: ReplaySelection, cursor: ReplayCursor, to: number, limit: number): Promise<EventPage> {
  const rows: EventRow[] = [];
  let position = cursor;
  // The first day whose archived parts may hold events after `position`.
  let archiveFrom = dayOf(cursor.occurredAt);
  for (let round = 0; round < ROUNDS_PER_PAGE && rows.length < limit; round++) {
    const need = limit - rows.length;
    const hot = await shardRows(db, panelId, selection, position, to, need);
    const full = hot.length === need;
    const lastHot = hot.at(-1);
    const parts = await archivedPartsBetween(db, panelId, archiveFrom, to, true);
    const day = parts[0]?.day ?? null;
    // No archived day before the page's last shard row: the shard's rows are the page.
    if (day === null || (full && lastHot!.occurred_at < day)) {
      rows.push(...hot);
      return { rows, exhausted: !full, passed: position };
    }
    const dayEnd = day + DAY_MS;
    const beforeDay = hot.filter((row) => row.occurred_at < day);
    const inDay = hot.filter((row) => row.occurred_at >= day && row.occurred_at < dayEnd);
    const taken = new Set(inDay.map((row) => row.id));
    const archived = (await archivedSelected(bucket, db, parts, selection, position.occurredAt, to)).filter((row) => after(row, position) && !taken.has(row.id));
    let merged = [...inDay, ...archived].sort(order);
    // A full page of shard rows ending inside the day may leave later shard rows of that day
    // unread: the page ends at its last shard row.
    const dayWhole = !(full && lastHot!.occurred_at < dayEnd);
    if (!dayWhole) merged = merged.filter((row) => order(row, lastHot!) <= 0);
    const available = [...beforeDay, ...merged];
    rows.push(...available.slice(0, need));
    if (available.length > need || !dayWhole) return { rows, exhausted: false, passed: position };
    if (dayEnd >= to) return { rows, exhausted: true, passed: position };
    // Every event up to the day's end is in the page: go on after it.
    position = { occurredAt: dayEnd - 1, id: Number.MAX_SAFE_INTEGER };
    archiveFrom = dayEnd;
  }
  return { rows, exhausted: false, passed: position };
}
