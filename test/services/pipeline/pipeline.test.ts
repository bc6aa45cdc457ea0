import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { NewEvent } from "../../../src/domain/events";
import { EVENTS_PER_PIECE, eventPipelineState, handleEventsBatch, passesOf, processEventBatches, retryDelaySeconds } from "../../../src/services/pipeline/consumer";
import { isEventsNudge } from "../../../src/services/pipeline/nudge";
import { recordEvents } from "../../../src/services/pipeline/record";
import { MAX_REDRIVES, REDRIVE_AFTER_MS, redriveStalledEvents } from "../../../src/services/pipeline/redrive";
import type { PipelineEvent, PipelineStep } from "../../../src/services/pipeline/steps";
import { PIPELINE_STEPS } from "../../../src/services/pipeline-steps";
import { getContactByKey } from "../../../src/store/contacts";
import { appendEventBatches } from "../../../src/store/event-batches";
import { defineActivity, eventSettled, eventually, pipelineSettled, postActivity, postBatch } from "../../support/activity";
import { admin, apiFor, createPanel, type TestPanel, panelData } from "../../support/helpers";
import { countedEnv, type D1Use } from "../../../bench/worker/d1-count";

let panel: TestPanel;
let activityId: string;

beforeEach(async () => {
  panel = await createPanel();
  activityId = await defineActivity(panel, "signup", { plan: "string" });
});

interface BatchState {
  state: string;
  attempts: number;
  redrives: number;
  steps_done: Record<string, true | number[]>;
  last_error: string | null;
}

/**
 * The pipeline state of the batch holding the event `guid`, whether or not its events are rows
 * yet; null once the batch left the pipeline (every step done).
 */
async function batchOf(guid: string): Promise<BatchState | null> {
  const row = await panelData.prepare(
    `SELECT b.state, b.attempts, b.redrives, b.steps_done, b.last_error FROM event_batches b
     WHERE b.panel_id = ?1 AND (
       EXISTS (SELECT 1 FROM json_each(b.events) e WHERE e.value->>'g' = ?2)
       OR EXISTS (SELECT 1 FROM events e WHERE e.panel_id = ?1 AND e.guid = ?2 AND e.batch_id = b.id))`,
  )
    .bind(panel.id, guid)
    .first<Omit<BatchState, "steps_done"> & { steps_done: string }>();
  return row && { ...row, steps_done: JSON.parse(row.steps_done) };
}

async function eventRow(guid: string) {
  return panelData.prepare("SELECT id, contact_id FROM events WHERE panel_id = ? AND guid = ?").bind(panel.id, guid).first<{ id: number; contact_id: number | null }>();
}

/** A step that remembers every event it ran for (this panel's only), and fails as told. */
function recordingStep(name: string, failFor: (event: PipelineEvent, seenBefore: number) => boolean = () => false) {
  const seen: PipelineEvent[] = [];
  const step: PipelineStep & { seen: PipelineEvent[]; count(guid: string): number } = {
    name,
    seen,
    count: (guid) => seen.filter((e) => e.guid === guid).length,
    async run(_env, events) {
      const mine = events.filter((e) => e.panelId === panel.id);
      const failures = [];
      for (const event of mine) {
        const before = step.count(event.guid);
        seen.push(event);
        if (failFor(event, before)) failures.push({ eventId: event.id, error: new Error(`${name} refused ${event.guid}`) });
      }
      return failures;
    },
  };
  return step;
}

