import { shardByIndex } from "../../src/store/shards";

// Baseline for bench:activity's batch endpoint and pipeline: the batch's events stored straight
// into the service's own `events` table (its indexes and triggers) by one INSERT…SELECT over the
// request body, with no check, contact, guid, journey or webhook work. Storing the rows is the
// physical limit of recording events; everything the service adds is measured against it.

/** POST /__bench/insert-events, body: the JSON array the batch endpoint takes. */
export async function baselineInsertEvents(request: Request, env: Env): Promise<Response> {
  const now = Date.now();
  // shard=N: into SHARD_N (default 0), bench:bigpanel's baseline on the events' own partition.
  const db = shardByIndex(env, Number(new URL(request.url).searchParams.get("shard") ?? "0"))!;
  const result = await db.prepare(
    `INSERT INTO events (panel_id, guid, channel, name, activity_id, identity, uniqueid, source, params, occurred_at, received_at)
     SELECT 'bench-baseline', lower(hex(randomblob(16))), 'custom_activity', 'add_to_cart', e.value ->> 'activityid',
            e.value ->> 'identity', e.value ->> 'uniqueid', e.value ->> 'activity_source', e.value ->> 'activity_params', ?2, ?2
     FROM json_each(?1) e`,
  )
    .bind(await request.text(), now)
    .run();
  return Response.json({ stored: result.meta.changes });
}
