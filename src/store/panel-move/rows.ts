import { floorStatements, idFloor, ID_RANGE_SIZE } from "../id-ranges";
import type { ShardDb } from "../shards";
import { childrenOf, scopeOf, type BucketRange, type MovedTable } from "./tables";

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

/** A page of the copy: the panel's rows read, and the key to read on from (null: the table is done). */
export interface Page {
  rows: Row[];
  next: Key | null;
}

/** How many of a table's keys a page whose key does not start with the panel looks at, at most: each statement stays bounded. */
export const SCAN_ROWS_PER_PAGE = 5_000;

const keyColumnsOf = (t: MovedTable, alias: string) => t.key.map((c) => `${alias}.${c}`).join(", ");

/**
 * The page query of `t` (exported for the test that reads its plan): keyset pagination in the
 * order of the table's primary key, so SQLite walks that index from the cursor and never sorts
 * (a sort of the panel's rows per page made the copy quadratic, issue 42).
 * - Key starting with panel_id: the panel's rows only, from `(rest of key) > cursor`.
 * - Any other key: the key range (cursor, end], end the window's last key (SCAN_ROWS_PER_PAGE
 *   keys on), other panels' rows skipped; `+panel_id` keeps a panel index (and its sort) out.
 *   The parameters are the panel, the cursor, then the window's end.
 */
export function pageQuery(t: MovedTable, hasCursor: boolean, hasEnd: boolean, limit: number): string {
  const order = `ORDER BY ${keyColumnsOf(t, "r")} LIMIT ${limit}`;
  if (t.key[0] === "panel_id") {
    const rest = t.key.slice(1);
    const past = hasCursor && rest.length ? ` AND (${rest.map((c) => `r.${c}`).join(", ")}) > (${rest.map((_, i) => `?${i + 2}`).join(", ")})` : "";
    // The scope is `r.panel_id = ?1`, narrowed to a bucket range for a partition move.
    return `SELECT r.* FROM ${t.name} AS r WHERE ${scopeOf(t, "r")}${past} ${order}`;
  }
  const columns = keyColumnsOf(t, "r");
  const past = hasCursor ? ` AND (${columns}) > (${keyParams(t, 2)})` : "";
  const until = hasEnd ? ` AND (${columns}) <= (${keyParams(t, hasCursor ? 2 + t.key.length : 2)})` : "";
  return `SELECT r.* FROM ${t.name} AS r WHERE ${scopeOf(t, "r").replaceAll("r.panel_id", "+r.panel_id")}${past}${until} ${order}`;
}

/** The last key of the next `scan` keys of `t` after the cursor (its primary key's index, covering); null when fewer are left. */
export function windowEndQuery(t: MovedTable, hasCursor: boolean, scan: number): string {
  const columns = keyColumnsOf(t, "r");
  const past = hasCursor ? ` WHERE (${columns}) > (${keyParams(t, 1)})` : "";
  return `SELECT ${columns} FROM ${t.name} AS r${past} ORDER BY ${columns} LIMIT 1 OFFSET ${scan - 1}`;
}

