import { LAST_BUCKET } from "../../domain/partitions";
import { PANEL_MOVING_MARK } from "../../lib/moving";
import type { ShardDb } from "../shards";
import { inBucketRanges } from "../sql";
import { MOVED_TABLES, movedTable, scopeOf, type BucketRange, type MovedTable } from "./tables";
import type { Key } from "./rows";

// The triggers a move creates on the shard a panel leaves, for the move's duration only, so a
// panel that is not moving costs nothing (decision 0031):
// - capture: every insert, update and delete of the panel's rows writes the row's table and key
//   to panel_move_changes; the move copies each changed row (or its absence) again;
// - fence: from the switch until the old rows are gone, any write to the panel's rows on the
//   source is refused (RAISE with PANEL_MOVING_MARK: the API answers 503 and the isolate reads
//   the directory again, a queue retries). Deletes pass while the panel is in transit on the
//   source: the move's own, of the old rows.
// A panel id is written into the trigger's SQL: ids are checked to be plain before (safePanelId).

const OPERATIONS = [
  { op: "INSERT", row: "NEW" },
  { op: "UPDATE", row: "NEW" },
  { op: "DELETE", row: "OLD" },
] as const;

/** Panel ids are `pnl_` and url-safe characters; anything else is refused before it reaches SQL. */
export function safePanelId(panelId: string): boolean {
  return /^[A-Za-z0-9_-]{1,64}$/.test(panelId);
}

function tag(panelId: string): string {
  return panelId.replaceAll("-", "_");
}

function rowScope(t: MovedTable, row: "NEW" | "OLD", panelId: string): string {
  return scopeOf(t, row).replaceAll("?1", `'${panelId}'`);
}

const captureName = (t: MovedTable, op: string, panelId: string) => `move_capture_${t.name}_${op.toLowerCase()}_${tag(panelId)}`;
const fenceName = (t: MovedTable, op: string, panelId: string) => `move_fence_${t.name}_${op.toLowerCase()}_${tag(panelId)}`;

const keyArray = (t: MovedTable, row: "NEW" | "OLD") => `json_array(${t.key.map((c) => `${row}.${c}`).join(", ")})`;

function captureKey(t: MovedTable, row: "NEW" | "OLD", panelId: string): string {
  return `INSERT INTO panel_move_changes (panel_id, tbl, key) VALUES ('${panelId}', '${t.name}', ${keyArray(t, row)});`;
}

/** An update that changes a row's key also leaves its old key without a row. */
function movedKey(t: MovedTable, panelId: string): string {
  return ` INSERT INTO panel_move_changes (panel_id, tbl, key) SELECT '${panelId}', '${t.name}', ${keyArray(t, "OLD")} WHERE ${keyArray(t, "OLD")} <> ${keyArray(t, "NEW")};`;
}

/**
 * Creates the capture triggers. A message's marks are deleted by a trigger once the message is
 * gone, when their scope no longer names the panel: the message's own delete carries them.
 */
export async function startCapture(db: ShardDb, panelId: string, tables: readonly MovedTable[] = MOVED_TABLES): Promise<void> {
  await db.batch(
    tables.flatMap((t) =>
      OPERATIONS.map(({ op, row }) =>
        db.prepare(
          `CREATE TRIGGER IF NOT EXISTS ${captureName(t, op, panelId)} AFTER ${op} ON ${t.name} WHEN ${rowScope(t, row, panelId)}
           BEGIN ${captureKey(t, row, panelId)}${op === "UPDATE" ? movedKey(t, panelId) : ""} END`,
        ),
      ),
    ),
  );
}

export async function stopCapture(db: ShardDb, panelId: string): Promise<void> {
  await db.batch(MOVED_TABLES.flatMap((t) => OPERATIONS.map(({ op }) => db.prepare(`DROP TRIGGER IF EXISTS ${captureName(t, op, panelId)}`))));
}

/**
 * Refuses every write to the panel's rows of `tables` on this shard until liftFence (deletes pass
 * while `transit` is marked in transit here: the panel, or for a partition move the mark
 * splitTransitMark, which leaves the shard's other triggers acting on the rows that stay).
 * `buckets`, the buckets the fence refuses (every one for a whole move), is recorded on the shard
 * with it (fenceMark), so work over every panel there leaves those rows alone (notMovingHere).
 */
