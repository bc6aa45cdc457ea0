import { shardByIndex } from "../../src/store/shards";

// Baseline for bench:api: one bare D1 insert of a contact-shaped row, nothing else. `shard=N`
// inserts into SHARD_N (default 0): bench:bigpanel's baseline on a contact's own partition.
const tableReady = new Map<number, Promise<unknown>>();

function ensureTable(db: D1Database, shard: number): Promise<unknown> {
  let ready = tableReady.get(shard);
  if (!ready) tableReady.set(shard, (ready = db
    .prepare(
      `CREATE TABLE IF NOT EXISTS bench_baseline (
         id INTEGER PRIMARY KEY AUTOINCREMENT, panel_id TEXT NOT NULL, pk_value TEXT NOT NULL,
         attrs TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, UNIQUE (panel_id, pk_value))`,
    )
    .run()));
  return ready;
}

export async function baselineInsert(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const shard = Number(url.searchParams.get("shard") ?? "0");
  const db = shardByIndex(env, shard)!;
  await ensureTable(db, shard);
  const now = Date.now();
  await db.prepare("INSERT INTO bench_baseline (panel_id, pk_value, attrs, created_at, updated_at) VALUES (?, ?, ?, ?, ?)")
    .bind("bench", url.searchParams.get("key") ?? crypto.randomUUID(), url.searchParams.get("attrs") ?? "{}", now, now)
    .run();
  return new Response("ok");
}
