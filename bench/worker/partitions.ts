// Routes for bench:bigpanel (issue 42): lay a bench panel out over shards, and seed a
// partitioned panel's contacts and list memberships straight into the databases, each on its
// key's partition (bucket computed here, as the service computes it: D1 has no user functions).
import { contactBucket, evenPartitions, partitionOfBucket } from "../../src/domain/partitions";
import { setPartitionMap } from "../../src/services/access/partitions";
import { getPanel } from "../../src/store/panels";
import { shardOf } from "../../src/store/shards";
import { SEND_BATCH_SIZE } from "../../src/services/broadcasts/send";

/** POST /__bench/partition-map?panel=&shards=0,1: the panel's buckets split evenly over those shards (before it holds contacts). */
export async function benchPartitionMap(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const shards = (url.searchParams.get("shards") ?? "0").split(",").map(Number);
  const result = await setPartitionMap(env, url.searchParams.get("panel") ?? "", evenPartitions(shards));
  return result.ok ? Response.json({ partitions: result.value.partitions }) : Response.json(result, { status: 409 });
}

/** The shard number of each key of a panel (its partition's), from the panel's map (its home without one). */
export async function shardsOfKeys(env: Env, panelId: string, keys: readonly string[]): Promise<Map<number, Array<{ key: string; bucket: number }>>> {
  const panel = await getPanel(env.DB, panelId);
  if (!panel) throw new Error(`no panel ${panelId}`);
  const byShard = new Map<number, Array<{ key: string; bucket: number }>>();
  for (const key of keys) {
    const bucket = contactBucket(panel.id, key);
    const shard = panel.partitions.length ? partitionOfBucket(panel.partitions, bucket).shard : panel.shard;
    const part = byShard.get(shard);
    if (part) part.push({ key, bucket });
    else byShard.set(shard, [{ key, bucket }]);
  }
  return byShard;
}

/**
 * POST /__bench/seed-partitioned?panel=&from=&count=&lists=3,4: contacts c<from>@example.com…
 * (NAME, EMAIL) written on their partition's shard with their bucket, and each made a member of
 * every list named (the list's row on that shard, which the counter trigger keeps, as a real add does).
 */
export async function seedPartitioned(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const panelId = url.searchParams.get("panel") ?? "";
  const from = Number(url.searchParams.get("from") ?? "1");
  const count = Number(url.searchParams.get("count") ?? "0");
  const lists = (url.searchParams.get("lists") ?? "").split(",").filter(Boolean).map(Number);
  const keys = Array.from({ length: count }, (_, i) => `c${String(from + i).padStart(8, "0")}@example.com`);
  let inserted = 0;
  let members = 0;
  for (const [shard, rows] of await shardsOfKeys(env, panelId, keys)) {
    const db = shardOf(env, { shard });
    const json = JSON.stringify(rows.map((r) => [r.key, r.bucket]));
    // The new contacts are the shard's rows past its highest id (ids only grow): their members by rowid range, no key lookups.
    const last = (await db.prepare("SELECT COALESCE(MAX(id), 0) AS id FROM contacts").first<{ id: number }>())!.id;
    const [contacts, memberships] = await db.batch([
      db.prepare(
        `INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at, bucket)
         SELECT ?1, k.value ->> 0, json_object('NAME', 'Contact ' || (k.value ->> 0), 'EMAIL', k.value ->> 0), 0, 0, k.value ->> 1 FROM json_each(?2) k`,
      ).bind(panelId, json),
      db.prepare(
        `INSERT INTO list_members (list_id, contact_id, panel_id, added_at, bucket)
         SELECT l.value, c.id, c.panel_id, 0, c.bucket FROM contacts c CROSS JOIN json_each(?2) l WHERE c.id > ?3 AND c.panel_id = ?1`,
      ).bind(panelId, JSON.stringify(lists), last),
    ]);
    inserted += contacts!.meta.changes;
    members += memberships!.meta.changes;
  }
  return Response.json({ inserted, members });
}