describe("the pipeline through the real queue", () => {
  const registered: PipelineStep[] = [];
  afterEach(() => {
    for (const step of registered.splice(0)) PIPELINE_STEPS.splice(PIPELINE_STEPS.indexOf(step), 1);
  });
  function register(step: PipelineStep) {
    PIPELINE_STEPS.push(step);
    registered.push(step);
  }

  it("every recorded event becomes a row and leaves the pipeline done", async () => {
    const posted = await postActivity(panel.clientId, { activityid: activityId, identity: "done@example.com" });
    await eventSettled(panel.id, posted.body.guid);
    expect(await batchOf(posted.body.guid)).toBeNull();
    expect(await eventRow(posted.body.guid)).toMatchObject({ contact_id: expect.any(Number) });
  });

  it("a registered step sees each stored event once, in order, with its contact and params", async () => {
    const step = recordingStep("test-observer");
    register(step);
    await postActivity(panel.clientId, { activityid: activityId, identity: "first@example.com", activity_params: { "s^plan": "gold" }, guid: "g1" });
    await postBatch(panel.clientId, [
      { activityid: activityId, identity: "second@example.com", guid: "g2" },
      { activityid: activityId, uniqueid: "anon", guid: "g3" },
    ]);
    await eventually(async () => (step.seen.length >= 3 ? true : undefined));
    await pipelineSettled(panel.id);
    expect(step.seen.map((e) => e.guid)).toEqual(["g1", "g2", "g3"]);
    const first = step.seen[0]!;
    const contact = await apiFor(panel)("contact", "view", { data: "first@example.com" });
    expect(contact.status).toBe(200);
    expect(first).toMatchObject({ channel: "custom_activity", name: "signup", activityId: Number(activityId), params: { plan: "gold" }, identity: "first@example.com" });
    expect(first.contactId).toEqual(expect.any(Number));
    expect(step.seen[2]).toMatchObject({ uniqueid: "anon", contactId: null });
    expect(step.seen).toHaveLength(3);
  });

  it("a failing step is retried later without re-running the step before it", async () => {
    const first = recordingStep("test-a");
    const second = recordingStep("test-b", (_event, seenBefore) => seenBefore === 0);
    register(first);
    register(second);
    const posted = await postActivity(panel.clientId, { activityid: activityId, identity: "retry@example.com" });
    const guid = posted.body.guid as string;
    // After the first pass the batch waits with test-a done and test-b's failure noted...
    const waiting = await eventually(async () => {
      const batch = await batchOf(guid);
      return batch && batch.attempts === 1 ? batch : undefined;
    });
    const id = (await eventRow(guid))!.id;
    expect(waiting).toMatchObject({ state: "pending", steps_done: { "test-a": true, "test-b": [] } });
    expect(waiting.last_error).toContain("test-b refused " + guid);
    const listed = async () => (await admin("GET", `/panels/${panel.id}/contacts/retry@example.com/events`)).body.events[0].pipeline;
    expect(await listed()).toBe("pending");
    // ...and the queue redelivers after the consumer's backoff (5 s for the first retry).
    await eventually(async () => ((await batchOf(guid)) === null ? true : undefined), 25_000);
    expect(first.count(guid)).toBe(1);
    expect(second.count(guid)).toBe(2);
    expect(second.seen.map((e) => e.id)).toEqual([id, id]);
    expect(await listed()).toBe("done");
  });
});

