import type { ShardDb } from "./shards";
import { EVENT_CHANNELS } from "../domain/events";
import { eventColumns, type EventRow } from "./events";
import { chunk, inBucketRanges } from "./sql";
import { notMovingHere } from "./panel-move/triggers";
import type { BucketRanges } from "../domain/partitions";

/**
 * The record of events moved to R2 (services/retention). A part is one object
 * `events/{panel}/{yyyy}/{mm}/{dd}/part-{N}-s{shard}.ndjson.gz` (`part-{N}.ndjson.gz` when written
 * before shard migration 0116), N the first event id it holds, the shard the one that wrote it, with the
 * rows of that day and panel whose ids it records (N to `last_id`). Its row is written before the
 * object (`written`), marked `verified` once the object was read back whole (the rows are then
 * deleted), and `done` once they are gone; work a crash left is taken up from that state, so
 * nothing is lost (rows go only after the object holds them) and nothing is doubled (the same
 * part is rewritten under the same key).
 */
export type ArchivePartState = "written" | "verified" | "done";

export interface ArchivePart {
  panelId: string;
  /** The ids of the events it holds, recorded with it: a resumed part works on exactly these rows. */
  ids: number[];
  /** UTC day of the events' occurred_at, as epoch ms of its midnight. */
  day: number;
  /** The first event id of the part (its N). */
  part: number;
  lastId: number;
  events: number;
  state: ArchivePartState;
  /**
   * The shard that wrote it, named in its key: a split's moved event is on two shards until
   * cleaning, and each could archive it first in a part of the same day (until the sweep left the
   * source's fenced copies, ARCHIVABLE). Null: written before shard migration 0116, under the key without it.
   */
  shard: number | null;
}

interface PartRow {
  panel_id: string;
  ids: string;
  day: number;
  part: number;
  last_id: number;
  events: number;
  state: ArchivePartState;
  shard: number | null;
}

const PART_COLUMNS = "panel_id, ids, day, part, last_id, events, state, shard";
const DAY_MS = 86_400_000;

function partFromRow(row: PartRow): ArchivePart {
  return { panelId: row.panel_id, ids: JSON.parse(row.ids) as number[], day: row.day, part: row.part, lastId: row.last_id, events: row.events, state: row.state, shard: row.shard };
}

/**
 * The (channel, name) pairs of the panel's events, `kinds(channel, name)`, found in
 * events_by_name (panel_id, channel, name, occurred_at, id, contact_id) a seek per pair: the
 * reads by time below then search that index per pair, as the events table has no index by
 * time alone (migration 0055 dropped it: one index less for every stored event to write).
 * A row with a NULL name ends its channel's chain.
 */
const PANEL_EVENT_KINDS = `WITH RECURSIVE kinds(channel, name) AS (
  SELECT c.value, (SELECT MIN(e.name) FROM events e WHERE e.panel_id = ?1 AND e.channel = c.value) FROM json_each('${JSON.stringify(EVENT_CHANNELS)}') c
  UNION ALL
  SELECT k.channel, (SELECT MIN(e.name) FROM events e WHERE e.panel_id = ?1 AND e.channel = k.channel AND e.name > k.name) FROM kinds k WHERE k.name IS NOT NULL)`;

/**
 * An event row `e` the retention sweep may take: not one a move holds here (notMovingHere). A
 * split's source keeps its copies of the moved events, fenced, from the switch until cleaning
 * deletes them (decision 0047); the target archives the events, so the source archiving its
 * copies would list them twice (its part names their owners) and then fail to delete them. A
 * whole panel's rows in transit here (a copy landing, old rows going) are left alike.
 */
const ARCHIVABLE = notMovingHere("e");

/**
 * Of the given panels, those with events that happened and were received before their own
 * `before` (what oldestEventDay finds non-null), in one statement: the panels' (channel, name)
 * pairs are found as PANEL_EVENT_KINDS finds one panel's, and each pair's index range is read
 * up to its first such event. So the cron finds which of a thousand panels have anything to move in one query.
 */
