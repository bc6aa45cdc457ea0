// Baseline for bench:import: the rows of the benchmark CSV upserted with bare multi-row D1
// statements (the same statement shape the import uses, 49 rows a statement, 41 statements a
// batch), generated in the Worker: no download, parsing, checks, checkpoint or queue.
import { ROW_CITIES } from "./import-rows";

let tableReady: Promise<unknown> | undefined;

function ensureTable(db: D1Database): Promise<unknown> {
  tableReady ??= db
    .prepare(
      `CREATE TABLE IF NOT EXISTS bench_import_baseline (
         id INTEGER PRIMARY KEY AUTOINCREMENT, panel_id TEXT NOT NULL, pk_value TEXT NOT NULL,
         attrs TEXT NOT NULL DEFAULT '{}', created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, UNIQUE (panel_id, pk_value))`,
    )
    .run();
  return tableReady;
}

const ROWS_PER_STATEMENT = 49;
const STATEMENTS_PER_BATCH = 41;

function upsertSql(rows: number): string {
  const values = Array.from({ length: rows }, (_, i) => `(?1, ?${3 + 2 * i}, ?${4 + 2 * i}, ?2, ?2)`);
  return `INSERT INTO bench_import_baseline (panel_id, pk_value, attrs, created_at, updated_at) VALUES ${values.join(", ")}
    ON CONFLICT (panel_id, pk_value) DO UPDATE SET attrs = json_patch(bench_import_baseline.attrs, excluded.attrs), updated_at = excluded.updated_at`;
}

/** POST /__bench/import-upsert?start=&count=: upserts rows start..start+count-1 of the benchmark file. */
export async function baselineImportUpsert(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const start = Number(url.searchParams.get("start") ?? 0);
  const count = Number(url.searchParams.get("count") ?? 0);
  await ensureTable(env.SHARD_0);
  const now = Date.now();
  let statements: D1PreparedStatement[] = [];
  for (let from = start; from < start + count; from += ROWS_PER_STATEMENT) {
    const to = Math.min(start + count, from + ROWS_PER_STATEMENT);
    const params: unknown[] = ["bench", now];
    for (let i = from; i < to; i++) {
      params.push(
        `user${i}@example.com`,
        JSON.stringify({ NAME: `User ${i}`, EMAIL: `user${i}@example.com`, MOBILE: `+9198${String(i).padStart(8, "0")}`, AGE: 20 + (i % 50), CITY: ROW_CITIES[i % ROW_CITIES.length] }),
      );
    }
    statements.push(env.SHARD_0.prepare(upsertSql(to - from)).bind(...params));
    if (statements.length === STATEMENTS_PER_BATCH) {
      await env.SHARD_0.batch(statements);
      statements = [];
    }
  }
  if (statements.length) await env.SHARD_0.batch(statements);
  return new Response(String(count));
}