export async function raiseFence(
  db: ShardDb,
  panelId: string,
  tables: readonly MovedTable[] = MOVED_TABLES,
  transit: string = panelId,
  buckets: BucketRange = { first: 0, last: LAST_BUCKET },
): Promise<void> {
  await db.batch([
    db.prepare("INSERT INTO panels_in_transit (panel_id) VALUES (?) ON CONFLICT DO NOTHING").bind(fenceMark(panelId, buckets)),
    ...tables.flatMap((t) =>
      OPERATIONS.map(({ op, row }) =>
        db.prepare(
          `CREATE TRIGGER IF NOT EXISTS ${fenceName(t, op, panelId)} BEFORE ${op} ON ${t.name}
           WHEN ${rowScope(t, row, panelId)}${op === "DELETE" ? ` AND NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = '${transit}')` : ""}
           BEGIN SELECT RAISE(ABORT, '${PANEL_MOVING_MARK}'); END`,
        ),
      ),
    ),
  ]);
}

export async function liftFence(db: ShardDb, panelId: string): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM panels_in_transit WHERE panel_id >= ?1 AND panel_id < ?2").bind(`${panelId}${FENCE}`, `${panelId}${FENCE_END}`),
    ...MOVED_TABLES.flatMap((t) => OPERATIONS.map(({ op }) => db.prepare(`DROP TRIGGER IF EXISTS ${fenceName(t, op, panelId)}`))),
  ]);
}

// The fence's record on its shard, in panels_in_transit (no trigger names it: they test their
// row's panel_id): `<panel>/fence/FFFF-LLLL`, its first and last bucket in four digits.
const FENCE = "/fence/";
/** Just past every `<panel>/fence/...` in text order ("0" follows "/"). */
const FENCE_END = "/fence0";
/** The tail of splitTransitMark. */
const SPLIT = "/split";

const fourDigits = (n: number) => String(n).padStart(4, "0");

export function fenceMark(panelId: string, buckets: BucketRange): string {
  if (!Number.isInteger(buckets.first) || !Number.isInteger(buckets.last) || buckets.first < 0 || buckets.last > LAST_BUCKET) throw new Error("a bucket range is whole numbers of 0 to the last bucket");
  return `${panelId}${FENCE}${fourDigits(buckets.first)}-${fourDigits(buckets.last)}`;
}

/**
 * SQL true when the row `alias` (a table with panel_id and bucket columns) may be written by
 * work over every panel of the shard, such as the journeys' cron: not when its panel is in
 * transit here (a copy landing, whose source still serves it; or the old rows going), nor when a
 * fence refuses its bucket (a move's pause, or its source from the switch until the old rows are
 * gone). One such row would abort the whole statement, every other panel's rows with it.
 */
export function notMovingHere(alias: string): string {
  const mark = `${alias}.panel_id || '${FENCE}'`;
  const at = `length(${alias}.panel_id) + ${FENCE.length + 1}`;
  return `NOT EXISTS (SELECT 1 FROM panels_in_transit mt WHERE mt.panel_id = ${alias}.panel_id
    OR (mt.panel_id >= ${mark} AND mt.panel_id < ${alias}.panel_id || '${FENCE_END}'
      AND ${alias}.bucket BETWEEN CAST(substr(mt.panel_id, ${at}, 4) AS INTEGER) AND CAST(substr(mt.panel_id, ${at} + 5, 4) AS INTEGER)))`;
}

/**
 * SQL true when a fence on this shard refuses a delete of the row `alias` (a table with panel_id
 * and bucket columns): a fence names its bucket and neither the panel nor its split's cleaning
 * (splitTransitMark) is marked in transit here, which would let the delete pass. The fence's own
 * triggers test the same, so a batch can meet the fence before it writes anything
 * (store/lists.ts `fencedMembersProbe`).
 */
export function deleteFencedHere(alias: string): string {
  const at = `length(${alias}.panel_id) + ${FENCE.length + 1}`;
  return `EXISTS (SELECT 1 FROM panels_in_transit mf WHERE mf.panel_id >= ${alias}.panel_id || '${FENCE}' AND mf.panel_id < ${alias}.panel_id || '${FENCE_END}'
      AND ${alias}.bucket BETWEEN CAST(substr(mf.panel_id, ${at}, 4) AS INTEGER) AND CAST(substr(mf.panel_id, ${at} + 5, 4) AS INTEGER))
    AND NOT EXISTS (SELECT 1 FROM panels_in_transit mt WHERE mt.panel_id IN (${alias}.panel_id, ${alias}.panel_id || '${SPLIT}'))`;
}

