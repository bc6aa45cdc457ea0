import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { splitBranchOf } from "../../../src/domain/journey";
import { contactBucket } from "../../../src/domain/partitions";
import { continuePoints, POINT_LEASE_MS } from "../../../src/services/journeys/engine";
import { journeyTimers } from "../../../src/services/journeys/timers";
import { convertSplits } from "../../../src/services/journeys/goals";
import { splitGoalAt, splitGoalMet } from "../../../src/domain/journey-walk";
import { insertSplitEntryStatement } from "../../../src/store/journeys/splits";
import type { PipelineEvent } from "../../../src/services/pipeline/steps";
import type { Journey } from "../../../src/store/journeys/definitions";
import { fillContactBuckets } from "../../../src/store/buckets";
import { enterInstances } from "../../../src/store/journeys/instances";
import type { JourneyPoint } from "../../../src/store/journeys/points";
import type { ShardDb } from "../../../src/store/shards";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { act, cartPanel, countersOf, MINUTE, startJourney } from "../../support/journeys";

const mail = (id: string, subject: string) => ({ id, type: "email", subject, html: `<p>${subject}</p>`, sender_name: "Shop", sender_email: "shop@example.com" });

/** The journey's messages per contact: the steps that sent each contact one. */
async function stepsSent(panel: TestPanel): Promise<Map<number, string[]>> {
  const { results } = await panelData.prepare("SELECT contact_id, step_id FROM journey_messages WHERE panel_id = ? ORDER BY step_id").bind(panel.id).all<{ contact_id: number; step_id: string }>();
  const byContact = new Map<number, string[]>();
  for (const row of results) byContact.set(row.contact_id, [...(byContact.get(row.contact_id) ?? []), row.step_id]);
  return byContact;
}

/** Each row's contact key and bucket in a journey table of the panel, by key. */
async function bucketsOf(panel: TestPanel, table: "journey_split_entries" | "journey_conversions"): Promise<Array<{ key: string; bucket: number }>> {
  const { results } = await panelData
    .prepare(`SELECT c.pk_value AS key, t.bucket FROM ${table} t JOIN contacts c ON c.id = t.contact_id WHERE t.panel_id = ? ORDER BY c.pk_value`)
    .bind(panel.id)
    .all<{ key: string; bucket: number }>();
  return results;
}

async function contactId(panel: TestPanel, email: string): Promise<number> {
  const row = await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, email).first<{ id: number }>();
  return row!.id;
}

