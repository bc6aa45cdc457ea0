import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { setPartitionMap } from "../../src/services/access/partitions";
import { recordEvents } from "../../src/services/pipeline/record";
import { eventually } from "../support/activity";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../support/helpers";
import { cartPanel, startJourney } from "../support/journeys";
import { keyOn, settledOnBoth, shard0, TWO } from "../support/partitions";
import { advance, createWebhook, deliveries, drive, eventsOf, range } from "../support/webhooks";

// Decision 0038 for what reads a panel's recorded history: webhook replays and journey
// simulations on a panel split over two partitions (buckets 0–2047 on SHARD_0, the rest on its
// home SHARD_1) read each shard's events and archive, merged into one (occurred_at, id) order.

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

async function partitioned(panel: TestPanel): Promise<void> {
  const mapped = await setPartitionMap(env, panel.id, TWO);
  expect(mapped.ok, JSON.stringify(mapped)).toBe(true);
}

/** Custom activities `name` of `who(i)` for i in 0..n-1, a second apart from `start`, with `params(i)`. */
async function happened(panel: TestPanel, name: string, n: number, who: (i: number) => string, start: number, params: (i: number) => Record<string, unknown> = (i) => ({ n: i })): Promise<void> {
  const events = range(0, n).map((i) => ({ channel: "custom_activity" as const, name, identity: who(i), params: params(i), occurredAt: start + i * 1000 }));
  await recordEvents(env, { id: panel.id }, events, { now: start });
  await settledOnBoth(panel.id);
}

const countOn = async (db: typeof panelData, panelId: string) => (await db.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ?").bind(panelId).first<number>("n"))!;

describe("history reads on a panel of two partitions (decision 0038)", () => {
  it("a webhook replay re-sends both shards' events once each, in time order, as many as its dry run counted", async () => {
    const panel = await createPanel();
    await partitioned(panel);
    const hook = await createWebhook(panel);
    // Alternating shards, more on each than one page of a shard (500): the merged pages must stop where a shard's page ends.
    const [k0, k1] = [keyOn(panel.id, 0), keyOn(panel.id, 1)];
    await happened(panel, "view", 1200, (i) => (i % 2 ? k1 : k0), Date.now() - 2 * 60 * MINUTE);
    expect([await countOn(shard0, panel.id), await countOn(panelData, panel.id)]).toEqual([600, 600]);
    const span = { from: new Date(Date.now() - 3 * 60 * MINUTE).toISOString(), to: new Date().toISOString() };

    const dry = await admin("POST", `${hook.path}/replays`, { ...span, dry_run: true });
    expect(dry.body).toEqual({ dry_run: true, events: 1200, batches: 12 });
    const created = await admin("POST", `${hook.path}/replays`, { ...span, id: "both-shards" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await eventually(async () => ((await admin("GET", `${hook.path}/replays/both-shards`)).body.state === "done" ? true : undefined));
    for (let round = 0; round < 4; round++) {
      await drive(hook.id);
      await advance(hook.id, 5_000);
    }
    await drive(hook.id);

    const sent = await deliveries(hook.bucket);
    const events = sent.flatMap(eventsOf);
    expect(events.map((e) => e.payload_params.items[0].n)).toEqual(range(0, 1200));
    expect(events.map((e) => e.event_params.identity)).toEqual(range(0, 1200).map((i) => (i % 2 ? k1 : k0)));
    expect((await admin("GET", `${hook.path}/replays/both-shards`)).body).toMatchObject({ events_total: 1200, events_sent: 1200, events_delivered: 1200 });
  });

  it("a journey simulation enters the contacts of both shards, in time order, and renders their samples", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    await partitioned(panel);
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "hook", type: "webhook", webhook: hook.id, params: { why: "cart" } }] }, null);
    const keys = [keyOn(panel.id, 0), keyOn(panel.id, 1), keyOn(panel.id, 0, 1), keyOn(panel.id, 1, 1)];
    await happened(panel, "add_to_cart", keys.length, (i) => keys[i]!, Date.now() - 3 * DAY, (i) => ({ name: `item ${i}`, price: i }));

    // Each step reads at most a page of each shard (the same merge as the replay's); this one is done in the request.
    const started = await admin("POST", `${journey.path}/simulations`, { days: 7 });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const done = started.body;
    expect(done).toMatchObject({ events_read: 4, error: null, result: { entered: 4, completed: 4, webhooks: { hook: 4 } } });
    // A step keeps its first three samples: the first three entries in time, from both shards.
    expect(done.result.samples.webhooks.map((s: { payload: { event_params: { identity: string } } }) => s.payload.event_params.identity)).toEqual(keys.slice(0, 3));
    // Nothing happened for real on either shard.
    for (const db of [shard0, panelData]) expect(await db.prepare("SELECT COUNT(*) AS n FROM journey_instances WHERE panel_id = ?").bind(panel.id).first<number>("n")).toBe(0);
  });

  it("a saved segment's journey simulation enters the joins recorded on both shards, each contact once at its first", async () => {
    const panel = await createPanel();
    await partitioned(panel);
    const api = apiFor(panel);
    const keys = [keyOn(panel.id, 0), keyOn(panel.id, 1), keyOn(panel.id, 0, 1)];
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key } })).status).toBe(200);
    // A segment nobody matches now: its history is written below, on each contact's shard.
    const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Nowhere", match: { all: [{ attribute: "EMAIL", op: "eq", value: "nobody@example.com" }] } });
    expect(segment.status).toBe(201);
    const journey = await startJourney(
      panel,
      { trigger: { type: "segment", segment: segment.body.id }, steps: [{ id: "hello", type: "email", subject: "Hi", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }] },
      null,
    );
    const joined = async (db: typeof panelData, key: string, daysAgo: number, contactOn: typeof panelData = db) => {
      const id = (await contactOn.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, key).first<number>("id"))!;
      await db.prepare("INSERT INTO segment_changes (segment_id, panel_id, contact_id, change, at) VALUES (?, ?, ?, 'enter', ?)").bind(segment.body.id, panel.id, id, Date.now() - daysAgo * DAY).run();
    };
    await joined(shard0, keys[0]!, 1);
    await joined(panelData, keys[1]!, 2);
    await joined(shard0, keys[2]!, 3);
    // keys[0] joined earlier too, recorded on the home before a split moved the contact (the history stays where written): entered once, then.
    await joined(panelData, keys[0]!, 4, shard0);

    const started = await admin("POST", `${journey.path}/simulations`, { days: 7 });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body).toMatchObject({ error: null, result: { entered: 3, completed: 3, messages: { email: 3 } } });
    expect(started.body.result.samples.messages.map((m: { contact_key: string }) => m.contact_key)).toEqual([keys[0], keys[2], keys[1]]);
  });
});
