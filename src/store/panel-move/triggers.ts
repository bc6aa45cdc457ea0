import { PANEL_MOVING_MARK } from "../../lib/moving";
import type { ShardDb } from "../shards";
import { MOVED_TABLES, movedTable, scopeOf, type MovedTable } from "./tables";
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
 */
export async function raiseFence(db: ShardDb, panelId: string, tables: readonly MovedTable[] = MOVED_TABLES, transit: string = panelId): Promise<void> {
  await db.batch(
    tables.flatMap((t) =>
      OPERATIONS.map(({ op, row }) =>
        db.prepare(
          `CREATE TRIGGER IF NOT EXISTS ${fenceName(t, op, panelId)} BEFORE ${op} ON ${t.name}
           WHEN ${rowScope(t, row, panelId)}${op === "DELETE" ? ` AND NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = '${transit}')` : ""}
           BEGIN SELECT RAISE(ABORT, '${PANEL_MOVING_MARK}'); END`,
        ),
      ),
    ),
  );
}

export async function liftFence(db: ShardDb, panelId: string): Promise<void> {
  await db.batch(MOVED_TABLES.flatMap((t) => OPERATIONS.map(({ op }) => db.prepare(`DROP TRIGGER IF EXISTS ${fenceName(t, op, panelId)}`))));
}

/**
 * What a partition move marks in transit on its source while it deletes the moved rows: the
 * fence lets those deletes pass, and no other trigger names it (they test their row's panel_id),
 * so the rows that stay keep being counted. Panel ids hold no "/" (safePanelId).
 */
export function splitTransitMark(panelId: string): string {
  return `${panelId}/split`;
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
