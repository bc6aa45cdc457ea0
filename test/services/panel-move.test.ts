import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handleMoveNudge, MOVE_TUNING, moveNudge, panelMovesRedrive, runMoveStep, type MoveTuning } from "../../src/services/panels/move";
import { getPanelMove, insertPanelMove, leasePanelMove } from "../../src/store/panel-moves";
import { MOVED_TABLES } from "../../src/store/panel-move/tables";
import { countRows } from "../../src/store/panel-move/rows";
import { liftFence, raiseFence } from "../../src/store/panel-move/triggers";
import { FIRST_MOVE_RANGE, ID_RANGE_SIZE } from "../../src/store/id-ranges";
import { contactBucket } from "../../src/domain/partitions";
import type { ShardDb } from "../../src/store/shards";
import { defineActivity, eventually, postActivity } from "../support/activity";
import { admin, apiFor, createPanel, type TestPanel } from "../support/helpers";
import { act, createWebhook, cronAt, delivered, MINUTE, startJourney } from "../support/journeys";
import { asOperator, operatorWithRole } from "../support/operators";
import { pushFigures, subscribeBrowserOf, webPushOn } from "../support/push";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { countEngagement } from "../../src/store/campaigns/messages";
import { outbox } from "../support/broadcasts";
import { listCampaign } from "../support/partitions";

// Two shards locally (SHARD_0, SHARD_1); panels start on SHARD_1 and move to SHARD_0. The move
// runs as it does deployed: steps on the IMPORTS queue, each nudging the next.

const shard = (n: number) => (n === 0 ? env.SHARD_0 : env.SHARD_1) as unknown as ShardDb;
const saved: MoveTuning = { ...MOVE_TUNING };

beforeAll(() => {
  // Small pages and a short settle, so a small panel still copies in many pages and the test ends soon.
  // Catching up takes fenceBelow changes a round: each add and activity of the stream below
  // makes about 17, and at 20 a round a loaded machine's catch-up fell ever further behind the
  // stream (never fenced, the move not done in 60 s, on main as well).
  Object.assign(MOVE_TUNING, { pageRows: 25, fenceBelow: 200, stepMs: 300, settleMs: 1_000 } satisfies Partial<MoveTuning>);
});
afterAll(() => {
  Object.assign(MOVE_TUNING, saved);
});

/** The panel's rows per table on a shard, tables without any left out: the count the move itself compares. */
async function panelRows(n: number, panelId: string): Promise<Record<string, number>> {
  const counts = await countRows(shard(n), MOVED_TABLES, panelId);
  return Object.fromEntries(MOVED_TABLES.map((t, i) => [t.name, counts[i]!] as const).filter(([, count]) => count !== 0));
}

async function moveTriggers(n: number): Promise<string[]> {
  const { results } = await shard(n).prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'move_%'").all<{ name: string }>();
  return results.map((r) => r.name);
}

async function finished(panel: TestPanel, moveId: string, timeoutMs = 60_000): Promise<any> {
  return eventually(async () => {
    const move = (await admin("GET", `/panels/${panel.id}/moves/${moveId}`)).body;
    return move.state === "done" || move.state === "failed" ? move : undefined;
  }, timeoutMs);
}