export async function panelsWithEventsBefore(db: ShardDb, panels: ReadonlyArray<{ id: string; before: number }>): Promise<Set<string>> {
  if (panels.length === 0) return new Set();
  const { results } = await db
    .prepare(
      `WITH RECURSIVE p(id, before) AS (SELECT value ->> 0, value ->> 1 FROM json_each(?1)),
       kinds(panel, before, channel, name) AS (
         SELECT p.id, p.before, c.value, (SELECT MIN(e.name) FROM events e WHERE e.panel_id = p.id AND e.channel = c.value)
         FROM p, json_each('${JSON.stringify(EVENT_CHANNELS)}') c
         UNION ALL
         SELECT k.panel, k.before, k.channel, (SELECT MIN(e.name) FROM events e WHERE e.panel_id = k.panel AND e.channel = k.channel AND e.name > k.name)
         FROM kinds k WHERE k.name IS NOT NULL)
       SELECT DISTINCT k.panel FROM kinds k
       WHERE k.name IS NOT NULL AND EXISTS (SELECT 1 FROM events e WHERE e.panel_id = k.panel AND e.channel = k.channel AND e.name = k.name AND e.occurred_at < k.before AND e.received_at < k.before AND ${ARCHIVABLE})`,
    )
    .bind(JSON.stringify(panels.map((p) => [p.id, p.before])))
    .all<{ panel: string }>();
  return new Set(results.map((r) => r.panel));
}

/**
 * The midnight (UTC) of the oldest day of the panel with events that happened and were
 * received before `before` (a late event stays as long as any other); null when none.
 */
export async function oldestEventDay(db: ShardDb, panelId: string, before: number): Promise<number | null> {
  const row = await db
    .prepare(
      `${PANEL_EVENT_KINDS}
       SELECT MIN((SELECT MIN(e.occurred_at) FROM events e
                   WHERE e.panel_id = ?1 AND e.channel = k.channel AND e.name = k.name AND e.occurred_at < ?2 AND e.received_at < ?2 AND ${ARCHIVABLE})) AS at
       FROM kinds k WHERE k.name IS NOT NULL`,
    )
    .bind(panelId, before)
    .first<{ at: number | null }>();
  return row?.at == null ? null : Math.floor(row.at / DAY_MS) * DAY_MS;
}

/** The panel's events of one UTC day received before `before`, by id, as stored. */
export async function eventRowsOfDay(db: ShardDb, panelId: string, day: number, before: number, limit: number): Promise<EventRow[]> {
  const { results } = await db
    .prepare(
      `${PANEL_EVENT_KINDS}
       SELECT ${eventColumns("e")} FROM kinds k
         CROSS JOIN events e ON e.panel_id = ?1 AND e.channel = k.channel AND e.name = k.name AND e.occurred_at >= ?2 AND e.occurred_at < ?3
       WHERE k.name IS NOT NULL AND e.received_at < ?4 AND ${ARCHIVABLE} ORDER BY e.id LIMIT ?5`,
    )
    .bind(panelId, day, day + DAY_MS, before, limit)
    .all<EventRow>();
  return results;
}

/** The rows a part holds that are still in the table (all of them until it is verified). */
export async function partRows(db: ShardDb, part: ArchivePart): Promise<EventRow[]> {
  const { results } = await db
    // +panel_id: the ids are looked up by key (the planner would otherwise scan the panel's rows in an index).
    .prepare(`SELECT ${eventColumns()} FROM events WHERE +panel_id = ?1 AND id IN (SELECT value FROM json_each(?2)) ORDER BY id`)
    .bind(part.panelId, JSON.stringify(part.ids))
    .all<EventRow>();
  return results;
}

/** Records a part before its object is written; a part recorded already is left as it is. */
export async function recordArchivePart(db: ShardDb, part: Omit<ArchivePart, "state">, now: number): Promise<void> {
  await db
    .prepare(`INSERT INTO event_archive_parts (${PART_COLUMNS}, created_at) VALUES (?, ?, ?, ?, ?, ?, 'written', ?, ?) ON CONFLICT DO NOTHING`)
    .bind(part.panelId, JSON.stringify(part.ids), part.day, part.part, part.lastId, part.events, part.shard, now)
    .run();
}

/**
 * Whose events the parts hold (shard migration 0066): a row per owner (`c:<contact id>` or
 * `u:<uniqueid>`) and block of 32 days, listing [day number, part] pairs, so an owner with an
 * archived event a day costs a pair a day, not a row. Day numbers are days since 1970. A part
 * written with its shard (shard migration 0116) is listed [day number, part, shard]: a split's
 * target takes the moved contacts' pairs (store/panel-move/archive-owners.ts), and its erasure
 * finds the source's objects by them.
 */