describe("the consumer (driven directly)", () => {
  /** Records a batch of events without nudging the queue: the test drives the consumer. */
  async function store(events: Array<Partial<NewEvent> & { guid: string }>): Promise<number> {
    const full = events.map((e) => ({ channel: "custom_activity" as const, name: "signup", occurredAt: Date.now(), identity: "c@example.com", claimed: true, ...e }));
    const { batchIds } = await appendEventBatches(panelData, panel.id, full, Date.now());
    expect(batchIds).toHaveLength(1);
    return batchIds[0]!;
  }

  it("stores a batch's events as rows once, however often it is taken, and runs each step once per event", async () => {
    const batch = await store([{ guid: "e1" }, { guid: "e2" }]);
    const a = recordingStep("a");
    const b = recordingStep("b", (event, seenBefore) => event.guid === "e1" && seenBefore === 0);
    const c = recordingStep("c");

    const failed = await processEventBatches(env, panel.id, [batch], [a, b, c]);
    expect([...failed]).toEqual([batch]);
    expect(a.seen.map((e) => e.guid)).toEqual(["e1", "e2"]);
    expect(b.seen.map((e) => e.guid)).toEqual(["e1", "e2"]);
    expect(c.seen.map((e) => e.guid)).toEqual(["e2"]);
    const [e1, e2] = [(await eventRow("e1"))!.id, (await eventRow("e2"))!.id];
    expect(await batchOf("e1")).toMatchObject({ state: "pending", attempts: 1, steps_done: { a: true, b: [e2], c: [e2] } });

    // A repeated delivery: the events are not stored again; e2 is untouched; e1 resumes at step b.
    expect((await processEventBatches(env, panel.id, [batch, batch], [a, b, c])).size).toBe(0);
    expect(a.count("e1")).toBe(1);
    expect(b.count("e1")).toBe(2);
    expect(c.count("e1")).toBe(1);
    expect(c.count("e2")).toBe(1);
    expect(b.seen.map((e) => e.id)).toEqual([e1, e2, e1]);
    expect(await batchOf("e1")).toBeNull();
    const rows = await panelData.prepare("SELECT guid FROM events WHERE panel_id = ? ORDER BY id").bind(panel.id).all();
    expect(rows.results).toEqual([{ guid: "e1" }, { guid: "e2" }]);

    // And again after everything is done: no step runs.
    await processEventBatches(env, panel.id, [batch], [a, b, c]);
    expect(a.seen.length + b.seen.length + c.seen.length).toBe(2 + 3 + 2);
  });

  it("stores several batches in one pass, each with its own range, skipping guids another batch claimed", async () => {
    const first = await store([{ guid: "a1" }, { guid: "a2", identity: "other@example.com" }]);
    const repeat = await store([{ guid: "a1" }]);
    const third = await store([{ guid: "c1", identity: "third@example.com" }]);
    const step = recordingStep("picky", (event) => event.guid === "c1");
    const failed = await processEventBatches(env, panel.id, [third, repeat, first], [step]);
    expect([...failed]).toEqual([third]);
    expect(step.seen.map((e) => e.guid)).toEqual(["a1", "a2", "c1"]);
    const rows = await panelData.prepare("SELECT id, guid, batch_id FROM events WHERE panel_id = ? ORDER BY id").bind(panel.id).all<{ id: number; guid: string; batch_id: number }>();
    expect(rows.results.map((r) => [r.guid, r.batch_id])).toEqual([["a1", first], ["a2", first], ["c1", third]]);
    const ranges = await panelData.prepare("SELECT id, first_id, last_id FROM event_batches WHERE panel_id = ? ORDER BY id").bind(panel.id).all();
    expect(ranges.results).toEqual([{ id: third, first_id: rows.results[2]!.id, last_id: rows.results[2]!.id }]);
  });

  it("a step that throws fails every event it was given; later steps wait", async () => {
    const batch = await store([{ guid: "t1" }, { guid: "t2" }]);
    const later = recordingStep("later");
    const throwing: PipelineStep = { name: "throws", run: async () => Promise.reject(new Error("journeys unavailable")) };
    const failed = await processEventBatches(env, panel.id, [batch], [throwing, later]);
    expect([...failed]).toEqual([batch]);
    expect(later.seen).toEqual([]);
    const state = await batchOf("t1");
    expect(state).toMatchObject({ state: "pending", attempts: 1, steps_done: { throws: [] } });
    expect(state!.last_error).toContain("throws: journeys unavailable");
  });

  it("acknowledges messages whose events passed and retries the others with backoff", async () => {
    const ok = await store([{ guid: "m-ok" }]);
    const bad = await store([{ guid: "m-bad" }]);
    const step = recordingStep("picky", (event) => event.guid === "m-bad");
    const batch = createMessageBatch("apiv2-events-default", [
      { id: "msg-ok", timestamp: new Date(), attempts: 1, body: { panel: panel.id, batches: [ok] } },
      { id: "msg-bad", timestamp: new Date(), attempts: 3, body: { panel: panel.id, batches: [bad] } },
      { id: "msg-junk", timestamp: new Date(), attempts: 1, body: { what: "not a nudge" } },
    ]);
    const exec = createExecutionContext();
    await handleEventsBatch(batch, env, [step]);
    const result = await getQueueResult(batch, exec);
    expect(result.explicitAcks.sort()).toEqual(["msg-junk", "msg-ok"]);
    // (The test harness does not record the delay a retry asks for; retryDelaySeconds is checked below.)
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["msg-bad"]);
  });

  it("shows an event done once it passed every step, whatever the rest of its batch", () => {
    const steps = [recordingStep("a"), recordingStep("b")];
    expect(eventPipelineState(5, null, steps)).toBe("done");
    expect(eventPipelineState(5, { state: "pending", stepsDone: { a: true, b: [5] } }, steps)).toBe("done");
    expect(eventPipelineState(6, { state: "pending", stepsDone: { a: true, b: [5] } }, steps)).toBe("pending");
    expect(eventPipelineState(6, { state: "failed", stepsDone: { a: [5] } }, steps)).toBe("failed");
  });

  it("backs off from 5 s, doubling, to at most 5 minutes", () => {
    expect([1, 2, 3, 4, 7, 10].map(retryDelaySeconds)).toEqual([5, 10, 20, 40, 300, 300]);
  });

  it("a message delivered twice has one effect per step", async () => {
    const id = await store([{ guid: "dup" }]);
    const step = recordingStep("once");
    for (let i = 0; i < 2; i++) {
      const batch = createMessageBatch("apiv2-events-default", [
        { id: `d${i}`, timestamp: new Date(), attempts: 1, body: { panel: panel.id, batches: [id] } },
        { id: `d${i}b`, timestamp: new Date(), attempts: 1, body: { panel: panel.id, batches: [id] } },
      ]);
      await handleEventsBatch(batch, env, [step]);
    }
    expect(step.count("dup")).toBe(1);
    expect((await panelData.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ?").bind(panel.id).first<{ n: number }>())!.n).toBe(1);
  });

  it("sizes its passes by the events their batches hold: a hundred one-event batches a pass, twenty-five full or unsized ones", () => {
    const ids = Array.from({ length: 250 }, (_, i) => i + 1);
    expect(passesOf(ids, new Map(ids.map((id) => [id, 1]))).map((pass) => pass.length)).toEqual([100, 100, 50]);
    expect(passesOf(ids, new Map(ids.map((id) => [id, 1000]))).map((pass) => pass.length)).toEqual(Array(10).fill(25));
    expect(passesOf(ids, new Map()).map((pass) => pass.length)).toEqual(Array(10).fill(25));
    // In order; a batch larger than a pass goes alone.
    expect(passesOf([1, 2, 3, 4, 5], new Map([[1, 10], [2, 30_000], [3, 10], [4, 24_990], [5, 1]]))).toEqual([[1], [2], [3, 4], [5]]);
    expect(isEventsNudge({ panel: "p", batches: [1, 2], events: [1, 1] })).toBe(true);
    expect(isEventsNudge({ panel: "p", batches: [1, 2], events: [1] })).toBe(false);
    expect(isEventsNudge({ panel: "p", batches: [1], events: [-1] })).toBe(false);
  });

  it("takes one-event batches a message sizes in fewer passes than unsized ones, each event once", async () => {
    // The events' contact exists first: the reactions to its creation would count in the first run only.
    await processEventBatches(env, panel.id, [await store([{ guid: "creates-the-contact" }])], []);
    const run = async (prefix: string, sized: boolean): Promise<D1Use> => {
      const ids: number[] = [];
      for (let i = 0; i < 30; i++) ids.push(await store([{ guid: `${prefix}-${i}` }]));
      const used: D1Use = { statements: 0, roundTrips: 0 };
      const step = recordingStep(`sized-${prefix}`);
      const body = sized ? { panel: panel.id, batches: ids, events: ids.map(() => 1) } : { panel: panel.id, batches: ids };
      const batch = createMessageBatch("apiv2-events-default", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body }]);
      await handleEventsBatch(batch, countedEnv(env, used), [step]);
      expect(step.seen.map((event) => event.guid)).toEqual(ids.map((_, i) => `${prefix}-${i}`));
      return used;
    };
    const sized = await run("sized", true);
    const unsized = await run("unsized", false);
    // 25 unsized batches make a pass (two here); the sized ones fit in one.
    expect(sized.roundTrips).toBeLessThan(unsized.roundTrips);
  });

  it("never processes an event named under another panel", async () => {
    const id = await store([{ guid: "mine" }]);
    const other = await createPanel();
    const step = recordingStep("scoped");
    await processEventBatches(env, other.id, [id], [step]);
    expect(step.seen).toEqual([]);
    expect(await eventRow("mine")).toBeNull();
    expect(await batchOf("mine")).toMatchObject({ state: "pending", attempts: 0 });
  });
});