describe("A/B split steps", () => {
  it("sends each contact down one branch by its hash, and reports each branch's conversions to the goal with a confidence", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "ab", type: "split", branches: [{ percent: 50, then: "a" }, { percent: 50, then: "b" }], goal: { activity: "purchase", within: "1d" } }, mail("a", "Ten off"), mail("b", "Free shipping")],
    });
    const emails = Array.from({ length: 8 }, (_, i) => `ab${i}@example.com`);
    for (const email of emails) await act(panel, cart, email);
    const sent = await stepsSent(panel);
    const expected = { a: 0, b: 0 };
    for (const email of emails) {
      const id = await contactId(panel, email);
      const branch = splitBranchOf(journey.id, { id: "ab", branches: [{ percent: 50 }, { percent: 50 }] }, id) === 0 ? "a" : "b";
      expect(sent.get(id)).toEqual([branch]);
      expected[branch]++;
    }
    // Two buy: a conversion of their branch each; a purchase twice counts once.
    await act(panel, buy, emails[0]!);
    await act(panel, buy, emails[0]!);
    await act(panel, buy, emails[1]!);
    const converted = { a: 0, b: 0 };
    for (const email of emails.slice(0, 2)) converted[sent.get(await contactId(panel, email))![0] as "a" | "b"]++;

    const answer = await admin("GET", `${journey.path}/splits`);
    expect(answer.status).toBe(200);
    const [split] = answer.body.splits;
    expect(split).toMatchObject({ step_id: "ab", goal: { activity: "purchase", within: "1d" }, winner: null, method: "two_proportion_z_test_vs_a" });
    expect(split.branches.map((b: any) => [b.label, b.percent, b.then, b.entered, b.converted, b.winner])).toEqual([
      ["A", 50, "a", expected.a, converted.a, false],
      ["B", 50, "b", expected.b, converted.b, false],
    ]);
    expect(split.branches[0].confidence).toBeNull();
    expect(split.branches[1].confidence === null || (split.branches[1].confidence >= 0 && split.branches[1].confidence <= 1)).toBe(true);
    // Each entry carries its contact's bucket (decision 0038), not all the same one.
    const entries = [...emails].sort().map((key) => ({ key, bucket: contactBucket(panel.id, key) }));
    expect(await bucketsOf(panel, "journey_split_entries")).toEqual(entries);
    expect(new Set(entries.map((e) => e.bucket)).size).toBeGreaterThan(1);
  });

  it("a promoted winner takes every new entry in a new version; instances inside keep their branch", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "ab", type: "delay", for: "1h" }, { id: "split", type: "split", after: "ab", branches: [{ percent: 90, then: "a" }, { percent: 10, then: "b" }] }, mail("a", "A"), mail("b", "B")],
    });
    await act(panel, cart, "early@example.com");
    const refused = await admin("POST", `${journey.path}/splits/split/winner`, { branch: "C" });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain("names no branch of this split (A, B)");
    expect((await admin("POST", `${journey.path}/splits/nope/winner`, { branch: "A" })).status).toBe(404);
    const promoted = await admin("POST", `${journey.path}/splits/split/winner`, { branch: "B" });
    expect(promoted.status).toBe(200);
    expect(promoted.body.version).toBe(2);
    expect(promoted.body.steps.find((s: any) => s.id === "split").winner).toBe("B");
    await act(panel, cart, "late@example.com");
    // Both delays end: the early instance walks version 1 (hashed), the late one version 2 (B).
    await journeyTimers.run(env, Date.now() + 2 * 60 * MINUTE);
    const sent = await stepsSent(panel);
    const early = await contactId(panel, "early@example.com");
    const hashed = splitBranchOf(journey.id, { id: "split", branches: [{ percent: 90 }, { percent: 10 }] }, early) === 0 ? "a" : "b";
    expect(sent.get(early)).toEqual([hashed]);
    expect(sent.get(await contactId(panel, "late@example.com"))).toEqual(["b"]);
    const report = (await admin("GET", `${journey.path}/splits`)).body.splits[0];
    expect(report.winner).toBe("B");
    expect(report.branches.map((b: any) => b.winner)).toEqual([false, true]);
  });

  it("a split step run again after a crash takes the branch it took, even once another was promoted meanwhile", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "split", type: "split", branches: [{ percent: 50, then: "a" }, { percent: 50, then: "b" }] }, mail("a", "A"), mail("b", "B")],
    });
    // A contact whose hash sends it down A, so that promoting B would differ.
    const api = apiFor(panel);
    let id = 0;
    for (let i = 0; ; i++) {
      await api("contact", "add", { data: { EMAIL: `crash${i}@example.com` } });
      id = await contactId(panel, `crash${i}@example.com`);
      if (splitBranchOf(journey.id, { id: "split", branches: [{ percent: 50 }, { percent: 50 }] }, id) === 0) break;
    }
    const crash = Date.now() - 2 * MINUTE;
    const instanceId = `jin_${crypto.randomUUID()}`;
    await enterInstances(panelData, [{ instanceId, panelId: panel.id, journeyId: journey.id, contactId: id, entryKey: "event:1", eventId: null, version: 1 }], crash, crash + POINT_LEASE_MS);
    const start: JourneyPoint = {
      id: 0,
      instanceId,
      stepId: "",
      panelId: panel.id,
      journeyId: journey.id,
      contactId: id,
      kind: "start",
      channel: null,
      msgid: null,
      events: null,
      activityKey: null,
      eventId: null,
      dueAt: null,
      outcome: "start",
      matchedEventId: null,
      createdAt: crash,
    };
    // The first run sends A's email, then dies before its writes (the split's entry among them).
    const dying = new Proxy(panelData, {
      get(target, name) {
        if (name === "batch") return async () => Promise.reject(new Error("crash"));
        const value = Reflect.get(target, name);
        return typeof value === "function" ? value.bind(target) : value;
      },
    }) as ShardDb;
    await expect(continuePoints(env, dying, [start], crash)).rejects.toThrow("crash");
    expect(await stepsSent(panel)).toEqual(new Map([[id, ["a"]]]));
    expect((await admin("POST", `${journey.path}/splits/split/winner`, { branch: "B" })).status).toBe(200);

    // After the lease, the cron takes the point up again: the instance walks its version, down A once more.
    await journeyTimers.run(env, Date.now());
    await journeyTimers.run(env, Date.now());
    expect(await stepsSent(panel)).toEqual(new Map([[id, ["a"]]]));
    const entries = await panelData.prepare("SELECT branch FROM journey_split_entries WHERE instance_id = ?").bind(instanceId).all<{ branch: string }>();
    expect(entries.results).toEqual([{ branch: "A" }]);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, completed: 1 });
  });
});

