import { floorStatements, idFloor, ID_RANGE_SIZE } from "../id-ranges";
import type { ShardDb } from "../shards";
import { childrenOf, scopeOf, type MovedTable } from "./tables";

// Reading a moving panel's rows on the shard it leaves and writing them, as they are, on the
// shard it goes to (decision 0031). Rows keep their ids and every column; the target's triggers
// leave them alone while the panel is in transit there (migrations/shard/0054).

export type Row = Record<string, unknown>;
export type Key = unknown[];

/** Parameters per D1 statement are capped at 100: keys are read and written a row per statement. */
const ROWS_PER_BATCH = 100;

const keyColumns = (t: MovedTable) => t.key.join(", ");
const keyParams = (t: MovedTable, from: number) => t.key.map((_, i) => `?${from + i}`).join(", ");

/** The row's primary key, in the table's key order. */
export function keyOf(t: MovedTable, row: Row): Key {
  return t.key.map((column) => row[column]);
}

/** The panel's rows of `t` after `after` in key order (from the start when null), at most `limit`. */
export async function rowsAfter(db: ShardDb, t: MovedTable, panelId: string, after: Key | null, limit: number): Promise<Row[]> {
  const past = after ? ` AND (${keyColumns(t)}) > (${keyParams(t, 2)})` : "";
  const { results } = await db
    .prepare(`SELECT r.* FROM ${t.name} AS r WHERE ${scopeOf(t, "r")}${past} ORDER BY ${t.key.map((c) => `r.${c}`).join(", ")} LIMIT ${limit}`)
    .bind(panelId, ...(after ?? []))
    .all<Row>();
  return results;
}

/** The rows of `t` with these keys as they are now, in the keys' order; null for a key with no row (or another panel's). */
export async function rowsByKey(db: ShardDb, t: MovedTable, panelId: string, keys: readonly Key[]): Promise<Array<Row | null>> {
  const found: Array<Row | null> = [];
  for (let i = 0; i < keys.length; i += ROWS_PER_BATCH) {
    const page = keys.slice(i, i + ROWS_PER_BATCH);
    const statement = db.prepare(`SELECT r.* FROM ${t.name} AS r WHERE (${keyColumns(t)}) = (${keyParams(t, 2)}) AND ${scopeOf(t, "r")}`);
    const results = await db.batch<Row>(page.map((key) => statement.bind(panelId, ...key)));
    for (const result of results) found.push(result.results[0] ?? null);
  }
  return found;
}

/** A row to write on the target, or a key whose row is gone and must go there too. */
export type RowChange = { table: MovedTable; row: Row } | { table: MovedTable; gone: Key };

/**
 * Statements that make the target hold each change, in order, for one D1 batch (a transaction):
 * an upsert by primary key that waits for its parent (a row naming a parent the target does not
 * hold yet is left out: the parent came later, so both are in the changes still to copy); a gone
 * row's delete takes the rows naming it along (the source deleted those first). Batches of 100
 * changes, each a transaction.
 */
export async function writeChanges(target: ShardDb, changes: readonly RowChange[]): Promise<void> {
  for (let i = 0; i < changes.length; i += ROWS_PER_BATCH) await target.batch(writeStatements(target, changes.slice(i, i + ROWS_PER_BATCH)));
}

function writeStatements(target: ShardDb, changes: readonly RowChange[]): D1PreparedStatement[] {
  const statements = [target.prepare("PRAGMA defer_foreign_keys = ON")];
  for (const change of changes) {
    const t = change.table;
    if ("row" in change) {
      statements.push(upsert(target, t, change.row));
    } else {
      statements.push(...deleteWithChildren(target, t, change.gone));
    }
  }
  return statements;
}

function upsert(db: ShardDb, t: MovedTable, row: Row): D1PreparedStatement {
  const columns = Object.keys(row);
  const values = columns.map((_, i) => `?${i + 1}`).join(", ");
  const waits = (t.parents ?? []).map((p) => {
    const i = columns.indexOf(p.column) + 1;
    const panel = p.inPanel ? ` AND panel_id = ?${columns.indexOf("panel_id") + 1}` : "";
    return `(?${i} IS NULL OR EXISTS (SELECT 1 FROM ${p.table} WHERE id = ?${i}${panel}))`;
  });
  const updates = columns.filter((c) => !t.key.includes(c)).map((c) => `${c} = excluded.${c}`);
  // Only the panel's own row is updated: a row of another panel holding the same key stays.
  const own = columns.includes("panel_id") ? ` WHERE ${t.name}.panel_id = excluded.panel_id` : "";
  const onKey = updates.length ? `ON CONFLICT (${keyColumns(t)}) DO UPDATE SET ${updates.join(", ")}${own}` : `ON CONFLICT (${keyColumns(t)}) DO NOTHING`;
  // A row holding a unique value (a contact's key) that a row still to be deleted holds too is
  // left out: that delete comes first among the changes still to copy, then this row again.
  return db
    .prepare(`INSERT INTO ${t.name} (${columns.join(", ")}) SELECT ${values} WHERE ${waits.length ? waits.join(" AND ") : "true"} ${onKey} ON CONFLICT DO NOTHING`)
    .bind(...columns.map((c) => row[c] ?? null));
}