describe("recovery and pieces", () => {
  async function store(count: number, prefix: string): Promise<number> {
    const now = Date.now();
    const events = Array.from({ length: count }, (_, i) => ({ channel: "custom_activity" as const, name: "signup", occurredAt: now, identity: `${prefix}${i}@example.com`, guid: `${prefix}-${i}`, claimed: true }));
    const { batchIds } = await appendEventBatches(panelData, panel.id, events, now);
    return batchIds[0]!;
  }

  function watchedEvents() {
    const sent: unknown[] = [];
    const queue = {
      send: async (body: unknown) => void sent.push(body),
      sendBatch: async (messages: Array<{ body: unknown }>) => void sent.push(...messages.map((m) => m.body)),
    } as unknown as Queue;
    return { env: { ...env, EVENTS: queue } as Env, sent };
  }

  async function deliver(handlerEnv: Env, batchIds: number[], steps: PipelineStep[], budgetMs?: number) {
    const batch = createMessageBatch("apiv2-events-default", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body: { panel: panel.id, batches: batchIds } }]);
    const exec = createExecutionContext();
    await handleEventsBatch(batch, handlerEnv, steps, budgetMs);
    return getQueueResult(batch, exec);
  }

  it("a batch whose consumer died holding it is left alone while its lease runs, then re-driven at the first cron tick after it, and runs once", async () => {
    const id = await store(3, "held");
    const step = recordingStep("after-crash");
    // A pass took the batch two minutes ago and died: its lease ran a minute, its message is gone.
    const crash = Date.now() - 2 * 60_000;
    await panelData.prepare("UPDATE event_batches SET lease = 'dead', leased_until = ?, nudged_at = ? WHERE id = ?").bind(crash + 60_000, crash, id).run();
    const quiet = watchedEvents();
    await redriveStalledEvents.run(quiet.env, crash + 30_000);
    expect(quiet.sent).toEqual([]);
    // A stray message while the lease runs leaves the batch to its holder.
    await panelData.prepare("UPDATE event_batches SET leased_until = ? WHERE id = ?").bind(Date.now() + 60_000, id).run();
    expect((await deliver(quiet.env, [id], [step])).explicitAcks).toHaveLength(1);
    expect(step.seen).toEqual([]);
    await panelData.prepare("UPDATE event_batches SET leased_until = ? WHERE id = ?").bind(crash + 60_000, id).run();

    await redriveStalledEvents.run(quiet.env, Date.now());
    expect(quiet.sent).toEqual([{ panel: panel.id, batches: [id] }]);
    expect(await batchOf("held-0")).toMatchObject({ redrives: 1 });
    expect((await deliver(quiet.env, [id], [step])).explicitAcks).toHaveLength(1);
    expect((await deliver(quiet.env, [id], [step])).explicitAcks).toHaveLength(1);
    expect(step.seen.map((e) => e.guid).sort()).toEqual(["held-0", "held-1", "held-2"]);
    expect(await batchOf("held-0")).toBeNull();
  });

  it("a re-drive whose send fails counts nothing, so a queue outage fails no batch", async () => {
    await store(1, "outage");
    const now = Date.now();
    const down = { ...env, EVENTS: { send: () => Promise.reject(new Error("queue down")), sendBatch: () => Promise.reject(new Error("queue down")) } as unknown as Queue };
    for (let minute = 2; minute < 20; minute++) await redriveStalledEvents.run(down, now + minute * 60_000).catch(() => undefined);
    expect(await batchOf("outage-0")).toMatchObject({ state: "pending", redrives: 0 });
  });

  it("nudges lost in crashes before any consumer took the batch count nothing: it is nudged again by the second cron tick after the service is healthy, and runs once", async () => {
    // Recorded, and its nudge lost (appendEventBatches sends none): a crash took it.
    const id = await store(2, "lost");
    const step = recordingStep("after-crashes");
    const { nudged_at: recordedAt } = (await panelData.prepare("SELECT nudged_at FROM event_batches WHERE id = ?").bind(id).first<{ nudged_at: number }>())!;
    // Cron ticks come at whole minutes (the controller's scheduledTime).
    const tick = (n: number) => Math.ceil(recordedAt / 60_000) * 60_000 + n * 60_000;
    // Three crashes: each re-drive's nudge is sent, then lost with the queue before any consumer took the batch.
    const crashing = watchedEvents();
    for (let n = 0; n <= 5; n++) {
      await redriveStalledEvents.run(crashing.env, tick(n));
      expect(await batchOf("lost-0")).toMatchObject({ state: "pending", attempts: 0, redrives: 0 });
    }
    // Other tests' batches on the shard are re-driven too: only this panel's nudges are looked at.
    const mine = (sent: unknown[]) => sent.filter((body) => (body as { panel: string }).panel === panel.id);
    expect(mine(crashing.sent)).toHaveLength(3);

    // Healthy from just after tick 5: the nudge of the second tick after that reaches a consumer.
    const healthy = watchedEvents();
    await redriveStalledEvents.run(healthy.env, tick(6));
    await redriveStalledEvents.run(healthy.env, tick(7));
    expect(mine(healthy.sent)).toEqual([{ panel: panel.id, batches: [id] }]);
    expect((await deliver(healthy.env, [id], [step])).explicitAcks).toHaveLength(1);
    expect(step.seen.map((e) => e.guid).sort()).toEqual(["lost-0", "lost-1"]);
    expect(await batchOf("lost-0")).toBeNull();
  });

  it("counts a re-drive only when a consumer took the batch since the last one: its wait doubles with each, and past the last it fails", async () => {
    const id = await store(1, "taken");
    const now = Date.now();
    const set = (redrives: number, lease: string | null, nudgedAgo: number) =>
      panelData.prepare("UPDATE event_batches SET redrives = ?, lease = ?, leased_until = ?, nudged_at = ? WHERE id = ?").bind(redrives, lease, lease ? now - nudgedAgo : 0, now - nudgedAgo, id).run();
    const watched = watchedEvents();
    const mine = () => watched.sent.filter((body) => (body as { panel: string }).panel === panel.id);
    // Taken after one counted re-drive, then the taker died: it waits two minutes, not one.
    await set(1, "dead", 90_000);
    await redriveStalledEvents.run(watched.env, now);
    expect(mine()).toEqual([]);
    await set(1, "dead", 121_000);
    await redriveStalledEvents.run(watched.env, now);
    expect(mine()).toHaveLength(1);
    expect(await batchOf("taken-0")).toMatchObject({ state: "pending", redrives: 2 });
    // The last re-drive's nudge never reached a consumer: sent again a minute on, counting nothing, never failed for it.
    await set(MAX_REDRIVES, null, 61_000);
    await redriveStalledEvents.run(watched.env, now);
    expect(mine()).toHaveLength(2);
    expect(await batchOf("taken-0")).toMatchObject({ state: "pending", redrives: MAX_REDRIVES });
    // A consumer took it after the last counted re-drive and died: it is marked failed.
    await set(MAX_REDRIVES, "dead", 61_000);
    await redriveStalledEvents.run(watched.env, now);
    expect(mine()).toHaveLength(2);
    expect(await batchOf("taken-0")).toMatchObject({ state: "failed", redrives: MAX_REDRIVES + 1 });
  });

  it("runs a large batch through the steps in pieces, and hands what is left to a new message when the invocation's time is up", async () => {
    const id = await store(EVENTS_PER_PIECE * 2 + 10, "big");
    const step = recordingStep("pieces");
    const calls: number[] = [];
    const counting: PipelineStep = { name: step.name, run: async (stepEnv, events) => { calls.push(events.length); return step.run(stepEnv, events); } };
    const watched = watchedEvents();
    // No time at all: the first piece runs, then the rest is handed on.
    const first = await deliver(watched.env, [id], [counting], 0);
    expect(first.explicitAcks).toHaveLength(1);
    expect(calls).toEqual([EVENTS_PER_PIECE]);
    expect(watched.sent).toEqual([{ panel: panel.id, batches: [id] }]);
    expect(await batchOf("big-0")).toMatchObject({ state: "pending", attempts: 0 });
    // The next message goes on where the first stopped.
    await deliver(watched.env, [id], [counting]);
    expect(calls).toEqual([EVENTS_PER_PIECE, EVENTS_PER_PIECE, 10]);
    expect(new Set(step.seen.map((e) => e.guid)).size).toBe(EVENTS_PER_PIECE * 2 + 10);
    expect(step.seen).toHaveLength(EVENTS_PER_PIECE * 2 + 10);
    expect(await batchOf("big-0")).toBeNull();
  });

  it("cuts pieces to the smallest that a working step takes: larger ones when every working step takes more", async () => {
    const sizing = (name: string, piece?: number, hasWork?: () => Promise<boolean>) => {
      const calls: number[] = [];
      const step: PipelineStep = { name, piece, hasWork, run: async (_stepEnv, events) => void calls.push(events.length) };
      return { calls, step };
    };
    const wide = sizing("wide", 1_000);
    const idle = sizing("idle", 10, async () => false);
    await deliver(env, [await store(EVENTS_PER_PIECE * 2 + 10, "wide")], [idle.step, wide.step]);
    // A step with nothing to do does not narrow the pieces.
    expect(wide.calls).toEqual([EVENTS_PER_PIECE * 2 + 10]);
    expect(idle.calls).toEqual([]);

    const takesMore = sizing("takes-more", 1_000);
    const plain = sizing("plain");
    await deliver(env, [await store(EVENTS_PER_PIECE + 1, "narrow")], [takesMore.step, plain.step]);
    expect(takesMore.calls).toEqual([EVENTS_PER_PIECE, 1]);
    expect(plain.calls).toEqual([EVENTS_PER_PIECE, 1]);
  });
});

