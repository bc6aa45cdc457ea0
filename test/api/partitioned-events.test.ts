import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap } from "../../src/services/access/partitions";
import { insertMessageStatement } from "../../src/store/journeys/messages";
import { handleEventsBatch } from "../../src/services/pipeline/consumer";
import { redriveStalledEvents } from "../../src/services/pipeline/redrive";
import { archiveOldEvents } from "../../src/services/segments/archived-events";
import type { PipelineStep } from "../../src/services/pipeline/steps";
import { appendEventBatches } from "../../src/store/event-batches";
import type { ShardDb } from "../../src/store/shards";
import { defineActivity, postActivity, postBatch } from "../support/activity";
import { browserKeys } from "../support/push";
import { admin, apiFor, call, createPanel, panelData, type TestPanel } from "../support/helpers";
import { keyOn, keysOn, shard0, TWO, settledOnBoth as settled } from "../support/partitions";

// Decision 0038 step 3, event recording: a panel split over two partitions, buckets 0–2047 on
// SHARD_0 and 2048–4095 on SHARD_1 (its home). Each event is recorded, stored and its contact
// created on the shard of its contact's partition, and nowhere else.

/** Until no batch of the panel is pending on either shard. */

/** The panel's events on `db`, as "name key→contact" (the contact's key, or "-" for none). */
async function eventsOn(db: ShardDb, panelId: string): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT e.name || ' ' || COALESCE(e.identity, e.uniqueid) || '→' || COALESCE(c.pk_value, '-') AS e
       FROM events e LEFT JOIN contacts c ON c.id = e.contact_id WHERE e.panel_id = ? ORDER BY e.id`,
    )
    .bind(panelId)
    .all<{ e: string }>();
  return results.map((r) => r.e);
}

async function partitionedPanel(): Promise<{ panel: TestPanel; cart: string }> {
  const panel = await createPanel();
  const cart = await defineActivity(panel, "add_to_cart");
  expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  return { panel, cart };
}

describe("event recording on a panel of two partitions (decision 0038 step 3)", () => {
  it("records a batch's events on each contact's shard, creates the contacts there, and answers a retry as duplicates", async () => {
    const { panel, cart } = await partitionedPanel();
    const [k0, k1, k0b] = [keyOn(panel.id, 0), keyOn(panel.id, 1), keyOn(panel.id, 0, 1)];
    const events = [k0, k1, k0b].map((identity) => ({ activityid: cart, identity, activity_source: "web" }));
    const headers = { "idempotency-key": "order-1" };
    const first = await postBatch(panel.clientId, events, { headers });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ recorded: 3, duplicates: 0 });
    await settled(panel.id);
    expect(await eventsOn(shard0, panel.id)).toEqual([`add_to_cart ${k0}→${k0}`, `add_to_cart ${k0b}→${k0b}`]);
    expect(await eventsOn(panelData, panel.id)).toEqual([`add_to_cart ${k1}→${k1}`]);
    expect(await keysOn(shard0, panel.id)).toEqual([k0, k0b].sort());
    expect(await keysOn(panelData, panel.id)).toEqual([k1]);
    // The guid claims live with the events, on each partition's shard.
    expect(await shard0.prepare("SELECT COUNT(*) AS n FROM event_guids WHERE panel_id = ?").bind(panel.id).first("n")).toBe(2);

    // The same call again: every event a duplicate, on whichever shard it went to; nothing new stored.
    const again = await postBatch(panel.clientId, events, { headers });
    expect(again.body).toMatchObject({ recorded: 3, duplicates: 3 });
    await settled(panel.id);
    expect((await eventsOn(shard0, panel.id)).length + (await eventsOn(panelData, panel.id)).length).toBe(3);

    // A single post goes the same way, to the existing contact; a repeat of its key is a duplicate.
    const single = await postActivity(panel.clientId, { activityid: cart, identity: k0b }, { headers: { "idempotency-key": "one" } });
    expect(single.body).toMatchObject({ result: "Success", duplicate: false });
    expect((await postActivity(panel.clientId, { activityid: cart, identity: k0b }, { headers: { "idempotency-key": "one" } })).body).toMatchObject({ duplicate: true });
    await settled(panel.id);
    expect(await eventsOn(shard0, panel.id)).toEqual([`add_to_cart ${k0}→${k0}`, `add_to_cart ${k0b}→${k0b}`, `add_to_cart ${k0b}→${k0b}`]);
    expect(await keysOn(shard0, panel.id)).toEqual([k0, k0b].sort());
    // The contact's history through the admin API, which reads the contact's partition.
    const history = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(k0b)}/events`);
    expect(history.body.events.map((e: { identity: string; pipeline: string }) => [e.identity, e.pipeline])).toEqual([[k0b, "done"], [k0b, "done"]]);
  });

  it("records a channel report of a message on the shard of the message's contact", async () => {
    const { panel } = await partitionedPanel();
    const k0 = keyOn(panel.id, 0);
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: k0 } })).status).toBe(200);
    const contactId = (await shard0.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, k0).first<number>("id"))!;
    // A journey's SMS to the contact, kept where the contact lives (sending is not routed yet: written here directly).
    const msgid = `jin_${crypto.randomUUID().slice(0, 8)}.sms`;
    await insertMessageStatement(shard0, {
      msgid,
      panelId: panel.id,
      journeyId: "jrn_test",
      instanceId: msgid.split(".")[0]!,
      stepId: "sms",
      channel: "sms",
      contactId,
      recipient: "+15550100",
      content: { text: "Hi" },
      status: "sent",
      createdAt: Date.now(),
    }).run();
    const report = () =>
      call(`/v1/events/sms/${encodeURIComponent(panel.clientId)}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ msgid, event: "delivered" }) });
    const first = await report();
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ result: "Success", duplicate: false });
    expect(await (await report()).json()).toMatchObject({ duplicate: true });
    await settled(panel.id);
    const stored = await shard0.prepare("SELECT name, contact_id, msgid FROM events WHERE panel_id = ?").bind(panel.id).all();
    expect(stored.results).toEqual([{ name: "delivered", contact_id: contactId, msgid }]);
    expect(await eventsOn(panelData, panel.id)).toEqual([]);
    // An unknown msgid is still refused.
    const unknown = await call(`/v1/events/sms/${encodeURIComponent(panel.clientId)}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ msgid: "nope", event: "delivered" }) });
    expect(unknown.status).toBe(404);
  });

  it("joins an anonymous visitor's history on its partition; across partitions the anonymous events stay where recorded", async () => {
    const { panel, cart } = await partitionedPanel();
    // Uniqueids are any text; keys of the right buckets serve.
    const [k0, v0, v1] = [keyOn(panel.id, 0), keyOn(panel.id, 0, 1), keyOn(panel.id, 1)];
    // Two anonymous visitors, one whose uniqueid is on SHARD_0 and one on the home.
    for (const uniqueid of [v0, v1]) expect((await postActivity(panel.clientId, { activityid: cart, uniqueid })).status).toBe(200);
    await settled(panel.id);
    expect(await eventsOn(shard0, panel.id)).toEqual([`add_to_cart ${v0}→-`]);
    expect(await eventsOn(panelData, panel.id)).toEqual([`add_to_cart ${v1}→-`]);

    // Both become k0 (whose partition is on SHARD_0): the events with the identity go there.
    for (const uniqueid of [v0, v1]) expect((await postActivity(panel.clientId, { activityid: cart, identity: k0, uniqueid })).status).toBe(200);
    await settled(panel.id);
    // Same partition: the visitor's earlier event joins the contact, as on a panel of one shard.
    expect(await eventsOn(shard0, panel.id)).toEqual([`add_to_cart ${v0}→${k0}`, `add_to_cart ${k0}→${k0}`, `add_to_cart ${k0}→${k0}`]);
    // Another partition: the anonymous event stays on the uniqueid's shard, unjoined; the
    // contact's partition knows the pair (uniqueid_contacts, anon_profiles) to find it by.
    expect(await eventsOn(panelData, panel.id)).toEqual([`add_to_cart ${v1}→-`]);
    expect(await keysOn(panelData, panel.id)).toEqual([]);
    const profile = await admin("GET", `/panels/${panel.id}/profiles/${encodeURIComponent(v1)}/events`);
    // Its profile has both, as on one shard: the events recorded with the identity since (on the
    // contact's partition) and the anonymous one (on its own), newest first.
    expect(profile.body.events.map((e: { uniqueid: string; identity: string | null }) => [e.uniqueid, e.identity])).toEqual([
      [v1, k0],
      [v1, null],
    ]);
    const pairs = await shard0.prepare("SELECT uniqueid FROM uniqueid_contacts WHERE panel_id = ? ORDER BY uniqueid").bind(panel.id).all<{ uniqueid: string }>();
    expect(pairs.results.map((r) => r.uniqueid)).toEqual([v0, v1].sort());
    // The contact's access export gives each of its anonymous ids' events, wherever they were recorded.
    const exported = await call(`/admin/v1/panels/${panel.id}/contacts/${encodeURIComponent(k0)}/export`, { headers: { authorization: "Bearer test-admin-token" } });
    expect(exported.status).toBe(200);
    const held = (await exported.json()) as { anonymous_ids: { uniqueid: string; events: { uniqueid: string; identity: string | null }[] }[] };
    const anonymous = Object.fromEntries(held.anonymous_ids.map((a) => [a.uniqueid, a.events.map((e) => e.identity ?? "-").sort()]));
    expect(anonymous).toEqual({ [v0]: ["-", k0], [v1]: ["-", k0] });
  });

  it("lists a contact's anonymous history kept on its uniqueid's partition on the contact's events tab, paged newest first", async () => {
    const { panel, cart } = await partitionedPanel();
    // k0's partition is on SHARD_0; its visitor id v1 and another visitor's v2 are on the home.
    const [k0, v1, v2] = [keyOn(panel.id, 0), keyOn(panel.id, 1), keyOn(panel.id, 1, 1)];
    const at = Date.now() - 3_600_000;
    const minute = 60_000;
    const sent = [
      { activityid: cart, uniqueid: v1, timestamp: at, activity_source: "v1 first" },
      { activityid: cart, uniqueid: v2, timestamp: at + 5 * minute, activity_source: "v2" },
      { activityid: cart, identity: k0, timestamp: at + 10 * minute, activity_source: "k0 alone" },
      // The same time as k0's: the cursor's id orders them.
      { activityid: cart, uniqueid: v1, timestamp: at + 10 * minute, activity_source: "v1 tie" },
      { activityid: cart, identity: k0, uniqueid: v1, timestamp: at + 20 * minute, activity_source: "link" },
    ];
    expect((await postBatch(panel.clientId, sent)).status).toBe(200);
    await settled(panel.id);
    // After the link, the visitor's anonymous events still go to its own partition, unjoined.
    expect((await postActivity(panel.clientId, { activityid: cart, uniqueid: v1, timestamp: at + 30 * minute, activity_source: "v1 after" })).status).toBe(200);
    await settled(panel.id);
    expect(await eventsOn(panelData, panel.id)).toEqual([`add_to_cart ${v1}→-`, `add_to_cart ${v2}→-`, `add_to_cart ${v1}→-`, `add_to_cart ${v1}→-`]);

    const url = `/panels/${panel.id}/contacts/${encodeURIComponent(k0)}/events`;
    const whole = await admin("GET", url);
    expect(whole.status).toBe(200);
    const sources = whole.body.events.map((e: { source: string }) => e.source);
    // As on a panel of one shard: the contact's events and its visitor's anonymous ones, not v2's.
    expect(sources.slice(0, 2)).toEqual(["v1 after", "link"]);
    expect(sources.slice(2, 4).sort()).toEqual(["k0 alone", "v1 tie"]);
    expect(sources.slice(4)).toEqual(["v1 first"]);
    expect(whole.body.next_cursor).toBeNull();

    // A page at a time gives the same events in the same order, each once.
    const paged: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { events: { source: string }[]; next_cursor: string | null } } = await admin("GET", `${url}?limit=1${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      paged.push(...page.body.events.map((e) => e.source));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(paged).toEqual(sources);

    // The visitor's first event past the panel's retention: archived to R2 on its shard, still listed, read back from there.
    expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).status).toBe(200);
    const old = Date.now() - 40 * 86_400_000;
    await panelData.prepare("UPDATE events SET occurred_at = ?2, received_at = ?2 WHERE panel_id = ?1 AND source = 'v1 first'").bind(panel.id, old).run();
    await archiveOldEvents.run(env, Date.now());
    expect(await eventsOn(panelData, panel.id)).toEqual([`add_to_cart ${v2}→-`, `add_to_cart ${v1}→-`, `add_to_cart ${v1}→-`]);
    expect((await admin("GET", url)).body.events.map((e: { source: string }) => e.source)).toEqual(sources);
  });

  it("keeps a device's push subscription on its owner's partition", async () => {
    const { panel } = await partitionedPanel();
    expect((await admin("PUT", `/panels/${panel.id}/push`, { web_push: { subject: "mailto:ops@shop.example" } })).status).toBe(200);
    const keys = await browserKeys();
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    const subscribe = (endpoint: string, identity: string) =>
      call(`/v1/push/web/${encodeURIComponent(panel.clientId)}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ subscription: { endpoint, keys: { p256dh: keys.p256dh, auth: keys.auth } }, identity }),
      });
    expect((await subscribe("https://push.example.net/0", k0)).status).toBe(200);
    expect((await subscribe("https://push.example.net/1", k1)).status).toBe(200);
    const on = async (db: ShardDb) =>
      (await db.prepare("SELECT address FROM push_subscriptions WHERE panel_id = ? ORDER BY address").bind(panel.id).all<{ address: string }>()).results.map((r) => r.address);
    expect(await on(shard0)).toEqual(["https://push.example.net/0"]);
    expect(await on(panelData)).toEqual(["https://push.example.net/1"]);
    // The push screen counts both shards' subscriptions.
    expect((await admin("GET", `/panels/${panel.id}/push`)).body.web_push).toMatchObject({ sends: true, subscriptions: 2 });
    // Removal names no owner: found on whichever shard holds it.
    const removed = await call(`/v1/push/web/${encodeURIComponent(panel.clientId)}`, { method: "DELETE", headers: { "content-type": "application/json" }, body: JSON.stringify({ endpoint: "https://push.example.net/0" }) });
    expect(await removed.json()).toMatchObject({ removed: true });
    expect(await on(shard0)).toEqual([]);
    expect((await admin("GET", `/panels/${panel.id}/push`)).body.web_push).toMatchObject({ subscriptions: 1 });
  });

  it("leaves a panel without a map on its home shard, as before", async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart");
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    const posted = await postBatch(panel.clientId, [k0, k1].map((identity) => ({ activityid: cart, identity })));
    expect(posted.body).toMatchObject({ recorded: 2 });
    await settled(panel.id);
    expect(await eventsOn(panelData, panel.id)).toEqual([`add_to_cart ${k0}→${k0}`, `add_to_cart ${k1}→${k1}`]);
    expect(await keysOn(panelData, panel.id)).toEqual([k0, k1].sort());
    expect(await eventsOn(shard0, panel.id)).toEqual([]);
    expect(await keysOn(shard0, panel.id)).toEqual([]);
  });

  it("re-drives and retries a partition's batches on its shard, and runs no step there against the home", async () => {
    const { panel } = await partitionedPanel();
    const k0 = keyOn(panel.id, 0);
    // Recorded on SHARD_0 and its nudge lost: the re-drive of that shard names it.
    const recordedAt = Date.now() - 5 * 60_000;
    const { batchIds } = await appendEventBatches(shard0, panel.id, [{ channel: "custom_activity", name: "signup", occurredAt: recordedAt, identity: k0, guid: "lost-0", claimed: true }], recordedAt);
    const id = batchIds[0]!;
    const sent: unknown[] = [];
    const queue = { send: async (body: unknown) => void sent.push(body), sendBatch: async (messages: Array<{ body: unknown }>) => void sent.push(...messages.map((m) => m.body)) };
    const watched = { ...env, EVENTS: queue as unknown as Queue } as Env;
    await redriveStalledEvents.shard!(watched, 0, Date.now());
    expect(sent.filter((body) => (body as { panel: string }).panel === panel.id)).toEqual([{ panel: panel.id, batches: [id], shard: 0 }]);

    // A step with work (none has any for such a panel; this one claims to): not run on SHARD_0's events.
    const seen: string[] = [];
    const step: PipelineStep = { name: "home-reader", run: async (_env, events) => void seen.push(...events.map((e) => e.guid)) };
    const batch = createMessageBatch("apiv2-events-default", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body: { panel: panel.id, batches: [id], shard: 0 } }]);
    await handleEventsBatch(batch, watched, [step]);
    expect((await getQueueResult(batch, createExecutionContext())).retryMessages).toHaveLength(1);
    expect(seen).toEqual([]);
    // The event is stored, with its contact, on SHARD_0; the batch waits there, saying why.
    expect(await eventsOn(shard0, panel.id)).toEqual([`signup ${k0}→${k0}`]);
    const waiting = await shard0.prepare("SELECT state, last_error FROM event_batches WHERE id = ?").bind(id).first<{ state: string; last_error: string }>();
    expect(waiting).toMatchObject({ state: "pending", last_error: expect.stringContaining("home-reader step reads the panel's home database") });

    // Failed for good, then an operator's retry: found on SHARD_0, nudged naming it, and taken through.
    await shard0.prepare("UPDATE event_batches SET state = 'failed' WHERE id = ?").bind(id).run();
    const retried = await admin("POST", `/panels/${panel.id}/events/retry`);
    expect(retried.body).toMatchObject({ retried_batches: 1 });
    await settled(panel.id);
    expect(await shard0.prepare("SELECT COUNT(*) AS n FROM event_batches WHERE id = ?").bind(id).first("n")).toBe(0);
  });
});
