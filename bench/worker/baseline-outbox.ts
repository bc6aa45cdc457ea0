import type { ShardDb } from "../../src/store/shards";
// Baseline for bench:broadcast: the outbox writes of `count` messages by a bare loop, chunk by
// chunk as the outbox provider writes them (R2 puts in parallel, then the D1 rows), with one
// fixed pre-built message and nothing else: no claims, no rendering, no queue.
import { outboxKey } from "../../src/services/channels/email/outbox";
import { insertOutboxRecords, type OutboxRecord } from "../../src/store/outbox";

const CHUNK = 100;

export async function baselineOutbox(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const count = Number(url.searchParams.get("count") ?? "1000");
  const offset = Number(url.searchParams.get("offset") ?? "0");
  const size = Number(url.searchParams.get("size") ?? "1600");
  const eml = new TextEncoder().encode("X".repeat(size));
  const now = Date.now();
  for (let start = offset; start < offset + count; start += CHUNK) {
    const records: OutboxRecord[] = [];
    await Promise.all(
      Array.from({ length: Math.min(CHUNK, offset + count - start) }, async (_, i) => {
        const id = `bench.${start + i}`;
        const key = outboxKey("bench-baseline", id);
        await env.FILES.put(key, eml, { httpMetadata: { contentType: "message/rfc822" } });
        records.push({ id, panelId: "bench-baseline", channel: "email", recipient: `user${start + i}@example.com`, sender: "shop@example.com", subject: "Hello", campaignId: null, r2Key: key, size: eml.byteLength, createdAt: now, note: null });
      }),
    );
    await insertOutboxRecords(env.SHARD_0 as unknown as ShardDb, records);
  }
  return new Response("ok");
}