function deleteWithChildren(db: ShardDb, t: MovedTable, key: Key): D1PreparedStatement[] {
  const statements: D1PreparedStatement[] = [];
  if (t.key.length === 1) {
    for (const child of childrenOf(t.name)) statements.push(db.prepare(`DELETE FROM ${child.table.name} WHERE ${child.column} = ?`).bind(key[0]));
    // The marks of a message go with it (a trigger's work on the source, silent on the target).
    if (t.name === "journey_messages") statements.push(db.prepare("DELETE FROM journey_message_marks WHERE msgid = ?").bind(key[0]));
  } else if (t.key.join() === "panel_id,id") {
    // A parent numbered per panel (lists): its children name it by (panel_id, column).
    for (const child of childrenOf(t.name)) statements.push(db.prepare(`DELETE FROM ${child.table.name} WHERE panel_id = ? AND ${child.column} = ?`).bind(key[0], key[1]));
  }
  statements.push(db.prepare(`DELETE FROM ${t.name} WHERE (${keyColumns(t)}) = (${keyParams(t, 1)})`).bind(...key));
  return statements;
}

function countStatement(db: ShardDb, t: MovedTable, panelId: string): D1PreparedStatement {
  return db.prepare(`SELECT COUNT(*) AS n FROM ${t.name} AS r WHERE ${scopeOf(t, "r")}`).bind(panelId);
}

/** Per table, how many rows the panel has on a shard. */
export async function countRows(db: ShardDb, tables: readonly MovedTable[], panelId: string): Promise<number[]> {
  const results = await db.batch<{ n: number }>(tables.map((t) => countStatement(db, t, panelId)));
  return results.map((r) => r.results[0]?.n ?? 0);
}

/** Deletes up to `limit` of the panel's rows of `t`; how many went. */
export async function deleteSome(db: ShardDb, t: MovedTable, panelId: string, limit: number): Promise<number> {
  const result = await db
    .prepare(`DELETE FROM ${t.name} WHERE (${keyColumns(t)}) IN (SELECT ${t.key.map((c) => `r.${c}`).join(", ")} FROM ${t.name} AS r WHERE ${scopeOf(t, "r")} LIMIT ${limit})`)
    .bind(panelId)
    .run();
  return result.meta.changes ?? 0;
}

/**
 * The first table where the panel holds a row whose id the target's AUTOINCREMENT counter has
 * not passed yet but may hand out later: ids inside the target's range, above its counter. Only
 * rows made before their shard had its id range can be there (decision 0030); null when none.
 * A row whose id the target holds already for another panel is left alone by the copy (the
 * upsert updates only the panel's own rows), so the counts differ and the move fails safe.
 */
export async function idsAheadOfCounter(source: ShardDb, target: ShardDb, targetShard: number, tables: readonly MovedTable[], panelId: string): Promise<string | null> {
  const withIds = tables.filter((t) => t.autoincrement);
  const counters = await target.batch<{ seq: number }>(withIds.map((t) => target.prepare("SELECT seq FROM sqlite_sequence WHERE name = ?").bind(t.name)));
  const ceiling = idFloor(targetShard) + ID_RANGE_SIZE;
  const found = await source.batch<{ id: number }>(
    withIds.map((t, i) => source.prepare(`SELECT id FROM ${t.name} WHERE id > ? AND id < ? AND panel_id = ? LIMIT 1`).bind(counters[i]!.results[0]?.seq ?? 0, ceiling, panelId)),
  );
  const hit = found.findIndex((r) => r.results.length > 0);
  return hit < 0 ? null : withIds[hit]!.name;
}

/**
 * Whether the panel holds ids above every id the target's tables handed out: copied there, they
 * would make the target go on in the source's range (AUTOINCREMENT hands out one above the
 * largest id a table holds), so the target first takes a range of its own above them all.
 */
export async function idsAboveTarget(source: ShardDb, target: ShardDb, tables: readonly MovedTable[], panelId: string): Promise<boolean> {
  const withIds = tables.filter((t) => t.autoincrement);
  const [highest, counters] = await Promise.all([
    source.batch<{ id: number | null }>(withIds.map((t) => source.prepare(`SELECT MAX(id) AS id FROM ${t.name} WHERE panel_id = ?`).bind(panelId))),
    target.batch<{ id: number | null }>(withIds.map((t) => target.prepare(`SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = '${t.name}'), 0), COALESCE((SELECT MAX(id) FROM ${t.name}), 0)) AS id`))),
  ]);
  return withIds.some((_, i) => (highest[i]!.results[0]?.id ?? 0) > (counters[i]!.results[0]?.id ?? 0));
}

/** Lifts every id counter of the shard to `range`'s start (decision 0030's placeholders). */
export async function liftIdFloor(db: ShardDb, range: number): Promise<void> {
  await db.batch(floorStatements(range * ID_RANGE_SIZE).map((sql) => db.prepare(sql)));
}