/**
 * POST /__bench/seed-partitioned-events?panel=&shard=&after=&limit=&names=act0,act1&last_share=1:
 * for the panel's next `limit` contacts on that shard past contact id `after`, one event each of
 * the names given (the last only for `last_share` of the contacts, by id: 0.5 makes 2.5 events a
 * contact of three names), each on its contact's shard with its bucket, over
 * the last 60 days (a fixed spread by contact id and event); answers the last contact id, null
 * when none was left.
 */
export async function seedPartitionedEvents(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const db = shardOf(env, { shard: Number(url.searchParams.get("shard") ?? "0") });
  const panelId = url.searchParams.get("panel") ?? "";
  const after = Number(url.searchParams.get("after") ?? "0");
  const limit = Number(url.searchParams.get("limit") ?? "10000");
  const names = (url.searchParams.get("names") ?? "").split(",").filter(Boolean);
  const lastShare = Number(url.searchParams.get("last_share") ?? "1");
  const now = Date.now();
  const page = "SELECT id, bucket FROM contacts WHERE panel_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3";
  const [events, last] = await db.batch([
    db.prepare(
      `INSERT INTO events (panel_id, guid, channel, name, contact_id, params, occurred_at, received_at, bucket)
       SELECT ?1, 'seed-' || c.id || '-' || k.key, 'custom_activity', k.value, c.id, '{}',
         ?4 - (((c.id % 100003) * 7919 + k.key * 3603139) % 86400) * 60000, ?4, c.bucket
       FROM (${page}) c CROSS JOIN json_each(?5) k WHERE k.key < ?6 - 1 OR c.id % 1000 < ?7`,
    ).bind(panelId, after, limit, now, JSON.stringify(names), names.length, Math.round(lastShare * 1000)),
    db.prepare(`SELECT MAX(id) AS id FROM (${page})`).bind(panelId, after, limit),
  ]);
  return Response.json({ events: events!.meta.changes, last: (last!.results[0] as { id: number | null }).id });
}

/**
 * Baseline for bench:bigpanel's campaign publish: the recipient rows a publish to `list`
 * writes on this shard (the list's members there, numbered into send batches as publishStep
 * numbers them), in one bare INSERT…SELECT under the campaign id `campaign`; DELETE removes them.
 */
export async function baselinePublish(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const db = shardOf(env, { shard: Number(url.searchParams.get("shard") ?? "0") });
  const campaign = url.searchParams.get("campaign") ?? "";
  if (request.method === "DELETE") {
    const removed = await db.prepare("DELETE FROM campaign_messages WHERE campaign_id = ?").bind(campaign).run();
    return Response.json({ rows: removed.meta.changes });
  }
  const inserted = await db
    .prepare(
      `INSERT INTO campaign_messages (campaign_id, contact_id, panel_id, batch, status, bucket)
       SELECT ?3, m.contact_id, ?1, (ROW_NUMBER() OVER (ORDER BY m.contact_id) - 1) / CAST(?4 AS INTEGER), 'queued', m.bucket
       FROM list_members m WHERE m.list_id = ?2 AND m.panel_id = ?1`,
    )
    .bind(url.searchParams.get("panel") ?? "", Number(url.searchParams.get("list")), campaign, SEND_BATCH_SIZE)
    .run();
  return Response.json({ rows: inserted.meta.changes });
}

/**
 * Baseline for bench:bigpanel's behaviour segment: one hand-written count on this shard of the
 * panel's contacts that performed `activity` at least `min` times since `since` (what the
 * segment asks, without the compiler's generality).
 */
export async function baselineBehaviourCount(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const db = shardOf(env, { shard: Number(url.searchParams.get("shard") ?? "0") });
  const panelId = url.searchParams.get("panel") ?? "";
  const row = await db
    .prepare(
      `SELECT COUNT(*) AS n FROM contacts c WHERE c.panel_id = ?1
         AND c.id IN (SELECT contact_id FROM events WHERE panel_id = ?1 AND channel = 'custom_activity' AND name = ?2 AND occurred_at >= ?3
                      GROUP BY contact_id HAVING COUNT(*) >= ?4)`,
    )
    .bind(panelId, url.searchParams.get("activity") ?? "", Number(url.searchParams.get("since")), Number(url.searchParams.get("min") ?? "1"))
    .first<{ n: number }>();
  return Response.json({ count: row!.n });
}
