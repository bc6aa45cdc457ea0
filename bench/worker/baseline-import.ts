// Baseline for bench:import: the rows of the benchmark CSV upserted with bare multi-row D1
// statements (the same statement shape the import uses, 49 rows a statement, 41 statements a
// batch), generated in the Worker: no download, parsing, checks, checkpoint or queue.
import { shardByIndex } from "../../src/store/shards";
import { ROW_CITIES } from "./import-rows";
import { contactShapedTable } from "./contact-table";
import { shardsOfKeys } from "./partitions";

const ROWS_PER_STATEMENT = 49;
const STATEMENTS_PER_BATCH = 41;

function upsertSql(rows: number): string {
  // The bucket a value of the row's size (a contact's is a hash of its key, the service's work),
  // taken from the time: a parameter more per row would pass D1's 100 a statement.
  const values = Array.from({ length: rows }, (_, i) => `(?1, ?${3 + 2 * i}, ?${4 + 2 * i}, ?2, ?2, ?2 % 4096)`);
  return `INSERT INTO bench_import_baseline (panel_id, pk_value, attrs, created_at, updated_at, bucket) VALUES ${values.join(", ")}
    ON CONFLICT (panel_id, pk_value) DO UPDATE SET attrs = json_patch(bench_import_baseline.attrs, excluded.attrs), updated_at = excluded.updated_at`;
}

/**
 * POST /__bench/import-upsert?start=&count=: upserts rows start..start+count-1 of the benchmark
 * file into SHARD_0; with `panel=ID` (bench:bigpanel), each row into its own partition's shard
 * by that panel's map, as a routed import writes it.
 */
export async function baselineImportUpsert(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const start = Number(url.searchParams.get("start") ?? 0);
  const count = Number(url.searchParams.get("count") ?? 0);
  const panel = url.searchParams.get("panel");
  const rows = Array.from({ length: count }, (_, i) => start + i);
  const byShard = panel
    ? [...(await shardsOfKeys(env, panel, rows.map((i) => `user${i}@example.com`)))].map(([shard, keys]) => [shard, keys.map((k) => Number(k.key.slice(4, k.key.indexOf("@"))))] as const)
    : [[0, rows] as const];
  await Promise.all(byShard.map(([shard, part]) => upsertRows(shardByIndex(env, shard)!, shard, part)));
  return new Response(String(count));
}

async function upsertRows(db: D1Database, shard: number, rows: readonly number[]): Promise<void> {
  await contactShapedTable(db, shard, "bench_import_baseline");
  const now = Date.now();
  let statements: D1PreparedStatement[] = [];
  for (let from = 0; from < rows.length; from += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(from, from + ROWS_PER_STATEMENT);
    const params: unknown[] = ["bench", now];
    for (const i of chunk) {
      params.push(
        `user${i}@example.com`,
        JSON.stringify({ NAME: `User ${i}`, EMAIL: `user${i}@example.com`, MOBILE: `+9198${String(i).padStart(8, "0")}`, AGE: 20 + (i % 50), CITY: ROW_CITIES[i % ROW_CITIES.length] }),
      );
    }
    statements.push(db.prepare(upsertSql(chunk.length)).bind(...params));
    if (statements.length === STATEMENTS_PER_BATCH) {
      await db.batch(statements);
      statements = [];
    }
  }
  if (statements.length) await db.batch(statements);
}

/**
 * POST /__bench/download?url=: the file fetched and stored in R2 as the import's first phase does
 * (a FixedLengthStream into FILES.put), with none of its limits, then deleted: the least an import
 * must do before its rows, locally through the same outbound hop and R2 as the service's.
 */
export async function baselineDownload(request: Request, env: Env): Promise<Response> {
  const response = await fetch(new URL(request.url).searchParams.get("url")!);
  if (!response.ok || !response.body) return new Response(`the file answered ${response.status}`, { status: 502 });
  const fixed = new FixedLengthStream(Number(response.headers.get("content-length")));
  const key = `bench/download-${crypto.randomUUID()}`;
  const [, stored] = await Promise.all([response.body.pipeTo(fixed.writable), env.FILES.put(key, fixed.readable)]);
  await env.FILES.delete(key);
  return new Response(String(stored?.size ?? 0));
}