describe("journey goals", () => {
  it("a contact who reaches the goal leaves wherever it waits, counted as converted on the journey and its report", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      goal: { activity: "purchase" },
      steps: [{ id: "later", type: "delay", for: "1h" }, { ...mail("nudge", "Come back"), after: "later" }, { id: "wait", type: "wait_for_event", events: { activity: "add_to_cart" }, within: "1d", after: "nudge" }],
    });
    // The goal is the journey's own and is validated as the trigger's is.
    expect((await admin("GET", journey.path)).body.goal).toEqual({ activity: "purchase" });
    await act(panel, cart, "buyer@example.com");
    await act(panel, cart, "browser@example.com");
    await act(panel, buy, "buyer@example.com");
    await act(panel, buy, "buyer@example.com");
    expect(await countersOf(journey)).toMatchObject({ entered: 2, active: 1, exited: 1, converted: 1, steps: { later: { waiting: 1 } } });
    // The converted contact's delay ended without going on: no nudge.
    await journeyTimers.run(env, Date.now() + 2 * 60 * MINUTE);
    const sent = await stepsSent(panel);
    expect(sent.get(await contactId(panel, "buyer@example.com"))).toBeUndefined();
    expect(sent.get(await contactId(panel, "browser@example.com"))).toEqual(["nudge"]);
    const report = await admin("GET", `${journey.path}/report`);
    expect(report.body).toMatchObject({ entered: 2, exited: 1, converted: 1 });
    // The conversion carries its contact's bucket (decision 0038); the back-fill sets it again
    // on a row left at 0, from the contact's.
    const buyer = { key: "buyer@example.com", bucket: contactBucket(panel.id, "buyer@example.com") };
    expect(await bucketsOf(panel, "journey_conversions")).toEqual([buyer]);
    await panelData.prepare("UPDATE journey_conversions SET bucket = 0 WHERE panel_id = ?").bind(panel.id).run();
    await fillContactBuckets(panelData, [[await contactId(panel, buyer.key), panel.id, buyer.bucket]]);
    expect(await bucketsOf(panel, "journey_conversions")).toEqual([buyer]);
  });

  it("refuses a goal that names no activity or the trigger's own", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    const base = { name: "G", trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "d", type: "delay", for: "1h" }] };
    const none = await admin("POST", `/panels/${panel.id}/journeys`, { ...base, goal: { activity: "nothing" } });
    expect(none.status).toBe(400);
    expect(JSON.stringify(none.body)).toContain("goal.activity");
    const same = await admin("POST", `/panels/${panel.id}/journeys`, { ...base, goal: { activity: "add_to_cart" } });
    expect(same.status).toBe(400);
    expect(JSON.stringify(same.body)).toContain("the goal must be another activity");
    const split = await admin("POST", `/panels/${panel.id}/journeys`, { ...base, steps: [{ id: "s", type: "split", branches: [{ percent: 70 }, { percent: 20 }] }] });
    expect(split.status).toBe(400);
    expect(JSON.stringify(split.body)).toContain("steps.0.branches");
  });
});