/** The panel's rows of `t` after `after` in key order (from the start when null), at most `limit`, and where the next page starts. */
export async function rowsAfter(db: ShardDb, t: MovedTable, panelId: string, after: Key | null, limit: number, scan = Math.max(SCAN_ROWS_PER_PAGE, limit)): Promise<Page> {
  if (t.key[0] === "panel_id") {
    const { results } = await db.prepare(pageQuery(t, after !== null, false, limit)).bind(panelId, ...(after ? after.slice(1) : [])).all<Row>();
    // A table keyed by the panel alone holds one row of it: the first page has it all.
    const more = results.length === limit && t.key.length > 1;
    return { rows: results, next: more ? keyOf(t, results[results.length - 1]!) : null };
  }
  const end = await db.prepare(windowEndQuery(t, after !== null, scan)).bind(...(after ?? [])).raw<unknown[]>();
  const endKey = end[0] ?? null;
  const { results } = await db
    .prepare(pageQuery(t, after !== null, endKey !== null, limit))
    .bind(panelId, ...(after ?? []), ...(endKey ?? []))
    .all<Row>();
  if (results.length === limit) return { rows: results, next: keyOf(t, results[results.length - 1]!) };
  return { rows: results, next: endKey };
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

/**
 * Per table, the panel's rows whose key is not among `changed` (a query yielding `key`, a key as
 * the capture writes it: a JSON array): all its rows counted on the table's panel index, less
 * the changed keys that have a row, each found by primary key. Never a scan per changed key.
 */
function countBeside(t: MovedTable, changed: string): string {
  const match = t.key.map((c, i) => `r.${c} = json_extract(c.key, '$[${i}]')`).join(" AND ");
  return `SELECT (SELECT COUNT(*) FROM ${t.name} AS r WHERE ${scopeOf(t, "r")})
    - (SELECT COUNT(*) FROM (${changed}) AS c WHERE EXISTS (SELECT 1 FROM ${t.name} AS r WHERE ${match} AND ${scopeOf(t, "r")})) AS n`;
}

/**
 * Compares the copy with the panel's rows while the panel still takes writes (issue 42: the
 * comparison stood in the write pause, a count of every row). In one read of the source (a
 * transaction), per table, the panel's rows less those whose key changed after `afterSeq`, and
 * those keys; the target, which holds every change up to `afterSeq`, must hold as many rows
 * outside the same keys. The keys changed later are compared one by one under the fence
 * (changedRowsDiffer). The tables that differ, with both counts.
 */
export async function copyDiffers(source: ShardDb, target: ShardDb, tables: readonly MovedTable[], panelId: string, afterSeq: number): Promise<Array<{ table: MovedTable; had: number; has: number }>> {
  const read = await source.batch<{ tbl?: string; key?: string; n?: number }>([
    source.prepare("SELECT DISTINCT tbl, key FROM panel_move_changes WHERE panel_id = ?1 AND seq > ?2").bind(panelId, afterSeq),
    ...tables.map((t) =>
      source.prepare(countBeside(t, `SELECT DISTINCT key FROM panel_move_changes WHERE panel_id = ?1 AND tbl = '${t.name}' AND seq > ?2`)).bind(panelId, afterSeq),
    ),
  ]);
  const changed = new Map<string, string[]>();
  for (const { tbl, key } of read[0]!.results) changed.set(tbl!, [...(changed.get(tbl!) ?? []), key!]);
  const had = read.slice(1).map((r) => r.results[0]?.n ?? 0);
  const counted = await target.batch<{ n: number }>(
    tables.map((t) => target.prepare(countBeside(t, "SELECT DISTINCT value AS key FROM json_each(?2)")).bind(panelId, JSON.stringify(changed.get(t.name) ?? []))),
  );
  const has = counted.map((r) => r.results[0]?.n ?? 0);
  return tables.flatMap((table, i) => (had[i] === has[i] ? [] : [{ table, had: had[i]!, has: has[i]! }]));
}

/** The keys changed after `afterSeq` whose row the source and the target do not both hold or both lack, as "table key". */
export async function changedRowsDiffer(source: ShardDb, target: ShardDb, panelId: string, changes: readonly { table: MovedTable; key: Key }[]): Promise<string[]> {
  const byTable = new Map<MovedTable, Map<string, Key>>();
  for (const { table, key } of changes) {
    const keys = byTable.get(table) ?? new Map<string, Key>();
    keys.set(JSON.stringify(key), key);
    byTable.set(table, keys);
  }
  const differ: string[] = [];
  for (const [table, keys] of byTable) {
    const list = [...keys.values()];
    const [there, here] = await Promise.all([rowsByKey(source, table, panelId, list), rowsByKey(target, table, panelId, list)]);
    list.forEach((key, i) => {
      if ((there[i] === null) !== (here[i] === null)) differ.push(`${table.name} ${JSON.stringify(key)} ${there[i] ? "missing from the copy" : "left on the copy"}`);
    });
  }
  return differ;
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

/**
 * Why the panel's rows in buckets `range` cannot move apart from its other rows (a partition
 * split, decision 0047), or null: an anonymous profile keyed by its uniqueid's bucket whose
 * contact is on the other side of the split (its foreign key would name a contact the shard does
 * not hold). Journey instances move with their contact (their journeys are mirrored).
 */
export async function rowsTiedAcross(db: ShardDb, panelId: string, range: BucketRange): Promise<string | null> {
  const tied = await db
    .prepare(
      `SELECT EXISTS (SELECT 1 FROM anon_profiles a JOIN contacts c ON c.id = a.contact_id
       WHERE a.panel_id = ?1 AND (a.bucket BETWEEN ?2 AND ?3) <> (c.bucket BETWEEN ?2 AND ?3)) AS found`,
    )
    .bind(panelId, range.first, range.last)
    .first<number>("found");
  return tied ? "an anonymous profile of the panel is joined to a contact on the other side of the split point" : null;
}