const BLOCK_DAYS = 32;
/** The pairs of an owner's block rows, one row per pair: `o` the block row, `e` its pair. */
const OWNER_PAIRS = "event_archive_owner_blocks o CROSS JOIN json_each(o.parts) e";
/** A pair's day as epoch ms of its midnight, and its part. */
const PAIR_DAY = `(e.value ->> 0) * ${DAY_MS}`;
const PAIR_PART = "(e.value ->> 1)";
const PAIR_SHARD = "(e.value ->> 2)";
/** A pair's day, part and shard are ?2, ?3 and ?5 (a pair without a shard matches a null ?5). */
const PAIR_IS = `${PAIR_DAY} = ?2 AND ${PAIR_PART} = ?3 AND ${PAIR_SHARD} IS ?5`;

/** Which part of a panel: its day, number and the shard that wrote it (null: written before that was named). */
export interface PartName {
  day: number;
  part: number;
  shard: number | null;
}

/** Adds (day, part) to the blocks of these owners; a pair listed already is not listed twice. */
export function recordOwnersStatement(db: ShardDb, panelId: string, { day, part, shard }: PartName, owners: readonly string[], onlyOnceVerified = false): D1PreparedStatement {
  // CAST: D1 may bind a number as a real, which json_array would write as 20000.0.
  const when = onlyOnceVerified ? "EXISTS (SELECT 1 FROM event_archive_parts WHERE panel_id = ?1 AND day = ?2 AND part = ?3 AND state = 'verified')" : "true";
  const pair = `CASE WHEN ?5 IS NULL THEN json_array(CAST(?2 AS INTEGER) / ${DAY_MS}, CAST(?3 AS INTEGER)) ELSE json_array(CAST(?2 AS INTEGER) / ${DAY_MS}, CAST(?3 AS INTEGER), CAST(?5 AS INTEGER)) END`;
  return db
    .prepare(
      `INSERT INTO event_archive_owner_blocks (panel_id, owner, block, parts)
       SELECT ?1, value, CAST(?2 AS INTEGER) / ${DAY_MS} / ${BLOCK_DAYS}, json_array(${pair}) FROM json_each(?4) WHERE ${when}
       ON CONFLICT (panel_id, owner, block) DO UPDATE SET parts = json_insert(parts, '$[#]', ${pair})
       WHERE NOT EXISTS (SELECT 1 FROM json_each(parts) e WHERE ${PAIR_IS})`,
    )
    .bind(panelId, day, part, JSON.stringify(owners), shard);
}

/** Takes (day, part) off the blocks of these owners, and the blocks left empty. */
export function forgetOwnersStatements(db: ShardDb, panelId: string, { day, part, shard }: PartName, owners: readonly string[]): D1PreparedStatement[] {
  const these = `panel_id = ?1 AND owner IN (SELECT value FROM json_each(?4)) AND block = CAST(?2 AS INTEGER) / ${DAY_MS} / ${BLOCK_DAYS}`;
  const list = JSON.stringify(owners);
  return [
    db
      .prepare(
        `UPDATE event_archive_owner_blocks SET parts = (SELECT json_group_array(json(e.value)) FROM json_each(parts) e WHERE NOT (${PAIR_IS}))
         WHERE ${these}`,
      )
      .bind(panelId, day, part, list, shard),
    db.prepare(`DELETE FROM event_archive_owner_blocks WHERE ${these} AND json_array_length(parts) = 0`).bind(panelId, day, part, list),
  ];
}

/** The parts (day, part, shard) naming any of these owners, by day and part. */
export async function partsOfOwners(db: ShardDb, panelId: string, owners: readonly string[], limit: number): Promise<PartName[]> {
  const { results } = await db
    .prepare(
      `SELECT DISTINCT ${PAIR_DAY} AS day, ${PAIR_PART} AS part, ${PAIR_SHARD} AS shard FROM ${OWNER_PAIRS}
       WHERE o.panel_id = ?1 AND o.owner IN (SELECT value FROM json_each(?2)) ORDER BY day, part, shard LIMIT ?3`,
    )
    .bind(panelId, JSON.stringify(owners), limit)
    .all<PartName>();
  return results;
}

/**
 * The object holds `written`, the part's rows as read: marks the part verified and records whose
 * events it holds (a contact id or an anonymous uniqueid per owner), which history pages and
 * erasures read to find it; both only if every row written is still in the shard. A contact
 * erased since the rows were read (services/contacts/erase.ts) has had its rows deleted and
 * found no owner entry of this part to rewrite it by, so the part must be written again without
 * them: false. D1 runs one batch at a time, so an erasure is either before this (seen here) or
 * after (it finds the owners recorded here).
 */
