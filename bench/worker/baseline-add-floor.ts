import { contactBucket } from "../../src/domain/partitions";
import { shardByIndex } from "../../src/store/shards";
import { contactShapedTable } from "./contact-table";

// bench:api's second baseline, the floor of a contact add: the work the call cannot do without,
// written as tightly as it can be and nothing else. The POST's form body read and parsed, `data`
// parsed, the key taken from a Map (the service's key cache), one upsert merging the attributes
// and reading the merged row back (the answer returns the contact), and the envelope's JSON
// answer with a request id. No checks of the attributes, no log line, no security or CORS
// headers, no metrics, no reactions: what the service adds to this is its own cost. `shard=N`
// upserts into SHARD_N (default 0): bench:bigpanel's floor on the key's partition.
const keys = new Map<string, string>();
const utf8 = new TextDecoder();

export async function baselineAddFloor(request: Request, env: Env): Promise<Response> {
  // Read as the service reads a body (lib/http/body.ts), so the two profiles compare: V8's profiler put a quarter
  // of this baseline's samples in request.text(), though text() and this read cost the same req/s and CPU unprofiled.
  const form = new URLSearchParams(utf8.decode(await request.arrayBuffer()));
  const apiKey = new URL(request.url).searchParams.get("apikey") ?? "";
  let panelId = keys.get(apiKey);
  if (panelId === undefined) keys.set(apiKey, (panelId = "bench-floor"));
  const data = JSON.parse(form.get("data") ?? "{}") as Record<string, unknown>;
  const key = String(data.EMAIL ?? crypto.randomUUID());
  const shard = Number(new URL(request.url).searchParams.get("shard") ?? "0");
  const db = shardByIndex(env, shard)!;
  await contactShapedTable(db, shard, "bench_floor");
  const now = Date.now();
  const row = await db
    .prepare(
      `INSERT INTO bench_floor (panel_id, pk_value, attrs, created_at, updated_at, bucket)
       VALUES (?1, ?2, json_patch('{}', ?3), ?4, ?4, ?5)
       ON CONFLICT (panel_id, pk_value) DO UPDATE SET attrs = json_patch(bench_floor.attrs, ?3), updated_at = ?4
       RETURNING id, pk_value, attrs, created_at, updated_at`,
    )
    .bind(panelId, key, JSON.stringify(data), now, contactBucket(panelId, key))
    .first<{ attrs: string }>();
  const contact = JSON.parse(row!.attrs) as Record<string, unknown>;
  return new Response(JSON.stringify({ requestid: crypto.randomUUID().replaceAll("-", ""), result: "Success", contact }), {
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}
