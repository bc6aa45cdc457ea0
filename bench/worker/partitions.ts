// Routes for bench:bigpanel (issue 42): lay a bench panel out over shards, and seed a
// partitioned panel's contacts and list memberships straight into the databases, each on its
// key's partition (bucket computed here, as the service computes it: D1 has no user functions).
import { contactBucket, evenPartitions, partitionOfBucket } from "../../src/domain/partitions";
import { setPartitionMap } from "../../src/services/access/partitions";
import { getPanel } from "../../src/store/panels";
import { shardOf } from "../../src/store/shards";

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
