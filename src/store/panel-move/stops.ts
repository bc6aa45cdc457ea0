import type { ShardDb } from "../shards";
import { keyOf, rowsAfter, rowsByKey, type Key, type Row } from "./rows";
import { movedTable } from "./tables";

/**
 * A panel's stops by address (email and SMS suppressions) hold panel wide, but each shard's
 * sends read their own shard's: a split's target takes every stop its source holds (decision
 * 0047), added where the target has none for the address (a stop it recorded itself stays as it
 * is). The source keeps its own: its contacts' sends read them.
 */
export const STOP_TABLES = ["email_suppressions", "sms_suppressions"] as const;
export type StopTable = (typeof STOP_TABLES)[number];

const ROWS_PER_BATCH = 100;

/** Copies the panel's stops from `source` to `target`, in pages of `pageRows` (copyStopPage's); how many rows were read. */
export async function copyStops(source: ShardDb, target: ShardDb, panelId: string, pageRows: number): Promise<number> {
  let read = 0;
  for (const name of STOP_TABLES) {
    for (let after: Key | null = null; ; ) {
      const page = await copyStopPage(source, [target], name, panelId, after, pageRows);
      read += page.read;
      if (page.next === null) break;
      after = page.next;
    }
  }
  return read;
}

/** What one page of copyStopPage did: where the next starts (null: the table is done), rows read, copies added. */
export interface StopPage {
  next: Key | null;
  read: number;
  added: number;
}

/**
 * One page of the panel's stops in `name` on `source` (those after `after`, at most `pageRows`),
 * added on each of `targets` where it has none for the address or number (one it recorded itself
 * stays as it is). A stop the source lost while the page was copied (a lift, which deletes it on
 * every shard, or an erasure's rewrite under a hash) is taken off again where this page added it,
 * so that it does not come back: one read of those keys on the source after the writes, and a
 * delete of only the row added, as added (a stop a target recorded meanwhile has other values).
 */
export async function copyStopPage(source: ShardDb, targets: readonly ShardDb[], name: StopTable, panelId: string, after: Key | null, pageRows: number): Promise<StopPage> {
  const table = movedTable(name)!;
  const { rows, next } = await rowsAfter(source, table, panelId, after, pageRows);
  const added = await Promise.all(
    targets.map(async (target) => {
      const kept: Row[] = [];
      for (let i = 0; i < rows.length; i += ROWS_PER_BATCH) {
        const page = rows.slice(i, i + ROWS_PER_BATCH);
        const results = await target.batch(page.map((row) => insertIfAbsent(target, name, row)));
        results.forEach((result, j) => {
          if ((result.meta.changes ?? 0) > 0) kept.push(page[j]!);
        });
      }
      return kept;
    }),
  );
  const copied = [...new Map(added.flat().map((row) => [JSON.stringify(keyOf(table, row)), row])).values()];
  if (copied.length) {
    const still = await rowsByKey(source, table, panelId, copied.map((row) => keyOf(table, row)));
    const lost = new Set(copied.filter((_, i) => still[i] === null).map((row) => JSON.stringify(keyOf(table, row))));
    if (lost.size) {
      await Promise.all(
        targets.map(async (target, t) => {
          const undo = added[t]!.filter((row) => lost.has(JSON.stringify(keyOf(table, row))));
          for (let i = 0; i < undo.length; i += ROWS_PER_BATCH) await target.batch(undo.slice(i, i + ROWS_PER_BATCH).map((row) => deleteAsAdded(target, name, table.key, row)));
        }),
      );
    }
  }
  return { next, read: rows.length, added: added.reduce((n, rows) => n + rows.length, 0) };
}

/** Deletes `row` only if it is still as written: its key's columns equal, every other column the same value (NULL too). */
function deleteAsAdded(db: ShardDb, table: string, key: readonly string[], row: Row): D1PreparedStatement {
  const columns = Object.keys(row);
  const conditions = columns.map((c, i) => `${c} ${key.includes(c) ? "=" : "IS"} ?${i + 1}`);
  return db.prepare(`DELETE FROM ${table} WHERE ${conditions.join(" AND ")}`).bind(...columns.map((c) => row[c]));
}

function insertIfAbsent(db: ShardDb, table: string, row: Row): D1PreparedStatement {
  const columns = Object.keys(row);
  return db.prepare(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `?${i + 1}`).join(", ")}) ON CONFLICT DO NOTHING`).bind(...columns.map((c) => row[c]));
}