describe("recordEvents, the entry of every event", () => {
  const panelRef = () => ({ id: panel.id });

  it("records channel events of any channel against a known contact, an identity or a uniqueid", async () => {
    const added = await apiFor(panel)("contact", "add", { data: { EMAIL: "reader@example.com" } });
    expect(added.status).toBe(200);
    const contact = await getContactByKey(panelData, panel.id, "reader@example.com");
    const now = Date.now();
    const recorded = await recordEvents(env, panelRef(), [
      { channel: "email", name: "open", contactId: contact!.id, occurredAt: now, msgid: "m-1", campaignId: "cmp-1", source: "tracking" },
      { channel: "sms", name: "delivered", identity: "texter@example.com", occurredAt: now, msgid: "m-2", journeyId: "jrn-1" },
      { channel: "bpn", name: "click", uniqueid: "browser-9", occurredAt: now, params: { url: "https://example.com/x" } },
    ]);
    expect(recorded).toMatchObject({ recorded: 3, duplicates: 0 });
    await pipelineSettled(panel.id);
    const { results } = await panelData.prepare(
      "SELECT channel, name, contact_id, msgid, campaign_id, journey_id, params FROM events WHERE panel_id = ? ORDER BY id",
    )
      .bind(panel.id)
      .all();
    expect(results[0]).toMatchObject({ channel: "email", name: "open", contact_id: contact!.id, msgid: "m-1", campaign_id: "cmp-1" });
    expect(results[1]).toMatchObject({ channel: "sms", name: "delivered", contact_id: expect.any(Number), journey_id: "jrn-1" });
    expect(results[2]).toMatchObject({ channel: "bpn", contact_id: null, params: '{"url":"https://example.com/x"}' });
    // A generated guid is not claimed; a caller's guid is, and its repeat stores nothing.
    const first = await recordEvents(env, panelRef(), [{ channel: "email", name: "open", contactId: contact!.id, occurredAt: now, guid: "open-1" }]);
    expect(first).toEqual({ guids: ["open-1"], recorded: 1, duplicates: 0, duplicateAt: [false] });
    const again = await recordEvents(env, panelRef(), [
      { channel: "email", name: "open", contactId: contact!.id, occurredAt: now, guid: "open-1" },
      { channel: "email", name: "click", contactId: contact!.id, occurredAt: now, guid: "click-1" },
      { channel: "email", name: "click", contactId: contact!.id, occurredAt: now, guid: "click-1" },
    ]);
    expect(again).toEqual({ guids: ["open-1", "click-1", "click-1"], recorded: 1, duplicates: 2, duplicateAt: [true, false, true] });
    await pipelineSettled(panel.id);
    const guids = await panelData.prepare("SELECT guid FROM events WHERE panel_id = ? AND channel = 'email' ORDER BY id").bind(panel.id).all();
    expect(guids.results.map((r) => r.guid)).toEqual([recorded.guids[0], "open-1", "click-1"]);
  });

  it("does not attach an event to a contact id of another panel", async () => {
    const other = await createPanel();
    await apiFor(other)("contact", "add", { data: { EMAIL: "theirs@example.com" } });
    const theirs = await getContactByKey(panelData, other.id, "theirs@example.com");
    const recorded = await recordEvents(env, panelRef(), [{ channel: "email", name: "click", contactId: theirs!.id, occurredAt: Date.now() }]);
    await pipelineSettled(panel.id);
    expect(await eventRow(recorded.guids[0]!)).toMatchObject({ contact_id: null });
  });

  it("refuses events without anyone to attribute them to (a caller's bug)", async () => {
    await expect(recordEvents(env, panelRef(), [{ channel: "email", name: "open", occurredAt: Date.now() }])).rejects.toThrow(/contactId, identity or uniqueid/);
  });

  it("calls recording at once in an isolate are nudged by one message naming all their batches, which the queue takes through", async () => {
    const sent: Array<{ panel: string; batches: number[] }> = [];
    const counting = {
      send: async (body: { panel: string; batches: number[] }) => {
        sent.push(body);
        await env.EVENTS.send(body);
      },
      sendBatch: async (messages: Array<{ body: { panel: string; batches: number[] } }>) => {
        sent.push(...messages.map((m) => m.body));
        await env.EVENTS.sendBatch(messages);
      },
    } as unknown as Queue;
    const deferred: Array<Promise<unknown>> = [];
    const record = (i: number) =>
      recordEvents({ ...env, EVENTS: counting }, panelRef(), [{ channel: "custom_activity", name: "signup", identity: `together${i}@example.com`, occurredAt: Date.now() }], {
        defer: (work) => deferred.push(work),
      });
    const calls = await Promise.all([0, 1, 2, 3].map(record));
    expect(sent).toEqual([]);
    // Only the first call's send is deferred; the others joined it.
    expect(deferred).toHaveLength(1);
    await Promise.all(deferred);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.batches).toHaveLength(4);
    // With the events each batch holds, by which the consumer sizes its passes.
    expect((sent[0] as { events?: number[] }).events).toEqual([1, 1, 1, 1]);
    for (const call of calls) await eventSettled(panel.id, call.guids[0]!);

    // A call after that send starts a new one.
    const later = await record(4);
    await Promise.all(deferred);
    expect(deferred).toHaveLength(2);
    expect(sent).toHaveLength(2);
    await eventSettled(panel.id, later.guids[0]!);
  });

  it("a gathering whose send never started (its call's context ended) is given up after a second: later calls send their own", async () => {
    const sent: Array<{ batches: number[] }> = [];
    const watched = { send: async (body: { batches: number[] }) => void sent.push(body), sendBatch: async () => undefined } as unknown as Queue;
    const hung = vi.spyOn(scheduler, "wait").mockReturnValueOnce(new Promise<void>(() => {}));
    const record = (i: number) =>
      recordEvents({ ...env, EVENTS: watched }, panelRef(), [{ channel: "custom_activity", name: "signup", identity: `stranded${i}@example.com`, occurredAt: Date.now() }], {
        defer: () => undefined,
      });
    await record(0);
    await record(1);
    hung.mockRestore();
    const clock = vi.spyOn(Date, "now").mockReturnValue(Date.now() + 2000);
    try {
      const deferred: Array<Promise<unknown>> = [];
      await recordEvents({ ...env, EVENTS: watched }, panelRef(), [{ channel: "custom_activity", name: "signup", identity: "after@example.com", occurredAt: Date.now() }], {
        defer: (work) => deferred.push(work),
      });
      expect(deferred).toHaveLength(1);
      await Promise.all(deferred);
    } finally {
      clock.mockRestore();
    }
    // Only the new call's batch: the stranded two are the re-drive's.
    expect(sent).toHaveLength(1);
    expect(sent[0]!.batches).toHaveLength(1);
  });

  it("answers once stored even when the queue send fails; the re-drive enqueues later", async () => {
    const brokenQueue = {
      send: () => Promise.reject(new Error("queue unavailable")),
      sendBatch: () => Promise.reject(new Error("queue unavailable")),
    } as unknown as Queue;
    const now = Date.now();
    const recorded = await recordEvents({ ...env, EVENTS: brokenQueue }, panelRef(), [{ channel: "custom_activity", name: "signup", identity: "lost@example.com", occurredAt: now }], { now });
    expect(recorded.recorded).toBe(1);
    const guid = recorded.guids[0]!;
    expect(await batchOf(guid)).toMatchObject({ state: "pending", attempts: 0, redrives: 0 });

    // Not yet quiet for long enough: left alone.
    await redriveStalledEvents.run(env, now + REDRIVE_AFTER_MS - 1000);
    expect((await batchOf(guid))!.redrives).toBe(0);

    // No consumer took the batch before this re-drive: it counts nothing.
    await redriveStalledEvents.run(env, now + REDRIVE_AFTER_MS + 1000);
    expect((await batchOf(guid))?.redrives ?? 0).toBe(0);
    await eventSettled(panel.id, guid);
    expect(await eventRow(guid)).toMatchObject({ contact_id: expect.any(Number) });
  });

  it("gives up on a batch after the last re-drive and marks it failed", async () => {
    const now = Date.now();
    const { batchIds } = await appendEventBatches(panelData, panel.id, [{ channel: "custom_activity", name: "signup", identity: "stuck@example.com", occurredAt: now, guid: "stuck", claimed: true }], now);
    // A consumer took it after its last re-drive (its lease mark) and did not finish.
    await panelData.prepare("UPDATE event_batches SET redrives = ?, lease = 'dead' WHERE id = ?").bind(MAX_REDRIVES, batchIds[0]).run();
    await redriveStalledEvents.run(env, now + REDRIVE_AFTER_MS + 1000);
    expect(await batchOf("stuck")).toMatchObject({ state: "failed", redrives: MAX_REDRIVES + 1 });
  });

  it("an operator's retry puts failed batches of the panel, and only those, through the pipeline again", async () => {
    const now = Date.now();
    const { batchIds } = await appendEventBatches(panelData, panel.id, [{ channel: "custom_activity", name: "signup", identity: "mended@example.com", occurredAt: now, guid: "mended", claimed: true }], now);
    await panelData.prepare("UPDATE event_batches SET state = 'failed', redrives = ?, last_error = 'D1 was down' WHERE id = ?").bind(MAX_REDRIVES + 1, batchIds[0]).run();
    const other = await createPanel();
    const untouched = await appendEventBatches(panelData, other.id, [{ channel: "custom_activity", name: "signup", identity: "theirs@example.com", occurredAt: now, guid: "theirs", claimed: true }], now);
    await panelData.prepare("UPDATE event_batches SET state = 'failed' WHERE id = ?").bind(untouched.batchIds[0]).run();

    expect((await admin("POST", `/panels/pnl_nope/events/retry`)).status).toBe(404);
    expect(await admin("POST", `/panels/${panel.id}/events/retry`)).toMatchObject({ status: 200, body: { retried_batches: 1, more: false } });
    await eventSettled(panel.id, "mended");
    expect(await batchOf("mended")).toBeNull();
    expect(await eventRow("mended")).toMatchObject({ contact_id: expect.any(Number) });
    expect(await panelData.prepare("SELECT state FROM event_batches WHERE id = ?").bind(untouched.batchIds[0]).first()).toEqual({ state: "failed" });
    expect(await admin("POST", `/panels/${panel.id}/events/retry`)).toMatchObject({ status: 200, body: { retried_batches: 0, more: false } });
  });
});
