import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { NewEvent } from "../../src/domain/events";
import { handleEventsBatch, processEvents, retryDelaySeconds } from "../../src/pipeline/consumer";
import { recordEvents } from "../../src/pipeline/record";
import { MAX_REDRIVES, REDRIVE_AFTER_MS, redriveStalledEvents } from "../../src/pipeline/redrive";
import { PIPELINE_STEPS, type PipelineEvent, type PipelineStep } from "../../src/pipeline/steps";
import { storeEvents } from "../../src/store/events";
import { defineActivity, eventually, postActivity, postBatch } from "../activity-helpers";
import { apiFor, createPanel, type TestPanel } from "../helpers";

let panel: TestPanel;
let activityId: string;

beforeEach(async () => {
  panel = await createPanel();
  activityId = await defineActivity(panel, "signup", { plan: "string" });
});

async function stateOf(guid: string): Promise<{ state: string; attempts: number; redrives: number } | null> {
  return env.DB.prepare("SELECT state, attempts, redrives FROM events WHERE panel_id = ? AND guid = ?").bind(panel.id, guid).first();
}

async function stepRows(guid: string) {
  const { results } = await env.DB.prepare(
    `SELECT s.step, s.done_at IS NOT NULL AS done, s.attempts, s.last_error FROM event_steps s JOIN events e ON e.id = s.event_id
     WHERE e.panel_id = ? AND e.guid = ? AND s.step != 'journeys' ORDER BY s.step`,
  )
    .bind(panel.id, guid)
    .all();
  return results;
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

  it("every stored event leaves the pipeline done", async () => {
    const posted = await postActivity(panel.clientId, { activityid: activityId, identity: "done@example.com" });
    const state = await eventually(async () => ((await stateOf(posted.body.guid))?.state === "done" ? "done" : undefined));
    expect(state).toBe("done");
  });

  it("a registered step sees each stored event once, in order, with its contact and params", async () => {
    const step = recordingStep("test-observer");
    register(step);
    await postActivity(panel.clientId, { activityid: activityId, identity: "first@example.com", activity_params: { "s^plan": "gold" }, guid: "g1" });
    await postBatch(panel.clientId, [
      { activityid: activityId, identity: "second@example.com", guid: "g2" },
      { activityid: activityId, uniqueid: "anon", guid: "g3" },
    ]);
    await eventually(async () => (step.seen.length >= 3 && (await stateOf("g3"))?.state === "done" ? true : undefined));
    expect(step.seen.map((e) => e.guid)).toEqual(["g1", "g2", "g3"]);
    const first = step.seen[0]!;
    const contact = await apiFor(panel)("contact", "view", { data: "first@example.com" });
    expect(contact.status).toBe(200);
    expect(first).toMatchObject({ channel: "custom_activity", name: "signup", activityId: Number(activityId), params: { plan: "gold" }, identity: "first@example.com" });
    expect(first.contactId).toEqual(expect.any(Number));
    expect(step.seen[2]).toMatchObject({ uniqueid: "anon", contactId: null });
    for (const guid of ["g1", "g2", "g3"]) expect(await stepRows(guid)).toEqual([{ step: "test-observer", done: 1, attempts: 1, last_error: null }]);
  });

  it("a failing step is retried later without re-running the step before it", async () => {
    const first = recordingStep("test-a");
    const second = recordingStep("test-b", (_event, seenBefore) => seenBefore === 0);
    register(first);
    register(second);
    const posted = await postActivity(panel.clientId, { activityid: activityId, identity: "retry@example.com" });
    const guid = posted.body.guid as string;
    // The queue redelivers after the consumer's backoff (5 s for the first retry).
    await eventually(async () => ((await stateOf(guid))?.state === "done" ? true : undefined), 25_000);
    expect(first.count(guid)).toBe(1);
    expect(second.count(guid)).toBe(2);
    expect(await stepRows(guid)).toEqual([
      { step: "test-a", done: 1, attempts: 1, last_error: null },
      { step: "test-b", done: 1, attempts: 2, last_error: "test-b refused " + guid },
    ]);
    expect((await stateOf(guid))!.attempts).toBe(2);
  });
});

