// Baseline for bench:retention: the bare work of moving a panel's events to R2: rows read by
// id in pages of the service's part size, written as one gzipped NDJSON object each, then
// deleted in the service's chunks. No bookkeeping, no read-back.
import { gzipText } from "../../src/lib/gzip";

const PART = 2000;
const CHUNK = 500;

export async function baselineArchive(request: Request, env: Env): Promise<Response> {
  const panel = new URL(request.url).searchParams.get("panel") ?? "";
  const started = Date.now();
  let moved = 0;
  for (;;) {
    const { results } = await env.SHARD_0.prepare("SELECT * FROM events WHERE panel_id = ? ORDER BY id LIMIT ?").bind(panel, PART).all<{ id: number }>();
    if (results.length === 0) break;
    await env.FILES.put(`bench-baseline/${panel}/part-${results[0]!.id}.ndjson.gz`, await gzipText(results.map((r) => JSON.stringify(r)).join("\n") + "\n"));
    for (let i = 0; i < results.length; i += CHUNK) {
      await env.SHARD_0.prepare("DELETE FROM events WHERE id IN (SELECT value FROM json_each(?))").bind(JSON.stringify(results.slice(i, i + CHUNK).map((r) => r.id))).run();
    }
    moved += results.length;
  }
  return Response.json({ moved, ms: Date.now() - started });
}

/** The service's own archiving of the panel, run to the end in one request. */
export async function serviceArchive(request: Request, env: Env): Promise<Response> {
  const { archivePanel } = await import("../../src/services/retention/archive");
  const { recheckArchived } = await import("../../src/services/segments/archived-events");
  const { shardByIndex } = await import("../../src/store/shards");
  const panel = new URL(request.url).searchParams.get("panel") ?? "";
  const started = Date.now();
  const moved = await archivePanel(env.FILES, { db: shardByIndex(env, 0)!, index: 0 }, { id: panel, eventRetentionDays: 1 }, Date.now(), Number.MAX_SAFE_INTEGER, (db, id, rows, now) => recheckArchived(env, db, id, rows, now));
  const events = (await env.SHARD_0.prepare("SELECT COALESCE(SUM(events), 0) AS n FROM event_archive_parts WHERE panel_id = ?").bind(panel).first<{ n: number }>())!.n;
  return Response.json({ parts: moved, moved: events, ms: Date.now() - started });
}