/**
 * SQL true when the row `alias` (panel_id and bucket columns) is a split's source's copy of a
 * moved row: outside the buckets the panel's map gives this shard (`ranges`, a bound JSON
 * BucketRanges; null, a panel without a map: never) and held by a fence here (notMovingHere),
 * from the switch until cleaning has deleted it (decision 0047). A delete or update made on every
 * shard of the panel by an id that names no shard (a push device's unsubscribe, a saved
 * segment's, topic's or form's delete) leaves it alone: the target's row is the one that counts,
 * cleaning deletes every row of the moved buckets on the source, and writing the copy would meet
 * the fence and refuse the whole batch (503) until then. Within its buckets (a fence's pause
 * before the switch) the fence still refuses, and nothing changes.
 */
export function fencedCopyHere(alias: string, ranges: string): string {
  return `(${ranges} IS NOT NULL AND NOT ${inBucketRanges(`${alias}.bucket`, ranges)} AND NOT ${notMovingHere(alias)})`;
}

/** fencedCopyHere for a row keyed by a contact without a bucket of its own (CONTACT_TABLES): its contact's. */
export function fencedContactCopyHere(alias: string, ranges: string): string {
  return `EXISTS (SELECT 1 FROM contacts fcc WHERE fcc.panel_id = ${alias}.panel_id AND fcc.id = ${alias}.contact_id AND ${fencedCopyHere("fcc", ranges)})`;
}

/**
 * SQL true when a fence on this shard holds some of the panel `alias.panel_id`'s buckets: from a
 * move's pause until its old rows are gone (a split's source holds its copies of the moved rows
 * until then), so work counting the panel's rows there leaves it alone.
 */
export function fencedPanelHere(alias: string): string {
  return `EXISTS (SELECT 1 FROM panels_in_transit mf WHERE mf.panel_id >= ${alias}.panel_id || '${FENCE}' AND mf.panel_id < ${alias}.panel_id || '${FENCE_END}')`;
}

/**
 * What a partition move marks in transit on its source while it deletes the moved rows: the
 * fence lets those deletes pass, and no other trigger names it (they test their row's panel_id),
 * so the rows that stay keep being counted. Panel ids hold no "/" (safePanelId).
 */
export function splitTransitMark(panelId: string): string {
  return `${panelId}${SPLIT}`;
}

/**
 * What a partition split marks in panels_in_transit on the panel's home from its first step to
 * its end (decision 0047): a campaign of the panel does not start publishing meanwhile
 * (startPublish reads it), as its shards' parts are laid out by the map at its start. No trigger
 * names it (they test their row's panel_id).
 */
export function campaignHoldMark(panelId: string): string {
  return `${panelId}/campaign-hold`;
}

/** Marks the panel in transit on a shard: no trigger there acts on its rows (migrations/shard/0054). */
export async function markInTransit(db: ShardDb, panelId: string): Promise<void> {
  await db.prepare("INSERT INTO panels_in_transit (panel_id) VALUES (?) ON CONFLICT DO NOTHING").bind(panelId).run();
}

export async function clearInTransit(db: ShardDb, panelId: string): Promise<void> {
  await db.prepare("DELETE FROM panels_in_transit WHERE panel_id = ?").bind(panelId).run();
}

/** A changed row: its table and key. */
export interface CapturedChange {
  seq: number;
  table: MovedTable;
  key: Key;
}

/** The panel's changes after `afterSeq`, in order, at most `limit`; each names its table among `tables` (a partition move's are scoped). */
export async function changesAfter(db: ShardDb, panelId: string, afterSeq: number, limit: number, tables: readonly MovedTable[] = MOVED_TABLES): Promise<CapturedChange[]> {
  const { results } = await db
    .prepare("SELECT seq, tbl, key FROM panel_move_changes WHERE panel_id = ? AND seq > ? ORDER BY seq LIMIT ?")
    .bind(panelId, afterSeq, limit)
    .all<{ seq: number; tbl: string; key: string }>();
  return results.map((r) => {
    const table = tables === MOVED_TABLES ? movedTable(r.tbl) : tables.find((t) => t.name === r.tbl);
    if (!table) throw new Error(`panel_move_changes names a table the move does not know: ${r.tbl}`);
    return { seq: r.seq, table, key: JSON.parse(r.key) as Key };
  });
}

/** How many of the panel's changes come after `afterSeq`. */
export async function changesPending(db: ShardDb, panelId: string, afterSeq: number): Promise<number> {
  const row = await db.prepare("SELECT COUNT(*) AS n FROM panel_move_changes WHERE panel_id = ? AND seq > ?").bind(panelId, afterSeq).first<{ n: number }>();
  return row?.n ?? 0;
}

export async function forgetChanges(db: ShardDb, panelId: string): Promise<void> {
  await db.prepare("DELETE FROM panel_move_changes WHERE panel_id = ?").bind(panelId).run();
}
