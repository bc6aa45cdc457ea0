import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleQueue } from "../../../src/jobs/queues";
import { recordEvents } from "../../../src/services/pipeline/record";
import { archiveOldEvents } from "../../../src/services/segments/archived-events";
import { createReplay, readReplayNudge, replayStep } from "../../../src/services/replays/replays";
import { getPanel } from "../../../src/store/panels";
import type { ShardDb } from "../../../src/store/shards";
import { pipelineSettled } from "../../support/activity";
import { collectingQueue, withBindings, type CollectingQueue } from "../../support/cron";
import { admin, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { asOperator, operatorWithRole } from "../../support/operators";
import { advance, createWebhook, deliveries, drive, eventObject, eventsOf, queue, range, type Received } from "../../support/webhooks";

const DAY = 86_400_000;
const MINUTE = 60_000;
const owner = { operator: null };

/**
 * `n` custom activities of ada@example.com (params.n = 0..n-1), recorded newest first (so the
 * ids run against time), `n` minutes apart, the oldest `startMsAgo` back.
 */
async function seed(panel: TestPanel, n: number, startMsAgo: number, first = 0): Promise<void> {
  const start = Date.now() - startMsAgo;
  const events = range(first, first + n).map((i) => ({ channel: "custom_activity" as const, name: "view", identity: "ada@example.com", params: { n: i }, occurredAt: start + (i - first) * 1000 }));
  await recordEvents(env, { id: panel.id }, events.reverse());
  await pipelineSettled(panel.id);
}

const ns = (requests: Received[]) => requests.flatMap((r) => eventsOf(r).map((e) => e.payload_params.items[0].n as number));

/** Delivers what the webhook holds: full batches at once, then the last partial one when its window closes. */
async function deliverAll(hookId: string): Promise<void> {
  await drive(hookId);
  await advance(hookId, 5_000);
  await drive(hookId);
}

function steppingEnv(): { stepEnv: Env; imports: CollectingQueue } {
  const imports = collectingQueue();
  return { stepEnv: withBindings(env, { IMPORTS: imports } as Partial<Env>), imports };
}

/** Hands the kept IMPORTS messages to the consumer (each twice: a redelivery changes nothing) until none is left. */
async function drainImports(stepEnv: Env, imports: CollectingQueue): Promise<number> {
  let steps = 0;
  while (imports.bodies.length && steps < 50) {
    const bodies = imports.bodies.splice(0);
    const batch = createMessageBatch("apiv2-imports-default", [...bodies, ...bodies].map((body, i) => ({ id: `replay-${steps}-${i}`, timestamp: new Date(), attempts: 1, body })));
    const exec = createExecutionContext();
    await handleQueue(batch, stepEnv, exec);
    await getQueueResult(batch, exec);
    steps += bodies.length;
  }
  return steps;
}

async function startReplay(stepEnv: Env, panel: TestPanel, hookId: string, body: Record<string, unknown>) {
  const loaded = (await getPanel(env.DB, panel.id))!;
  const created = await createReplay(stepEnv, panelData, loaded, hookId, { dry_run: false, ...body } as never, owner, Date.now());
  if (!created.ok || created.value.kind !== "replay") throw new Error(`replay not created: ${JSON.stringify(created)}`);
  return created.value.replay.replay;
}

describe("webhook replays", () => {
  it("re-sends the shard's events of a range in time order, marked as replays, as many as the dry run said; an id given again sends nothing more", async () => {
    const panel = await createPanel({ name: "Replay Shop" });
    const hook = await createWebhook(panel);
    await seed(panel, 250, 2 * 60 * MINUTE);
    // An event outside the range is not replayed.
    await seed(panel, 1, 5 * 60 * MINUTE, 1000);
    const range = { from: new Date(Date.now() - 3 * 60 * MINUTE).toISOString(), to: new Date().toISOString() };

    const dry = await admin("POST", `${hook.path}/replays`, { ...range, dry_run: true });
    expect(dry.status).toBe(200);
    expect(dry.body).toEqual({ dry_run: true, events: 250, batches: 3 });
    // A dry run starts nothing.
    expect((await admin("GET", `${hook.path}/replays`)).body.replays).toEqual([]);

    const created = await admin("POST", `${hook.path}/replays`, { ...range, id: "nightly-fix" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ id: "nightly-fix", state: "done", events_total: 250, events_sent: 250 });
    await deliverAll(hook.id);

    const sent = await deliveries(hook.bucket);
    expect(sent.map((r) => eventsOf(r).length)).toEqual([100, 100, 50]);
    expect(ns(sent)).toEqual(range_(0, 250));
    for (const request of sent) {
      expect(request.headers["x-webhook-replay"]).toBe("nightly-fix");
      for (const event of eventsOf(request)) {
        expect(event.replay).toBe(true);
        expect(event).toMatchObject({ channel: "custom_activity", journey_name: "Replay", event_params: { activity_name: "view", identity: "ada@example.com" } });
        expect(event.event_params.guid).toMatch(/^replay:nightly-fix:\d+$/);
      }
    }
    const read = await admin("GET", `${hook.path}/replays/nightly-fix`);
    expect(read.body).toMatchObject({ state: "done", events_sent: 250, events_delivered: 250, batches_delivered: dry.body.batches, events_waiting: 0 });
    expect(read.body.cursor.event_id).toBeGreaterThan(0);

    // The same id again answers the first replay and sends nothing.
    const again = await admin("POST", `${hook.path}/replays`, { ...range, id: "nightly-fix" });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: "nightly-fix", events_sent: 250, created_at: created.body.created_at });
    await deliverAll(hook.id);
    expect(await deliveries(hook.bucket)).toHaveLength(3);

    // Live events are sent as before: no replay member, no replay header.
    await queue(hook, range_(0, 2).map((n) => eventObject(n)));
    await deliverAll(hook.id);
    const live = (await deliveries(hook.bucket)).at(-1)!;
    expect(live.headers["x-webhook-replay"]).toBeUndefined();
    expect(Object.keys(eventsOf(live)[0])).toEqual(["channel", "event", "webhook_name", "msgid", "journey_name", "custom_params", "att_params", "udt_params", "event_params"]);
  });

  it("reads days past the retention window from the R2 archive, in order with the shard's", async () => {
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).status).toBe(200);
    const hook = await createWebhook(panel);
    const midday = Math.floor(Date.now() / DAY) * DAY + DAY / 2;
    await seed(panel, 30, Date.now() - (midday - 40 * DAY), 0);
    await seed(panel, 20, Date.now() - (midday - 39 * DAY), 30);
    await seed(panel, 10, 60 * MINUTE, 50);
    await panelData.prepare("UPDATE events SET received_at = occurred_at WHERE panel_id = ?").bind(panel.id).run();
    await archiveOldEvents.run(env, Date.now());
    const hot = await panelData.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ?").bind(panel.id).first<{ n: number }>();
    expect(hot!.n).toBe(10);

    const range = { from: new Date(midday - 45 * DAY).toISOString(), to: new Date().toISOString() };
    const dry = await admin("POST", `${hook.path}/replays`, { ...range, dry_run: true });
    expect(dry.body).toEqual({ dry_run: true, events: 60, batches: 1 });
    const created = await admin("POST", `${hook.path}/replays`, range);
    expect(created.status).toBe(201);
    expect(created.body.id).toMatch(/^rpl_/);
    await deliverAll(hook.id);
    const sent = await deliveries(hook.bucket);
    expect(ns(sent)).toEqual(range_(0, 60));
    expect(sent.every((r) => r.headers["x-webhook-replay"] === created.body.id)).toBe(true);
  });

  it("moves on through archived days holding nothing it selects, a page at a time, and ends", async () => {
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).status).toBe(200);
    const hook = await createWebhook(panel);
    const midday = Math.floor(Date.now() / DAY) * DAY + DAY / 2;
    // One custom activity on each of 25 archived days: more days than a page passes through.
    const events = range(0, 25).map((i) => ({ channel: "custom_activity" as const, name: "view", identity: "ada@example.com", params: { n: i }, occurredAt: midday - (60 - i) * DAY }));
    await recordEvents(env, { id: panel.id }, events);
    await pipelineSettled(panel.id);
    await panelData.prepare("UPDATE events SET received_at = occurred_at WHERE panel_id = ?").bind(panel.id).run();
    await archiveOldEvents.run(env, Date.now());
    await archiveOldEvents.run(env, Date.now());
    await archiveOldEvents.run(env, Date.now());
    expect((await panelData.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ?").bind(panel.id).first<{ n: number }>())!.n).toBe(0);

    const body = { from: new Date(midday - 70 * DAY).toISOString(), to: new Date().toISOString() };
    expect((await admin("POST", `${hook.path}/replays`, { ...body, channels: ["email"], dry_run: true })).body).toEqual({ dry_run: true, events: 0, batches: 0 });
    const { stepEnv, imports } = steppingEnv();
    const replay = await startReplay(stepEnv, panel, hook.id, { ...body, channels: ["email"] });
    await drainImports(stepEnv, imports);
    expect((await admin("GET", `${hook.path}/replays/${replay.id}`)).body).toMatchObject({ state: "done", events_sent: 0 });

    // The same days with custom activities selected: all 25, in order.
    const all = await startReplay(stepEnv, panel, hook.id, body);
    await drainImports(stepEnv, imports);
    expect((await admin("GET", `${hook.path}/replays/${all.id}`)).body).toMatchObject({ state: "done", events_sent: 25, events_total: 25 });
    await deliverAll(hook.id);
    expect(ns(await deliveries(hook.bucket))).toEqual(range_(0, 25));
  });

  it("works in bounded steps through the queue; a step run again after a crash sends nothing twice", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    await seed(panel, 1_150, 3 * 60 * MINUTE);
    const { stepEnv, imports } = steppingEnv();
    const replay = await startReplay(stepEnv, panel, hook.id, { from: new Date(Date.now() - 4 * 60 * MINUTE).toISOString(), to: new Date().toISOString() });
    // The first step ran in the request: one page of whole batches, the next step queued.
    let read = await admin("GET", `${hook.path}/replays/${replay.id}`);
    expect(read.body).toMatchObject({ state: "running", events_total: 1_150, events_sent: 500 });
    expect(imports.bodies.map(readReplayNudge)).toEqual([{ type: "webhook_replay", panelId: panel.id, replayId: replay.id }]);
    imports.bodies.length = 0;

    // A crash after the hand-over, before the cursor moved: the step is run again.
    const crashing = new Proxy(panelData, {
      get(target, key) {
        if (key !== "prepare") return Reflect.get(target, key);
        return (sql: string) => {
          if (sql.includes("UPDATE webhook_replays SET cursor_at")) throw new Error("crash before the cursor moved");
          return target.prepare(sql);
        };
      },
    }) as ShardDb;
    await expect(replayStep(stepEnv, [crashing], panel.id, replay.id, Date.now())).rejects.toThrow("crash");
    read = await admin("GET", `${hook.path}/replays/${replay.id}`);
    expect(read.body.events_sent).toBe(500);
    expect(await replayStep(stepEnv, [panelData], panel.id, replay.id, Date.now())).toBe("more");
    read = await admin("GET", `${hook.path}/replays/${replay.id}`);
    expect(read.body.events_sent).toBe(1_000);

    // The rest through the queue (each message delivered twice).
    await imports.send({ type: "webhook_replay", panelId: panel.id, replayId: replay.id });
    await drainImports(stepEnv, imports);
    read = await admin("GET", `${hook.path}/replays/${replay.id}`);
    expect(read.body).toMatchObject({ state: "done", events_sent: 1_150 });

    await deliverAll(hook.id);
    const sent = await deliveries(hook.bucket);
    expect(ns(sent)).toEqual(range_(0, 1_150));
    expect(sent).toHaveLength(12);
    read = await admin("GET", `${hook.path}/replays/${replay.id}`);
    expect(read.body).toMatchObject({ events_delivered: 1_150, batches_delivered: 12, events_waiting: 0 });
  });

  it("hands nothing more over while the dispatcher holds four pages of it, and goes on once they are delivered", async () => {
    const panel = await createPanel();
    // A configured webhook holds its backlog until its test passes.
    const hook = await createWebhook(panel, {}, false);
    await seed(panel, 2_300, 3 * 60 * MINUTE);
    const { stepEnv, imports } = steppingEnv();
    const replay = await startReplay(stepEnv, panel, hook.id, { from: new Date(Date.now() - 4 * 60 * MINUTE).toISOString(), to: new Date().toISOString() });
    await drainImports(stepEnv, imports);
    let read = await admin("GET", `${hook.path}/replays/${replay.id}`);
    expect(read.body).toMatchObject({ state: "running", events_sent: 2_000, events_waiting: 2_000 });
    expect((await admin("GET", hook.path)).body.backlog).toBe(2_000);

    expect((await admin("POST", `${hook.path}/test`)).body.state).toBe("operational");
    await drive(hook.id);
    expect((await admin("GET", `${hook.path}/replays/${replay.id}`)).body).toMatchObject({ events_delivered: 2_000, events_waiting: 0 });
    await imports.send({ type: "webhook_replay", panelId: panel.id, replayId: replay.id });
    await drainImports(stepEnv, imports);
    await deliverAll(hook.id);
    read = await admin("GET", `${hook.path}/replays/${replay.id}`);
    expect(read.body).toMatchObject({ state: "done", events_sent: 2_300, events_delivered: 2_300, batches_delivered: 23 });
    expect(ns(await deliveries(hook.bucket))).toEqual(range_(0, 2_300));
  });

  it("cancelling stops the steps and drops the replay's waiting events", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, {}, false);
    await seed(panel, 700, 3 * 60 * MINUTE);
    const { stepEnv, imports } = steppingEnv();
    const replay = await startReplay(stepEnv, panel, hook.id, { from: new Date(Date.now() - 4 * 60 * MINUTE).toISOString(), to: new Date().toISOString() });
    // A configured webhook holds its backlog: the first page waits there.
    expect((await admin("GET", hook.path)).body.backlog).toBe(500);

    const cancelled = await admin("POST", `${hook.path}/replays/${replay.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ state: "cancelled", events_sent: 500, events_waiting: 0 });
    expect((await admin("GET", hook.path)).body.backlog).toBe(0);
    await drainImports(stepEnv, imports);
    expect((await admin("GET", `${hook.path}/replays/${replay.id}`)).body).toMatchObject({ state: "cancelled", events_sent: 500 });
    // Cancelling again answers it as it is.
    expect((await admin("POST", `${hook.path}/replays/${replay.id}/cancel`)).body.state).toBe("cancelled");
  });

  it("is the owners' alone, and bad input names its field and starts nothing", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, {}, false);
    const from = new Date(Date.now() - DAY).toISOString();
    const to = new Date().toISOString();
    for (const role of ["viewer", "marketer"] as const) {
      const operator = await operatorWithRole(panel.id, role);
      expect((await asOperator(operator, "POST", `/panels/${panel.id}/webhooks/${hook.id}/replays`, { from, to, dry_run: true })).status).toBe(403);
      expect((await asOperator(operator, "GET", `/panels/${panel.id}/webhooks/${hook.id}/replays`)).status).toBe(403);
    }
    const owner = await operatorWithRole(panel.id, "owner");
    expect((await asOperator(owner, "POST", `/panels/${panel.id}/webhooks/${hook.id}/replays`, { from, to, dry_run: true })).status).toBe(200);

    const cases: Array<[Record<string, unknown>, string]> = [
      [{ from: "yesterday", to }, "from"],
      [{ from, to: "2026-13-01T00:00:00Z" }, "to"],
      [{ from: to, to: from }, "to"],
      [{ from: new Date(Date.now() + DAY).toISOString(), to: new Date(Date.now() + 2 * DAY).toISOString() }, "from"],
      [{ from: "2020-01-01T00:00:00Z", to }, "to"],
      [{ from, to, id: "two words" }, "id"],
      [{ from, to, channels: ["fax"] }, "channels.0"],
      [{ from, to, dry_run: "yes" }, "dry_run"],
      [{ to }, "from"],
    ];
    for (const [body, field] of cases) {
      const answer = await admin("POST", `${hook.path}/replays`, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.errors[0].field, JSON.stringify(answer.body)).toBe(field);
    }
    expect((await admin("GET", `${hook.path}/replays`)).body.replays).toEqual([]);
    expect((await admin("POST", `/panels/${panel.id}/webhooks/whk_nope/replays`, { from, to })).status).toBe(404);
    expect((await admin("GET", `${hook.path}/replays/nope`)).status).toBe(404);
  });
});

function range_(from: number, to: number): number[] {
  return range(from, to);
}