describe("split conversions in the journeys pipeline step", () => {
  /** A shard that fails any statement: a call that prepares none passes. */
  const noStatements = { prepare: () => { throw new Error("no statement expected"); }, batch: () => { throw new Error("no statement expected"); } } as unknown as ShardDb;
  const goalEvent = { panelId: "p", contactId: 1, channel: "custom_activity", name: "purchase", occurredAt: 1, receivedAt: 1, id: 1, msgid: null, journeyId: null, params: {} } as unknown as PipelineEvent;

  it("runs no conversion statement when no live journey has a split goal, and marks conversions as before when one has", async () => {
    const plain = { definition: { steps: [{ id: "s", type: "split", branches: [{ percent: 50 }, { percent: 50 }] }, mail("m", "Hi")] } } as unknown as Journey;
    expect(await convertSplits(noStatements, "p", [], [goalEvent])).toBe(false);
    expect(await convertSplits(noStatements, "p", [plain], [goalEvent])).toBe(false);

    // With a split goal, the pipeline marks the conversion (as the first test above, through events).
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "ab", type: "split", branches: [{ percent: 50, then: "a" }, { percent: 50 }], goal: { activity: "purchase", within: "1d" } }, mail("a", "Ten off")],
    });
    await act(panel, cart, "goal@example.com");
    await act(panel, buy, "goal@example.com");
    const row = await panelData.prepare("SELECT converted_at FROM journey_split_entries WHERE panel_id = ?").bind(panel.id).first<{ converted_at: number | null }>();
    expect(row?.converted_at).not.toBeNull();
  });

  it("converts exactly the entries the rule the simulation applies converts (splitGoalAt, splitGoalMet)", async () => {
    const panel = await createPanel();
    const step = { goal: { activity: "Purchase", within: "1d" } };
    const journey = { definition: { steps: [{ id: "ab", type: "split", branches: [{ percent: 50 }, { percent: 50 }], ...step }] } } as unknown as Journey;
    const at = 1_700_000_000_000;
    const DAY = 86_400_000;
    // One entry a contact, each met by one event: before the split, at it, within, at the window's end, after it, another case, another activity.
    const cases: Array<{ name: string; occurredAt: number }> = [
      { name: "purchase", occurredAt: at - 1 },
      { name: "purchase", occurredAt: at },
      { name: "purchase", occurredAt: at + DAY / 2 },
      { name: "purchase", occurredAt: at + DAY },
      { name: "purchase", occurredAt: at + DAY + 1 },
      { name: "PURCHASE", occurredAt: at + 1 },
      { name: "view", occurredAt: at + 1 },
    ];
    const goal = splitGoalAt(step, at)!;
    await panelData.batch(
      cases.map((_, i) => insertSplitEntryStatement(panelData, { instanceId: `ins_rule_${panel.id}_${i}`, stepId: "ab", panelId: panel.id, journeyId: "jrn_rule", contactId: i + 1, branch: "A", goal }, at)),
    );
    const events = cases.map((c, i) => ({ panelId: panel.id, contactId: i + 1, channel: "custom_activity", name: c.name, occurredAt: c.occurredAt, receivedAt: c.occurredAt, id: i + 1, msgid: null, journeyId: null, params: {} }) as unknown as PipelineEvent);
    await convertSplits(panelData, panel.id, [journey], events);
    const { results } = await panelData.prepare("SELECT contact_id, converted_at FROM journey_split_entries WHERE panel_id = ? ORDER BY contact_id").bind(panel.id).all<{ contact_id: number; converted_at: number | null }>();
    const converted = results.map((r) => r.converted_at !== null);
    expect(converted).toEqual(cases.map((c) => splitGoalMet(goal, at, { channel: "custom_activity", ...c })));
    expect(converted).toEqual([false, true, true, true, false, true, false]);
  });
});
