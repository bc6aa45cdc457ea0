// Baseline for bench:api: one bare D1 insert of a contact-shaped row, nothing else.
let tableReady: Promise<unknown> | undefined;

function ensureTable(db: D1Database): Promise<unknown> {
  tableReady ??= db
    .prepare(
      `CREATE TABLE IF NOT EXISTS bench_baseline (
         id INTEGER PRIMARY KEY AUTOINCREMENT, panel_id TEXT NOT NULL, pk_value TEXT NOT NULL,
         attrs TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, UNIQUE (panel_id, pk_value))`,
    )
    .run();
  return tableReady;
}

export async function baselineInsert(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  await ensureTable(env.SHARD_0);
  const now = Date.now();
  await env.SHARD_0.prepare("INSERT INTO bench_baseline (panel_id, pk_value, attrs, created_at, updated_at) VALUES (?, ?, ?, ?, ?)")
    .bind("bench", url.searchParams.get("key") ?? crypto.randomUUID(), url.searchParams.get("attrs") ?? "{}", now, now)
    .run();
  return new Response("ok");
}