describe("the consumer (driven directly)", () => {
  async function store(events: Array<Partial<NewEvent> & { guid: string }>): Promise<number[]> {
    const full = events.map((e) => ({ channel: "custom_activity" as const, name: "signup", occurredAt: Date.now(), identity: "c@example.com", ...e }));
    // Ids come back ascending, and events are inserted in order.
    return storeEvents(env.DB, { id: panel.id, primaryKey: "EMAIL" }, full, Date.now());
  }

  it("runs the steps in order per event and records each (event, step) once", async () => {
    const ids = await store([{ guid: "e1" }, { guid: "e2" }]);
    const a = recordingStep("a");
    const b = recordingStep("b", (event, seenBefore) => event.guid === "e1" && seenBefore === 0);
    const c = recordingStep("c");

    const failed = await processEvents(env, panel.id, ids, [a, b, c]);
    expect([...failed]).toEqual([ids[0]]);
    expect(a.seen.map((e) => e.guid)).toEqual(["e1", "e2"]);
    expect(b.seen.map((e) => e.guid)).toEqual(["e1", "e2"]);
    expect(c.seen.map((e) => e.guid)).toEqual(["e2"]);
    expect((await stateOf("e1"))!.state).toBe("pending");
    expect((await stateOf("e2"))!.state).toBe("done");

    // A repeated delivery naming both: e2 is done and untouched; e1 resumes at step b.
    expect((await processEvents(env, panel.id, ids, [a, b, c])).size).toBe(0);
    expect(a.count("e1")).toBe(1);
    expect(b.count("e1")).toBe(2);
    expect(c.count("e1")).toBe(1);
    expect(c.count("e2")).toBe(1);
    expect((await stateOf("e1"))!.state).toBe("done");

    // And again after everything is done: no step runs.
    await processEvents(env, panel.id, ids, [a, b, c]);
    expect(a.seen.length + b.seen.length + c.seen.length).toBe(2 + 3 + 2);
  });

  it("a step that throws fails every event it was given; later steps wait", async () => {
    const ids = await store([{ guid: "t1" }, { guid: "t2" }]);
    const later = recordingStep("later");
    const throwing: PipelineStep = { name: "throws", run: async () => Promise.reject(new Error("journeys unavailable")) };
    const failed = await processEvents(env, panel.id, ids, [throwing, later]);
    expect(failed.size).toBe(2);
    expect(later.seen).toEqual([]);
    expect(await stepRows("t1")).toEqual([{ step: "throws", done: 0, attempts: 1, last_error: "journeys unavailable" }]);
  });

  it("acknowledges messages whose events passed and retries the others with backoff", async () => {
    const [ok, bad] = await store([{ guid: "m-ok" }, { guid: "m-bad" }]);
    const step = recordingStep("picky", (event) => event.guid === "m-bad");
    const batch = createMessageBatch("apiv2-events-default", [
      { id: "msg-ok", timestamp: new Date(), attempts: 1, body: { panel: panel.id, ids: [ok] } },
      { id: "msg-bad", timestamp: new Date(), attempts: 3, body: { panel: panel.id, ids: [bad] } },
      { id: "msg-junk", timestamp: new Date(), attempts: 1, body: { what: "not a nudge" } },
    ]);
    const exec = createExecutionContext();
    await handleEventsBatch(batch, env, exec, [step]);
    const result = await getQueueResult(batch, exec);
    expect(result.explicitAcks.sort()).toEqual(["msg-junk", "msg-ok"]);
    // (The test harness does not record the delay a retry asks for; retryDelaySeconds is checked below.)
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["msg-bad"]);
  });

  it("backs off from 5 s, doubling, to at most 5 minutes", () => {
    expect([1, 2, 3, 4, 7, 10].map(retryDelaySeconds)).toEqual([5, 10, 20, 40, 300, 300]);
  });

  it("a message delivered twice has one effect per step", async () => {
    const [id] = await store([{ guid: "dup" }]);
    const step = recordingStep("once");
    for (let i = 0; i < 2; i++) {
      const batch = createMessageBatch("apiv2-events-default", [
        { id: `d${i}`, timestamp: new Date(), attempts: 1, body: { panel: panel.id, ids: [id] } },
        { id: `d${i}b`, timestamp: new Date(), attempts: 1, body: { panel: panel.id, ids: [id] } },
      ]);
      await handleEventsBatch(batch, env, createExecutionContext(), [step]);
    }
    expect(step.count("dup")).toBe(1);
  });

  it("never processes an event named under another panel", async () => {
    const [id] = await store([{ guid: "mine" }]);
    const other = await createPanel();
    const step = recordingStep("scoped");
    await processEvents(env, other.id, [id!], [step]);
    expect(step.seen).toEqual([]);
    expect((await stateOf("mine"))!.state).toBe("pending");
  });
});