export async function markPartVerified(db: ShardDb, part: ArchivePart, written: ReadonlyArray<{ id: number; contact_id: number | null; uniqueid: string | null }>): Promise<boolean> {
  const keys = [...new Set(written.flatMap((r) => [...(r.contact_id !== null ? [`c:${r.contact_id}`] : []), ...(r.uniqueid !== null ? [`u:${r.uniqueid}`] : [])]))];
  const results = await db.batch<{ state: string }>([
    db
      .prepare(
        `UPDATE event_archive_parts SET state = 'verified' WHERE panel_id = ?1 AND day = ?2 AND part = ?3 AND state = 'written'
           AND (SELECT COUNT(*) FROM events WHERE +panel_id = ?1 AND id IN (SELECT value FROM json_each(?4))) = ?5`,
      )
      .bind(part.panelId, part.day, part.part, JSON.stringify(written.map((r) => r.id)), written.length),
    recordOwnersStatement(db, part.panelId, part, keys, true),
    db.prepare("SELECT state FROM event_archive_parts WHERE panel_id = ? AND day = ? AND part = ?").bind(part.panelId, part.day, part.part),
  ]);
  // Still `written`: rows went. Verified (here, or by another run working on the same part) or done: the part holds its rows.
  return results[2]!.results[0]?.state !== "written";
}

/** Deletes up to `limit` of the part's rows; returns how many went. */
export async function deletePartRows(db: ShardDb, part: ArchivePart, limit: number): Promise<number> {
  const result = await db
    .prepare(
      `DELETE FROM events WHERE id IN (
         SELECT id FROM events WHERE +panel_id = ?1 AND id IN (SELECT value FROM json_each(?2)) LIMIT ?3)`,
    )
    .bind(part.panelId, JSON.stringify(part.ids), limit)
    .run();
  return result.meta.changes ?? 0;
}

export async function finishArchivePart(db: ShardDb, part: ArchivePart): Promise<void> {
  await db.prepare("UPDATE event_archive_parts SET state = 'done' WHERE panel_id = ? AND day = ? AND part = ?").bind(part.panelId, part.day, part.part).run();
}

/** Parts a crash left before `done`, of every panel of the shard, oldest first. */
export async function unfinishedArchiveParts(db: ShardDb, limit: number): Promise<ArchivePart[]> {
  const { results } = await db.prepare(`SELECT ${PART_COLUMNS} FROM event_archive_parts WHERE state <> 'done' ORDER BY created_at LIMIT ?`).bind(limit).all<PartRow>();
  return results.map(partFromRow);
}

/**
 * The parts holding events of a contact or uniqueid, newest day first, from `fromDay` down (a
 * part being deleted may still have rows in the table too): the owner's blocks from that day's
 * down, on the primary key. The pairs alone name the parts' objects: owners are recorded only
 * once a part is verified (`markPartVerified`), and a split's target holds the blocks of its
 * moved contacts whose parts' rows stay on the source (store/panel-move/archive-owners.ts).
 */
export async function archivedPartsOf(db: ShardDb, panelId: string, owner: string, fromDay: number | null, limit: number): Promise<PartName[]> {
  const { results } = await db
    .prepare(
      `SELECT DISTINCT ${PAIR_DAY} AS day, ${PAIR_PART} AS part, ${PAIR_SHARD} AS shard FROM ${OWNER_PAIRS}
       WHERE o.panel_id = ?1 AND o.owner = ?2 AND (?3 IS NULL OR o.block <= CAST(?3 AS INTEGER) / ${DAY_MS} / ${BLOCK_DAYS}) AND (?3 IS NULL OR ${PAIR_DAY} <= ?3)
       ORDER BY day DESC, part DESC, shard LIMIT ?4`,
    )
    .bind(panelId, owner, fromDay, limit)
    .all<PartName>();
  return results;
}

/**
 * Which events a replay reads (services/replays): the channels (all when null), the events of a
 * message channel that are webhook events (`kinds`: "channel/name"; every custom activity is
 * one), and only those of one journey's messages when `journeyId` is set.
 */
export interface ReplaySelection {
  channels: readonly string[];
  messageKinds: readonly string[];
  journeyId: string | null;
}

