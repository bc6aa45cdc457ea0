import type { ShardDb } from "../shards";
import { rowsAfter, type Key, type Row } from "./rows";
import { movedTable } from "./tables";

/**
 * A panel's stops by address (email and SMS suppressions) hold panel wide, but each shard's
 * sends read their own shard's: a split's target takes every stop its source holds (decision
 * 0047), added where the target has none for the address (a stop it recorded itself stays as it
 * is). The source keeps its own: its contacts' sends read them.
 */
const STOP_TABLES = ["email_suppressions", "sms_suppressions"] as const;

const ROWS_PER_BATCH = 100;

/** Copies the panel's stops from `source` to `target`, in pages of `pageRows`; how many rows were read. */
export async function copyStops(source: ShardDb, target: ShardDb, panelId: string, pageRows: number): Promise<number> {
  let read = 0;
  for (const name of STOP_TABLES) {
    const table = movedTable(name)!;
    for (let after: Key | null = null; ; ) {
      const { rows, next } = await rowsAfter(source, table, panelId, after, pageRows);
      for (let i = 0; i < rows.length; i += ROWS_PER_BATCH) await target.batch(rows.slice(i, i + ROWS_PER_BATCH).map((row) => insertIfAbsent(target, name, row)));
      read += rows.length;
      if (next === null) break;
      after = next;
    }
  }
  return read;
}

function insertIfAbsent(db: ShardDb, table: string, row: Row): D1PreparedStatement {
  const columns = Object.keys(row);
  return db.prepare(`INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map((_, i) => `?${i + 1}`).join(", ")}) ON CONFLICT DO NOTHING`).bind(...columns.map((c) => row[c]));
}