describe("recordEvents, the entry of every event", () => {
  const panelRef = () => ({ id: panel.id, primaryKey: "EMAIL" });

  it("records channel events of any channel against a known contact, an identity or a uniqueid", async () => {
    const added = await apiFor(panel)("contact", "add", { data: { EMAIL: "reader@example.com" } });
    expect(added.status).toBe(200);
    const contact = await env.DB.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, "reader@example.com").first<{ id: number }>();
    const now = Date.now();
    const recorded = await recordEvents(env, panelRef(), [
      { channel: "email", name: "open", contactId: contact!.id, occurredAt: now, msgid: "m-1", campaignId: "cmp-1", source: "tracking" },
      { channel: "sms", name: "delivered", identity: "texter@example.com", occurredAt: now, msgid: "m-2", journeyId: "jrn-1" },
      { channel: "bpn", name: "click", uniqueid: "browser-9", occurredAt: now, params: { url: "https://example.com/x" } },
    ]);
    expect(recorded.duplicates).toBe(0);
    expect(recorded.ids).toHaveLength(3);
    const { results } = await env.DB.prepare(
      "SELECT channel, name, contact_id, msgid, campaign_id, journey_id, params FROM events WHERE panel_id = ? ORDER BY id",
    )
      .bind(panel.id)
      .all();
    expect(results[0]).toMatchObject({ channel: "email", name: "open", contact_id: contact!.id, msgid: "m-1", campaign_id: "cmp-1" });
    expect(results[1]).toMatchObject({ channel: "sms", name: "delivered", contact_id: expect.any(Number), journey_id: "jrn-1" });
    expect(results[2]).toMatchObject({ channel: "bpn", contact_id: null, params: '{"url":"https://example.com/x"}' });
    for (const guid of recorded.guids) await eventually(async () => ((await stateOf(guid))?.state === "done" ? true : undefined));
    const again = await recordEvents(env, panelRef(), [{ channel: "email", name: "open", contactId: contact!.id, occurredAt: now, guid: recorded.guids[0] }]);
    expect(again).toEqual({ guids: [recorded.guids[0]], ids: [], duplicates: 1 });
  });

  it("does not attach an event to a contact id of another panel", async () => {
    const other = await createPanel();
    await apiFor(other)("contact", "add", { data: { EMAIL: "theirs@example.com" } });
    const theirs = await env.DB.prepare("SELECT id FROM contacts WHERE panel_id = ?").bind(other.id).first<{ id: number }>();
    const recorded = await recordEvents(env, panelRef(), [{ channel: "email", name: "click", contactId: theirs!.id, occurredAt: Date.now() }]);
    const row = await env.DB.prepare("SELECT contact_id FROM events WHERE id = ?").bind(recorded.ids[0]).first<{ contact_id: number | null }>();
    expect(row!.contact_id).toBeNull();
  });

  it("refuses events without anyone to attribute them to (a caller's bug)", async () => {
    await expect(recordEvents(env, panelRef(), [{ channel: "email", name: "open", occurredAt: Date.now() }])).rejects.toThrow(/contactId, identity or uniqueid/);
  });

  it("answers once stored even when the queue send fails; the re-drive enqueues later", async () => {
    const brokenQueue = {
      send: () => Promise.reject(new Error("queue unavailable")),
      sendBatch: () => Promise.reject(new Error("queue unavailable")),
    } as unknown as Queue;
    const now = Date.now();
    const recorded = await recordEvents({ DB: env.DB, EVENTS: brokenQueue }, panelRef(), [{ channel: "custom_activity", name: "signup", identity: "lost@example.com", occurredAt: now }], { now });
    expect(recorded.ids).toHaveLength(1);
    const guid = recorded.guids[0]!;
    expect((await stateOf(guid))!.state).toBe("pending");

    // Not yet quiet for long enough: left alone.
    await redriveStalledEvents.run(env, now + REDRIVE_AFTER_MS - 1000);
    expect((await stateOf(guid))!.redrives).toBe(0);

    await redriveStalledEvents.run(env, now + REDRIVE_AFTER_MS + 1000);
    expect((await stateOf(guid))!.redrives).toBe(1);
    await eventually(async () => ((await stateOf(guid))?.state === "done" ? true : undefined));
  });

  it("gives up on an event after the last re-drive and marks it failed", async () => {
    const now = Date.now();
    const [id] = await storeEvents(env.DB, panelRef(), [{ channel: "custom_activity", name: "signup", identity: "stuck@example.com", occurredAt: now, guid: "stuck" }], now);
    await env.DB.prepare("UPDATE events SET redrives = ? WHERE id = ?").bind(MAX_REDRIVES, id).run();
    await redriveStalledEvents.run(env, now + REDRIVE_AFTER_MS + 1000);
    expect(await stateOf("stuck")).toMatchObject({ state: "failed", redrives: MAX_REDRIVES + 1 });
  });
});
