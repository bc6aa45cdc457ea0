// The baselines of contact writes (bench:api's insert, bench:import's upserts) write a table of
// the same shape as `contacts` (migrations/schema/shard.sql): its columns, its unique key and
// its `contacts_by_panel` index. A table with fewer indexes than the service's would set a
// limit no contact write could reach (issue 48: each baseline is the physical limit of its work).

const ready = new Map<string, Promise<unknown>>();

/** Creates `table` shaped as `contacts` on the shard once per isolate. */
export function contactShapedTable(db: D1Database, shard: number, table: string): Promise<unknown> {
  const key = `${shard}/${table}`;
  let made = ready.get(key);
  if (!made) {
    made = db.batch([
      db.prepare(
        `CREATE TABLE IF NOT EXISTS ${table} (
           id INTEGER PRIMARY KEY AUTOINCREMENT, panel_id TEXT NOT NULL, pk_value TEXT NOT NULL,
           attrs TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL,
           bucket INTEGER NOT NULL DEFAULT 0, UNIQUE (panel_id, pk_value))`,
      ),
      db.prepare(`CREATE INDEX IF NOT EXISTS ${table}_by_panel ON ${table} (panel_id, id)`),
    ]);
    ready.set(key, made);
  }
  return made;
}