/** Retries a call the fence refused (503) until it is answered: what a client does with a 503. */
async function untilAnswered<T extends { status: number }>(send: () => Promise<T>, refusals: { n: number }): Promise<T> {
  for (;;) {
    const answer = await send();
    if (answer.status !== 503) return answer;
    refusals.n++;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe("moving a panel to another shard", () => {
  it("copies every row, keeps serving adds and activities while it runs, and loses or doubles nothing", async () => {
    const panel = await createPanel({ shard: 1 });
    const other = await createPanel({ shard: 1 });
    const api = apiFor(panel);
    const activityId = await defineActivity(panel, "visit", { page: "string" });
    const listId = (await api("lists", "add", { listname: "Moving" })).body.listid as number;
    // Every member of the list enters a journey and waits in it: instances, points and the
    // triggers' aggregates all move, and none may count twice.
    const journey = await startJourney(panel, { trigger: { type: "list", listid: listId }, steps: [{ id: "later", type: "delay", for: "1h" }] });
    for (let i = 0; i < 60; i++) await api("contact", "add", { data: { EMAIL: `seed${i}@example.com`, NAME: `Seed ${i}` }, listid: listId });
    for (let i = 0; i < 30; i++) expect((await postActivity(panel.clientId, { activityid: activityId, identity: `seed${i}@example.com`, activity_params: { page: `/p${i}` } })).status).toBe(200);
    await apiFor(other)("contact", "add", { data: { EMAIL: "stays@example.com" } });
    // Two browsers: the push screen's counters move with the panel (issue 42).
    await webPushOn(panel);
    for (const i of [0, 1]) expect(await subscribeBrowserOf(panel, `https://push.example.net/move/${i}`, `seed${i}@example.com`)).toBe(200);
    await eventually(async () => ((await panelRows(1, panel.id)).events === 30 ? true : undefined));
    const before = await panelRows(1, panel.id);
    const otherBefore = await panelRows(1, other.id);

    // A steady stream of adds and activities while the move runs.
    let streaming = true;
    const refusals = { n: 0 };
    const added: string[] = [];
    let activities = 0;
    const stream = (async () => {
      for (let i = 0; streaming; i++) {
        const email = `live${i}@example.com`;
        const add = await untilAnswered(() => api("contact", "add", { data: { EMAIL: email }, listid: listId }), refusals);
        expect(add.status, JSON.stringify(add.body)).toBe(200);
        added.push(email);
        // A steady stream, not a flood: the move's steps and the polls share this isolate's turns.
        await new Promise((resolve) => setTimeout(resolve, 15));
        const posted = await untilAnswered(() => postActivity(panel.clientId, { activityid: activityId, identity: email, activity_params: { page: "/live" } }), refusals);
        expect(posted.status, JSON.stringify(posted.body)).toBe(200);
        activities++;
      }
    })();

    const started = await admin("POST", `/panels/${panel.id}/moves`, { shard: 0 });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    expect(started.body).toMatchObject({ from_shard: 1, to_shard: 0, state: "copying" });
    const move = await finished(panel, started.body.id);

    streaming = false;
    await stream;
    expect(move, JSON.stringify(move)).toMatchObject({ state: "done", error: null });
    expect(move.rows_copied).toBeGreaterThanOrEqual(Object.values(before).reduce((a, b) => a + b, 0));
    expect(move.pause_ms).toBeGreaterThanOrEqual(0);
    expect(added.length).toBeGreaterThan(0);

    // The other panel of the old shard saw nothing.
    expect(await panelRows(1, other.id)).toEqual(otherBefore);

    // The directory names the new shard; the old one holds nothing of the panel, nor any move trigger.
    expect((await admin("GET", `/panels/${panel.id}`)).body.shard).toBe(0);
    expect(await panelRows(1, panel.id)).toEqual({});
    expect(await moveTriggers(1)).toEqual([]);
    expect((await shard(1).prepare("SELECT COUNT(*) AS n FROM panels_in_transit").first<{ n: number }>())!.n).toBe(0);

    // Every acknowledged add and activity is there exactly once, once the pipeline took them in.
    await eventually(async () => {
      const pending = await shard(0).prepare("SELECT COUNT(*) AS n FROM event_batches WHERE panel_id = ? AND state = 'pending'").bind(panel.id).first<{ n: number }>();
      return pending!.n === 0 ? true : undefined;
    }, 60_000);
    const after = await panelRows(0, panel.id);
    expect(after.contacts).toBe(60 + added.length);
    expect(after.list_members).toBe(60 + added.length);
    expect(after.events).toBe(30 + activities);
    // Rows keep their contact's bucket (decision 0038): the copy takes every column.
    const buckets = await shard(0)
      .prepare(
        `SELECT c.pk_value AS key, c.bucket, MIN(m.bucket = c.bucket) AS members, MIN(COALESCE(e.bucket = c.bucket, 1)) AS events,
           MIN(COALESCE(i.bucket = c.bucket, 1)) AS instances
         FROM contacts c JOIN list_members m ON m.contact_id = c.id LEFT JOIN events e ON e.contact_id = c.id LEFT JOIN journey_instances i ON i.contact_id = c.id
         WHERE c.panel_id = ? GROUP BY c.id`,
      )
      .bind(panel.id)
      .all<{ key: string; bucket: number; members: number; events: number; instances: number }>();
    expect(buckets.results.filter((r) => r.bucket !== contactBucket(panel.id, r.key) || !r.members || !r.events || !r.instances)).toEqual([]);
    const figures = await eventually(async () => {
      const row = await shard(0)
        .prepare(
          `SELECT (SELECT COUNT(*) FROM journey_instances WHERE journey_id = ?1) AS instances,
                  (SELECT SUM(entered) FROM journey_stats WHERE journey_id = ?1) AS entered,
                  (SELECT SUM(waiting) FROM journey_step_waiting WHERE journey_id = ?1) AS waiting`,
        )
        .bind(journey.id)
        .first<{ instances: number; entered: number; waiting: number }>();
      return row!.instances === 60 + added.length ? row : undefined;
      // The journey entries of the adds made during the move run through the queue after it: a
      // loaded machine (a full CI run beside other work) took longer than the default 20 s.
    }, 60_000);
    expect(figures).toEqual({ instances: 60 + added.length, entered: 60 + added.length, waiting: 60 + added.length });
    const last = await api("contact", "view", { data: added[added.length - 1] });
    expect(last.status).toBe(200);
    expect(last.body.lists).toEqual([{ id: listId, listname: "Moving" }]);
    // The list's member counter moved with it and counted each membership once (issue 42).
    expect((await api("lists", "getall")).body.lists.map((l: { id: number; count: number }) => [l.id, l.count])).toEqual([[listId, 60 + added.length]]);
    await api("contact", "add", { data: { EMAIL: "counted@example.com" }, listid: listId });
    expect((await api("lists", "getall")).body.lists[0].count).toBe(61 + added.length);
    await api("contact", "delete", { data: "counted@example.com", listid: String(listId) });
    expect((await api("lists", "getall")).body.lists[0].count).toBe(60 + added.length);

    expect(await pushFigures(panel)).toEqual([2, 0]);
    expect(await subscribeBrowserOf(panel, "https://push.example.net/move/2", "seed2@example.com")).toBe(200);
    expect(await pushFigures(panel)).toEqual([3, 0]);

    // The panel keeps working on its new shard. The copied rows keep their ids; the new shard took
    // a fresh id range above them (else it would go on in the old shard's range), and the old
    // shard goes on in its own.
    const fresh = await api("contact", "add", { data: { EMAIL: "after@example.com" } });
    expect(fresh.status).toBe(200);
    const ids = await shard(0)
      .prepare("SELECT pk_value, id FROM contacts WHERE panel_id = ? AND pk_value IN ('seed0@example.com', 'after@example.com')")
      .bind(panel.id)
      .all<{ pk_value: string; id: number }>();
    const idOf = Object.fromEntries(ids.results.map((r) => [r.pk_value, r.id]));
    expect(idOf["seed0@example.com"]).toBeGreaterThanOrEqual(ID_RANGE_SIZE);
    expect(idOf["seed0@example.com"]).toBeLessThan(2 * ID_RANGE_SIZE);
    expect(idOf["after@example.com"]).toBeGreaterThan(FIRST_MOVE_RANGE * ID_RANGE_SIZE);
    await apiFor(other)("contact", "add", { data: { EMAIL: "next@example.com" } });
    const next = await shard(1).prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = 'next@example.com'").bind(other.id).first<{ id: number }>();
    expect(next!.id).toBeGreaterThan(idOf["seed0@example.com"]!);
    expect(next!.id).toBeLessThan(2 * ID_RANGE_SIZE);

    console.log(`panel move: ${move.rows_copied} rows copied, ${move.changes_applied} changes caught up, pause ${move.pause_ms} ms, ${refusals.n} writes refused and retried, ${added.length} adds and ${activities} activities during the move`);
  }, 120_000);

  it("carries an A/B test's counters (decision 0057): the report's figures the same on the new shard, counted on there", async () => {
    const panel = await createPanel({ shard: 1 });
    const api = apiFor(panel);
    expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
    const list = (await api("lists", "add", { listname: "Tested" })).body.listid as number;
    for (let i = 0; i < 6; i++) await api("contact", "add", { data: { EMAIL: `ab${i}@example.com` }, listid: list });
    const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
    const test = { variants: [{ subject: "A" }, { subject: "B" }], test_share: 50, metric: "unique_opens", wait_minutes: 600 };
    expect((await admin("PUT", `/panels/${panel.id}/campaigns/${id}/ab-test`, test)).status).toBe(200);
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true })).status).toBe(200);
    await publishDueBroadcasts(env, Date.now());
    // Half of the six tested, the test share sent; one of them opens.
    await eventually(async () => ((await outbox(panel)).length === 3 ? true : undefined));
    const opened = async (n: number) => {
      const { results } = await shard(n).prepare("SELECT contact_id FROM campaign_messages WHERE campaign_id = ? AND status = 'sent' AND opens = 0 ORDER BY contact_id").bind(id).all<{ contact_id: number }>();
      expect(await countEngagement(shard(n), { panelId: panel.id, campaignId: id, contactId: results[0]!.contact_id }, "open", Date.now())).not.toBeNull();
    };
    await opened(1);
    const results = async () => (await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test;
    const before = await results();
    const sum = (r: any, field: string) => r.variants.reduce((n: number, v: any) => n + v[field], 0);
    expect([sum(before, "recipients"), sum(before, "sent"), sum(before, "unique_opens"), before.rest.recipients]).toEqual([3, 3, 1, 3]);

    const started = await admin("POST", `/panels/${panel.id}/moves`, { shard: 0 });
    expect(started.status).toBe(202);
    expect((await finished(panel, started.body.id)).state).toBe("done");
    const counters = (n: number) => shard(n).prepare("SELECT COUNT(*) AS n FROM campaign_ab_tallies WHERE campaign_id = ?").bind(id).first<number>("n");
    expect([await counters(0), await counters(1)]).toEqual([3, 0]);
    expect(await results()).toEqual(before);
    // Counted on by the new shard's triggers.
    await opened(0);
    expect(sum(await results(), "unique_opens")).toBe(2);
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/cancel`, {})).body.status).toBe("cancelled");
  }, 60_000);

  it("refuses the panel's writes while the fence stands, changing nothing (503), and takes them again after", async () => {
    const panel = await createPanel({ shard: 1 });
    const api = apiFor(panel);
    await raiseFence(shard(1), panel.id);
    try {
      const refused = await api("contact", "add", { data: { EMAIL: "fenced@example.com" } });
      expect(refused.status).toBe(503);
      expect(JSON.stringify(refused.body)).toContain("switching databases");
      expect((await panelRows(1, panel.id)).contacts).toBeUndefined();
    } finally {
      await liftFence(shard(1), panel.id);
    }
    expect((await api("contact", "add", { data: { EMAIL: "fenced@example.com" } })).status).toBe(200);
  });

  it("fails a move whose copy differs from the panel and leaves the panel where it was", async () => {
    const panel = await createPanel({ shard: 1 });
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "kept@example.com" } });
    // A stray row of the panel on the target: the copy's row counts will not match.
    await shard(0).prepare("INSERT INTO attributes (panel_id, name, type, created_at) VALUES (?, 'STRAY', 'string', 0)").bind(panel.id).run();
    const started = await admin("POST", `/panels/${panel.id}/moves`, { shard: 0 });
    expect(started.status).toBe(202);
    const move = await finished(panel, started.body.id);

    expect(move.state).toBe("failed");
    expect(move.error).toContain("attributes");
    expect((await admin("GET", `/panels/${panel.id}`)).body.shard).toBe(1);
    expect(await panelRows(0, panel.id)).toEqual({});
    expect(await moveTriggers(1)).toEqual([]);
    expect((await api("contact", "add", { data: { EMAIL: "later@example.com" } })).status).toBe(200);
    expect((await panelRows(1, panel.id)).contacts).toBe(2);
  }, 60_000);

  it("resumes a move whose step died at the second cron tick after the service is healthy at the latest, never while the dead step's lease runs", async () => {
    const panel = await createPanel({ shard: 1 });
    const api = apiFor(panel);
    for (let i = 0; i < 3; i++) await api("contact", "add", { data: { EMAIL: `crash${i}@example.com` } });
    const before = await panelRows(1, panel.id);
    // A step took the move a second before a cron tick (the worst moment), minutes ago, and died
    // at once (kill -9): its lease holds it, no nudge follows.
    const died = Math.floor(Date.now() / 60_000) * 60_000 - 2 * 60_000 - 1000;
    const id = `mov_crash_${panel.id}`;
    expect(await insertPanelMove(env.DB, { id, panelId: panel.id, fromShard: 1, toShard: 0, createdAt: died })).toBe(true);
    expect(await leasePanelMove(env.DB, id, "dead", died, died + MOVE_TUNING.leaseMs)).not.toBe("held");

    const sent: unknown[] = [];
    const imports = { send: async (body: unknown) => void sent.push(body), sendBatch: async (messages: Array<{ body: unknown }>) => void sent.push(...messages.map((m) => m.body)) };
    const cronEnv = { ...env, IMPORTS: imports as unknown as Queue } as Env;
    const nudged = () => sent.some((body) => JSON.stringify(body) === JSON.stringify(moveNudge(id)));
    // While the dead step's lease runs, neither the cron nor a stray nudge's step touches the move.
    await panelMovesRedrive.run(cronEnv, died + MOVE_TUNING.leaseMs - 1);
    expect(nudged()).toBe(false);
    expect(await runMoveStep(env, id, MOVE_TUNING, () => died + MOVE_TUNING.leaseMs - 1)).toEqual({ next: "none" });
    expect(await getPanelMove(env.DB, panel.id, id)).toMatchObject({ state: "copying", rowsCopied: 0, attempts: 0 });
    // Healthy again just after the crash. Ticks come on the minute: the first after it finds the
    // lease still running, the second resumes the move (a 90 s rule waited for the third).
    const firstTick = died + 1000;
    await panelMovesRedrive.run(cronEnv, firstTick);
    expect(nudged()).toBe(false);
    await panelMovesRedrive.run(cronEnv, firstTick + 60_000);
    expect(nudged()).toBe(true);

    await handleMoveNudge(env, id);
    const move = await finished(panel, id);
    expect(move.state).toBe("done");
    expect((await admin("GET", `/panels/${panel.id}`)).body.shard).toBe(0);
    expect(await panelRows(0, panel.id)).toEqual(before);
    expect(await panelRows(1, panel.id)).toEqual({});
  }, 60_000);

  it("refuses a move to the panel's own shard, to a shard the deployment lacks, or while one runs", async () => {
    const panel = await createPanel({ shard: 1 });
    expect((await admin("POST", `/panels/${panel.id}/moves`, { shard: 1 })).body).toMatchObject({ errors: [{ field: "shard", message: "the panel is on shard 1 already" }] });
    const missing = await admin("POST", `/panels/${panel.id}/moves`, { shard: 9 });
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ error: "shard: this deployment has no shard 9 (shards 0 to 1)", errors: [{ field: "shard", message: "this deployment has no shard 9 (shards 0 to 1)" }] });
    // A new panel is refused a shard the deployment lacks in the same words.
    expect(await admin("POST", "/panels", { name: "Nowhere", shard: 9 })).toEqual({ status: 400, body: missing.body });
    expect((await admin("POST", `/panels/${panel.id}/moves`, { shard: "0" })).status).toBe(400);
    // The deployment's admin moves panels; not even the panel's owner may.
    const owner = await operatorWithRole(panel.id, "owner");
    expect((await asOperator(owner, "POST", `/panels/${panel.id}/moves`, { shard: 0 })).status).toBe(403);
    const first = await admin("POST", `/panels/${panel.id}/moves`, { shard: 0 });
    expect(first.status).toBe(202);
    const second = await admin("POST", `/panels/${panel.id}/moves`, { shard: 0 });
    expect(second.status).toBe(409);
    expect(second.body.errors[0]).toMatchObject({ field: "shard", message: "a move of this panel is under way" });
    expect((await finished(panel, first.body.id)).state).toBe("done");
    expect((await admin("GET", `/panels/${panel.id}/moves`)).body.moves.map((m: any) => m.id)).toEqual([first.body.id]);
  }, 60_000);
  it("fires a delay due after the switch once, on the target, while the source's fenced copy waits for cleaning and the source fires the other panels' delays", async () => {
    const delayPanel = async (key: string) => {
      const panel = await createPanel({ shard: 1 });
      const cart = await defineActivity(panel, "add_to_cart");
      const hook = await createWebhook(panel);
      await startJourney(panel, {
        trigger: { type: "activity", activity: "add_to_cart" },
        steps: [
          { id: "hello", type: "webhook", webhook: hook.id, params: { Action: "hello" } },
          { id: "pause", type: "delay", for: "1h", after: "hello" },
          { id: "later", type: "webhook", webhook: hook.id, after: "pause", params: { Action: "later" } },
        ],
      });
      expect((await apiFor(panel)("contact", "add", { data: { EMAIL: key } })).status).toBe(200);
      await act(panel, cart, key);
      return { panel, hook };
    };
    const calls = async (hook: { id: string; bucket: string }) => (await delivered(hook)).map((e) => `${e.custom_params.Action} ${e.event_params.identity}`).sort();
    const moved = await delayPanel("mover@example.com");
    const other = await delayPanel("other@example.com");
    const moveId = `mov_timers_${moved.panel.id}`;
    expect(await insertPanelMove(env.DB, { id: moveId, panelId: moved.panel.id, fromShard: 1, toShard: 0, createdAt: Date.now() })).toBe(true);
    const clock = Date.now();
    const tuning: MoveTuning = { ...MOVE_TUNING, stepMs: 60_000, settleMs: 1_000 };
    const step = () => runMoveStep(env, moveId, tuning, () => clock);

    // Copied, in transit on the target.
    expect(await step()).toEqual({ next: "now" });
    const waiting = (n: number) => shard(n).prepare("SELECT COUNT(*) AS n FROM journey_points WHERE panel_id = ? AND kind = 'delay' AND outcome IS NULL").bind(moved.panel.id).first<number>("n");
    expect([await waiting(0), await waiting(1)]).toEqual([1, 1]);
    // Switched; the source's old rows stay (fenced) until cleaning. The delay falls due: the target fires it, the source the other panel's.
    expect(await step()).toEqual({ next: "later", ms: tuning.settleMs });
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    expect(await calls(other.hook)).toEqual(["hello other@example.com", "later other@example.com"]);
    expect(await calls(moved.hook)).toEqual(["hello mover@example.com", "later mover@example.com"]);
    expect([await waiting(0), await waiting(1)]).toEqual([0, 1]);
  }, 60_000);
});
