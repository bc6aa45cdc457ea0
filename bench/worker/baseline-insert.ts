import { shardByIndex } from "../../src/store/shards";
import { contactShapedTable } from "./contact-table";

// Baseline for bench:api: one bare D1 insert of a contact-shaped row, nothing else. `shard=N`
// inserts into SHARD_N (default 0): bench:bigpanel's baseline on a contact's own partition.
export async function baselineInsert(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const shard = Number(url.searchParams.get("shard") ?? "0");
  const db = shardByIndex(env, shard)!;
  await contactShapedTable(db, shard, "bench_baseline");
  const now = Date.now();
  // The bucket a contact carries: a column value here (the service hashes the key for it).
  await db.prepare("INSERT INTO bench_baseline (panel_id, pk_value, attrs, created_at, updated_at, bucket) VALUES (?, ?, ?, ?, ?, ?)")
    .bind("bench", url.searchParams.get("key") ?? crypto.randomUUID(), url.searchParams.get("attrs") ?? "{}", now, now, now % 4096)
    .run();
  return new Response("ok");
}