const SELECTED_KINDS = `k.name IS NOT NULL AND k.channel IN (SELECT value FROM json_each(?4))
  AND (k.channel = 'custom_activity' OR k.channel || '/' || k.name IN (SELECT value FROM json_each(?5)))`;

/**
 * The panel's events in the shard selected for a replay that happened in [from, to) after
 * `after` (in (occurred_at, id) order), oldest first: each (channel, name) pair's range of
 * events_by_name, merged.
 */
export async function replayEventRows(
  db: ShardDb,
  panelId: string,
  selection: ReplaySelection,
  after: { occurredAt: number; id: number },
  to: number,
  limit: number,
): Promise<EventRow[]> {
  const { results } = await db
    .prepare(
      `${PANEL_EVENT_KINDS}
       SELECT ${eventColumns("e")} FROM kinds k
         CROSS JOIN events e ON e.panel_id = ?1 AND e.channel = k.channel AND e.name = k.name AND e.occurred_at >= ?2 AND e.occurred_at < ?3
       WHERE ${SELECTED_KINDS} AND (?6 IS NULL OR e.journey_id = ?6) AND (e.occurred_at, e.id) > (?2, ?7)
       ORDER BY e.occurred_at, e.id LIMIT ?8`,
    )
    .bind(panelId, after.occurredAt, to, JSON.stringify(selection.channels), JSON.stringify(selection.messageKinds), selection.journeyId, after.id, limit)
    .all<EventRow>();
  return results;
}

/** How many events of the shard a replay of [from, to) selects, among those of `buckets` (null: all). */
export async function countReplayEventRows(db: ShardDb, panelId: string, selection: ReplaySelection, from: number, to: number, buckets: BucketRanges | null = null): Promise<number> {
  const row = await db
    .prepare(
      `${PANEL_EVENT_KINDS}
       SELECT COUNT(*) AS n FROM kinds k
         CROSS JOIN events e ON e.panel_id = ?1 AND e.channel = k.channel AND e.name = k.name AND e.occurred_at >= ?2 AND e.occurred_at < ?3
       WHERE ${SELECTED_KINDS} AND (?6 IS NULL OR e.journey_id = ?6) AND (?7 IS NULL OR ${inBucketRanges("e.bucket", "?7")})`,
    )
    .bind(panelId, from, to, JSON.stringify(selection.channels), JSON.stringify(selection.messageKinds), selection.journeyId, buckets && JSON.stringify(buckets))
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/** Which of the event ids `ids` are rows of the shard among those of `buckets` (null: all). */
export async function eventIdsHere(db: ShardDb, panelId: string, ids: readonly number[], buckets: BucketRanges | null): Promise<number[]> {
  const found: number[] = [];
  for (const some of chunk(ids, IDS_PER_LOOKUP)) {
    const { results } = await db
      // +panel_id: the ids are looked up by key, as partRows.
      .prepare(`SELECT id FROM events e WHERE +e.panel_id = ?1 AND e.id IN (SELECT value FROM json_each(?2)) AND (?3 IS NULL OR ${inBucketRanges("e.bucket", "?3")})`)
      .bind(panelId, JSON.stringify(some), buckets && JSON.stringify(buckets))
      .all<{ id: number }>();
    found.push(...results.map((r) => r.id));
  }
  return found;
}

/** Ids one lookup binds, as one JSON array of some tens of kilobytes. */
const IDS_PER_LOOKUP = 5_000;

/**
 * The archived parts (verified or done: their objects are whole) of the panel's days from
 * `fromDay` up to the day holding `to`, oldest first; with `firstDayOnly`, those of the earliest
 * such day alone.
 */
export async function archivedPartsBetween(db: ShardDb, panelId: string, fromDay: number, to: number, firstDayOnly = false): Promise<ArchivePart[]> {
  const { results } = await db
    .prepare(
      `SELECT ${PART_COLUMNS} FROM event_archive_parts
       WHERE panel_id = ?1 AND day >= ?2 AND day < ?3 AND state <> 'written'
         AND (NOT ?4 OR day = (SELECT MIN(day) FROM event_archive_parts WHERE panel_id = ?1 AND day >= ?2 AND day < ?3 AND state <> 'written'))
       ORDER BY day, part`,
    )
    .bind(panelId, fromDay, to, firstDayOnly ? 1 : 0)
    .all<PartRow>();
  return results.map(partFromRow);
}
