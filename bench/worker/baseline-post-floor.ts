import { shardByIndex } from "../../src/store/shards";

// bench:activity part 1's second baseline, the floor of a single activity post: the work the
// call cannot do without, written as tightly as it can be and nothing else. The POST's JSON body
// read and parsed, the client id taken from a Map (the service's catalog cache), the event
// stored as one row of the service's own `events` table (its indexes and triggers) with a new
// guid, and the envelope's JSON answer. No checks of the activity or its parameters, no
// idempotency, no batch for the pipeline (so no contact, journey or webhook work), no log line,
// headers or metrics: what the service adds to this is its own cost (as the add's floor,
// baseline-add-floor.ts, is for a contact add).
const clients = new Map<string, string>();

/** POST /__bench/post-floor?client={client_id}, body: one event as the single endpoint takes it. */
export async function baselinePostFloor(request: Request, env: Env): Promise<Response> {
  const clientId = new URL(request.url).searchParams.get("client") ?? "";
  let panelId = clients.get(clientId);
  if (panelId === undefined) clients.set(clientId, (panelId = "bench-post-floor"));
  const event = (await request.json()) as Record<string, unknown>;
  const guid = crypto.randomUUID().replaceAll("-", "");
  const now = Date.now();
  await shardByIndex(env, 0)!
    .prepare(
      `INSERT INTO events (panel_id, guid, channel, name, activity_id, identity, uniqueid, source, params, occurred_at, received_at)
       VALUES (?1, ?2, 'custom_activity', 'add_to_cart', ?3, ?4, ?5, ?6, ?7, ?8, ?8)`,
    )
    .bind(panelId, guid, event.activityid ?? null, event.identity ?? null, event.uniqueid ?? null, event.activity_source ?? null, JSON.stringify(event.activity_params ?? {}), now)
    .run();
  return new Response(JSON.stringify({ requestid: crypto.randomUUID().replaceAll("-", ""), result: "Success", guid, duplicate: false }), {
    headers: { "content-type": "application/json; charset=utf-8" },
  });
}
