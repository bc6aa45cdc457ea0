import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { contactBucket } from "../../src/domain/partitions";
import { MOVE_TUNING, runMoveStep, startPanelMove, startPartitionSplit, type MoveTuning } from "../../src/services/panels/move";
import { getPanel } from "../../src/store/panels";
import { getCampaign } from "../../src/store/campaigns/definitions";
import { carryCampaignsToTarget } from "../../src/services/broadcasts/split-target";
import { refreshPanelCounts } from "../../src/services/overview/counts";
import { getPanelMove, insertPanelMove } from "../../src/store/panel-moves";
import { isPanelMovingError } from "../../src/lib/moving";
import type { ShardDb } from "../../src/store/shards";
import { defineActivity, eventually, postActivity } from "../support/activity";
import { admin, apiFor, call, createPanel, panelData, receiver, TEST_SHARD, type TestPanel } from "../support/helpers";
import { instancesOn, keysOn, listCampaign, settledOnBoth, textsOn } from "../support/partitions";
import { pushFigures, subscribeBrowserOf, webPushOn } from "../support/push";
import { pushSubscriptionsOf } from "../../src/store/push";
import { twilioSignature } from "../../src/services/channels/sms/twilio";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { recordBounce } from "../../src/services/broadcasts/engagement";
import { TrackingSigner } from "../../src/services/channels/email/tracking";
import { setJourneyStatus } from "../../src/services/journeys/set-status";
import { campaign, outbox, waitForCampaign } from "../support/broadcasts";
import { collectingQueue, runCron, withBindings, type CollectingQueue } from "../support/cron";
import { stopCopiesTask } from "../../src/services/panels/stop-copies";
import { STOP_COPIES_AFTER_MAP_MS } from "../../src/services/access/partitions";
import { handleQueue } from "../../src/jobs/queues";
import { readMoveNudge } from "../../src/services/panels/move";
import { decideDueAbTests } from "../../src/services/broadcasts/ab-decision";
import { act, cartPanel, countersOf, cronAt, createWebhook, delivered, helloPauseLater, messagesOf, MINUTE, startJourney } from "../support/journeys";

// Decision 0047 (0038 step 5): a panel on one partition (SHARD_1, its home, no map) is split
// while it serves: buckets 2048–4095 move to SHARD_0. The steps are run here one by one, with
// a clock of the test's own, so writes land between them where the test wants.

const shard0 = env.SHARD_0 as unknown as ShardDb;
const AT = 2048;
const moving = (panelId: string, key: string) => contactBucket(panelId, key) >= AT;

const TUNING: MoveTuning = { ...MOVE_TUNING, pageRows: 4, fenceBelow: 200, stepMs: 60_000, settleMs: 1_000 };

/** "key in list" for each membership on `db`, its contact found on the same shard. */
const membersOn = (db: ShardDb, panelId: string) =>
  textsOn(db, "SELECT c.pk_value || ' in ' || m.list_id FROM list_members m JOIN contacts c ON c.id = m.contact_id WHERE m.panel_id = ? ORDER BY 1", panelId);

/** "key page" for each event on `db`, its contact found on the same shard. */
const eventsOn = (db: ShardDb, panelId: string) =>
  textsOn(db, "SELECT c.pk_value || ' ' || (e.params ->> '$.page') FROM events e JOIN contacts c ON c.id = e.contact_id WHERE e.panel_id = ? ORDER BY 1", panelId);

async function rowCount(db: ShardDb, table: string, panelId: string): Promise<number> {
  return (await db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE panel_id = ?`).bind(panelId).first<{ n: number }>())!.n;
}

async function counterOn(db: ShardDb, panelId: string, listId: number): Promise<number | undefined> {
  return (await db.prepare("SELECT member_count AS n FROM lists WHERE panel_id = ? AND id = ?").bind(panelId, listId).first<{ n: number }>())?.n;
}

const saved: MoveTuning = { ...MOVE_TUNING };
beforeAll(() => {
  // The split started through the admin API runs from the queue: a short settle so it ends soon.
  Object.assign(MOVE_TUNING, { pageRows: 25, stepMs: 300, settleMs: 1_000 } satisfies Partial<MoveTuning>);
});
afterAll(() => {
  Object.assign(MOVE_TUNING, saved);
});

async function moveTriggers(db: ShardDb): Promise<string[]> {
  const { results } = await db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'move_%'").all<{ name: string }>();
  return results.map((r) => r.name);
}

describe("splitting a panel's partition while it serves (decision 0047)", () => {
  it("moves the contacts of the upper buckets with their memberships and events, catches up writes made meanwhile, splits the map and removes the old rows after the settle time", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const activityId = await defineActivity(panel, "visit", { page: "string" });
    const list = (await api("lists", "add", { listname: "Everyone" })).body.listid as number;
    const keys = Array.from({ length: 24 }, (_, i) => `split${i}@example.com`);
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key }, listid: String(list) })).status).toBe(200);
    for (const [i, key] of keys.slice(0, 12).entries()) {
      expect((await postActivity(panel.clientId, { activityid: activityId, identity: key, activity_params: { page: `/p${i}` } })).status).toBe(200);
    }
    await eventually(async () => ((await rowCount(panelData, "events", panel.id)) === 12 ? true : undefined));
    const topicNames = async (db: ShardDb) => (await db.prepare("SELECT name FROM topics WHERE panel_id = ? ORDER BY name").bind(panel.id).all<{ name: string }>()).results.map((t) => t.name);
    const early = (await admin("POST", `/panels/${panel.id}/topics`, { name: "Early" })).body.id as string;
    await admin("POST", `/panels/${panel.id}/topics`, { name: "Kept" });
    const movers = keys.filter((k) => moving(panel.id, k));
    expect(movers.length).toBeGreaterThan(2);
    expect(movers.length).toBeLessThan(keys.length);
    // A browser of a contact on each side of the split point: the push screen's counters (issue 42).
    await webPushOn(panel);
    const stayerKey = keys.find((k) => !moving(panel.id, k))!;
    for (const key of [movers[0]!, stayerKey]) expect(await subscribeBrowserOf(panel, `https://push.example.net/split/${key}`, key)).toBe(200);

    // The move as startPartitionSplit records it, its steps run here rather than from the queue.
    const moveId = `mov_split_${panel.id}`;
    expect(await insertPanelMove(env.DB, { id: moveId, panelId: panel.id, fromShard: TEST_SHARD, toShard: 0, buckets: { first: AT, last: 4095 }, createdAt: Date.now() })).toBe(true);
    let clock = Date.now();
    const step = () => runMoveStep(env, moveId, TUNING, () => clock);

    // Copying: the configuration is mirrored first, then the moving buckets' rows, page by page.
    expect(await step()).toEqual({ next: "now" });
    expect((await getPanelMove(env.DB, panel.id, moveId))!.state).toBe("catching_up");
    expect(await shard0.prepare("SELECT name FROM lists WHERE panel_id = ? AND id = ?").bind(panel.id, list).first("name")).toBe("Everyone");
    expect(await topicNames(shard0)).toEqual(["Early", "Kept"]);

    // Writes while the move runs, on both sides of the split point: captured, not lost.
    const [newMover, newStayer] = [0, 1].map((side) => {
      for (let i = 0; ; i++) {
        const key = `late${i}@example.com`;
        if (moving(panel.id, key) === (side === 0)) return key;
      }
    });
    const second = (await api("lists", "add", { listname: "Late" })).body.listid as number;
    // Topics made and deleted meanwhile reach the target by the refresh before the switch (decision 0041).
    expect((await admin("POST", `/panels/${panel.id}/topics`, { name: "Late" })).status).toBe(201);
    expect((await admin("DELETE", `/panels/${panel.id}/topics/${early}`)).status).toBe(200);
    for (const key of [newMover!, newStayer!]) expect((await api("contact", "add", { data: { EMAIL: key }, listid: `${list},${second}` })).status).toBe(200);
    const [leaver, changed] = movers;
    expect((await api("contact", "delete", { data: leaver, listid: String(list) })).body).toMatchObject({ removed_from: [list] });
    expect((await api("contact", "update", { data: { EMAIL: changed, NAME: "Changed" } })).status).toBe(200);

    // Catching up, fence and switch in one step: few changes are left.
    expect(await step()).toEqual({ next: "later", ms: TUNING.settleMs });
    const switched = (await getPanelMove(env.DB, panel.id, moveId))!;
    expect(switched).toMatchObject({ state: "cleaning", error: null });
    expect(await topicNames(shard0)).toEqual(["Kept", "Late"]);
    expect(switched.pauseMs).toEqual(expect.any(Number));
    // The target's list rows count the members it took, from the switch on (the leaver left before).
    expect(await counterOn(shard0, panel.id, list)).toBe([...keys, newMover!].filter((k) => moving(panel.id, k)).length - 1);
    expect((await getPanel(env.DB, panel.id))!.partitions).toEqual([
      { firstBucket: 0, lastBucket: AT - 1, shard: TEST_SHARD, state: "active" },
      { firstBucket: AT, lastBucket: 4095, shard: 0, state: "active" },
    ]);

    // Until the old rows are gone, a writer still holding the old map is refused on the moving buckets only.
    const stale = panelData.prepare("UPDATE contacts SET updated_at = updated_at + 1 WHERE panel_id = ? AND pk_value = ?");
    await expect(stale.bind(panel.id, movers[2]).run()).rejects.toSatisfy(isPanelMovingError);
    const stayer = keys.find((k) => !moving(panel.id, k))!;
    expect((await stale.bind(panel.id, stayer).run()).meta.changes).toBe(1);

    // The API reaches the moved contacts on their new shard at once.
    expect((await api("contact", "view", { data: changed })).body).toMatchObject({ contact: { EMAIL: changed, NAME: "Changed" } });

    // Before the settle time nothing is deleted; after it the old rows go.
    expect(await step()).toEqual({ next: "later", ms: TUNING.settleMs });
    expect((await keysOn(panelData, panel.id)).filter((k) => moving(panel.id, k)).length).toBeGreaterThan(0);
    clock += TUNING.settleMs;
    expect(await step()).toEqual({ next: "none" });
    expect((await getPanelMove(env.DB, panel.id, moveId))!).toMatchObject({ state: "done", error: null });

    // Each contact, its memberships and its events on its key's shard only: nothing lost, nothing twice.
    const all = [...keys, newMover!, newStayer!];
    const on0 = all.filter((k) => moving(panel.id, k)).sort();
    const on1 = all.filter((k) => !moving(panel.id, k)).sort();
    expect(await keysOn(shard0, panel.id)).toEqual(on0);
    expect(await keysOn(panelData, panel.id)).toEqual(on1);
    const memberships = (ks: string[]) =>
      ks.flatMap((k) => [...(k === leaver ? [] : [`${k} in ${list}`]), ...([newMover, newStayer].includes(k) ? [`${k} in ${second}`] : [])]).sort();
    expect(await membersOn(shard0, panel.id)).toEqual(memberships(on0));
    expect(await membersOn(panelData, panel.id)).toEqual(memberships(on1));
    const events = keys.slice(0, 12).map((k, i) => `${k} /p${i}`);
    expect(await eventsOn(shard0, panel.id)).toEqual(events.filter((e) => moving(panel.id, e.split(" ")[0]!)).sort());
    expect(await eventsOn(panelData, panel.id)).toEqual(events.filter((e) => !moving(panel.id, e.split(" ")[0]!)).sort());
    for (const table of ["list_members", "events"]) {
      expect(await rowCount(shard0, table, panel.id) + (await rowCount(panelData, table, panel.id))).toBe(table === "events" ? events.length : memberships(all).length);
    }

    // Each shard's list rows count its own members; the API answers their sum.
    expect([await counterOn(shard0, panel.id, list), await counterOn(panelData, panel.id, list)]).toEqual([on0.length - 1, on1.length]);
    const counts = Object.fromEntries(((await api("lists", "getall")).body.lists as Array<{ listname: string; count: number }>).map((l) => [l.listname, l.count]));
    expect(counts).toEqual({ Everyone: all.length - 1, Late: 2 });

    // Each browser went with its contact (issue 42): its row on its key's shard, in its key's
    // bucket, where a push to the contact looks for it; each shard counts its own.
    const devicesOn = (db: ShardDb) => textsOn(db, "SELECT address || ' ' || bucket FROM push_subscriptions WHERE panel_id = ? ORDER BY 1", panel.id);
    const device = (key: string) => `https://push.example.net/split/${key} ${contactBucket(panel.id, key)}`;
    expect(await devicesOn(shard0)).toEqual([device(movers[0]!)]);
    expect(await devicesOn(panelData)).toEqual([device(stayerKey)]);
    for (const [db, key] of [[shard0, movers[0]!], [panelData, stayerKey]] as const) {
      const contactId = (await db.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, key).first<{ id: number }>())!.id;
      const found = await pushSubscriptionsOf(db, panel.id, "web", [contactId]);
      expect(found.get(contactId)?.map((d) => d.address)).toEqual([`https://push.example.net/split/${key}`]);
      expect(await db.prepare("SELECT n FROM push_counts WHERE panel_id = ? AND kind = 'web'").bind(panel.id).first("n")).toBe(1);
    }
    // The push screen counts each browser once, and one subscribed after the split on the target too.
    expect(await pushFigures(panel)).toEqual([2, 0]);
    expect(await subscribeBrowserOf(panel, "https://push.example.net/split/after", movers[1]!)).toBe(200);
    expect(await pushFigures(panel)).toEqual([3, 0]);

    // Nothing of the move is left on either shard.
    for (const db of [shard0, panelData]) {
      expect(await moveTriggers(db)).toEqual([]);
      expect(await rowCount(db, "panel_move_changes", panel.id)).toBe(0);
      expect(await db.prepare("SELECT COUNT(*) AS n FROM panels_in_transit WHERE panel_id LIKE ?").bind(`${panel.id}%`).first("n")).toBe(0);
    }
    // And the panel keeps serving both partitions.
    expect((await api("contact", "update", { data: { EMAIL: movers[2], NAME: "After" } })).status).toBe(200);
    expect(await shard0.prepare("SELECT attrs ->> '$.NAME' AS n FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, movers[2]).first("n")).toBe("After");
  });

  it("goes on cleaning after a step that died between the switch and its save: nothing written on the target since is lost, the split ends done", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const list = (await api("lists", "add", { listname: "Everyone" })).body.listid as number;
    const keys = Array.from({ length: 16 }, (_, i) => `died${i}@example.com`);
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key }, listid: String(list) })).status).toBe(200);
    const moveId = `mov_died_${panel.id}`;
    expect(await insertPanelMove(env.DB, { id: moveId, panelId: panel.id, fromShard: TEST_SHARD, toShard: 0, buckets: { first: AT, last: 4095 }, createdAt: Date.now() })).toBe(true);
    let clock = Date.now();
    const step = () => runMoveStep(env, moveId, TUNING, () => clock);
    expect(await step()).toEqual({ next: "now" });
    expect(await step()).toEqual({ next: "later", ms: TUNING.settleMs });
    const switched = (await getPanelMove(env.DB, panel.id, moveId))!;
    expect(switched.state).toBe("cleaning");

    // The step dies after the map names the target, before `cleaning` is saved: the row as it was.
    await env.DB.prepare("UPDATE panel_moves SET state = 'catching_up', switched_at = NULL, pause_ms = NULL WHERE id = ?").bind(moveId).run();
    // Meanwhile the panel serves from the new map: a new contact of the moved buckets lands on the target.
    const late = Array.from({ length: 100 }, (_, i) => `died-late${i}@example.com`).find((k) => moving(panel.id, k))!;
    expect((await api("contact", "add", { data: { EMAIL: late }, listid: String(list) })).status).toBe(200);
    expect(await keysOn(shard0, panel.id)).toContain(late);

    // The next step finds the switch made and goes on (catching up would find the copy differing and abort, deleting the target's rows).
    expect(await step()).toEqual({ next: "later", ms: TUNING.settleMs });
    expect((await getPanelMove(env.DB, panel.id, moveId))!).toMatchObject({ state: "cleaning", error: null });
    clock += TUNING.settleMs;
    expect(await step()).toEqual({ next: "none" });
    expect((await getPanelMove(env.DB, panel.id, moveId))!).toMatchObject({ state: "done", error: null });

    const all = [...keys, late].sort();
    expect(await keysOn(shard0, panel.id)).toEqual(all.filter((k) => moving(panel.id, k)));
    expect(await keysOn(panelData, panel.id)).toEqual(all.filter((k) => !moving(panel.id, k)));
    expect((await api("contact", "view", { data: late })).body).toMatchObject({ contact: { EMAIL: late } });
    expect((await api("lists", "getall", {})).body.lists).toEqual([expect.objectContaining({ id: list, count: all.length })]);
  });

  it("fails a split whose copy differs, leaving the panel whole on its shard: the target's copy and mirror removed, the map unchanged", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const list = (await api("lists", "add", { listname: "Stays" })).body.listid as number;
    const keys = Array.from({ length: 12 }, (_, i) => `abort${i}@example.com`);
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key }, listid: String(list) })).status).toBe(200);
    const moveId = `mov_abort_${panel.id}`;
    expect(await insertPanelMove(env.DB, { id: moveId, panelId: panel.id, fromShard: TEST_SHARD, toShard: 0, buckets: { first: AT, last: 4095 }, createdAt: Date.now() })).toBe(true);
    const step = () => runMoveStep(env, moveId, TUNING, () => Date.now());
    expect(await step()).toEqual({ next: "now" });
    // A membership lost on the target: the counts before the fence differ.
    expect((await shard0.prepare("DELETE FROM list_members WHERE (list_id, contact_id) IN (SELECT list_id, contact_id FROM list_members WHERE panel_id = ? LIMIT 1)").bind(panel.id).run()).meta.changes).toBe(1);
    expect(await step()).toEqual({ next: "none" });
    expect((await getPanelMove(env.DB, panel.id, moveId))!).toMatchObject({ state: "failed", error: expect.stringContaining("list_members") });
    expect((await getPanel(env.DB, panel.id))!.partitions).toEqual([]);
    expect(await keysOn(panelData, panel.id)).toEqual([...keys].sort());
    expect(await counterOn(panelData, panel.id, list)).toBe(keys.length);
    for (const table of ["contacts", "list_members", "lists", "attributes"]) expect(await rowCount(shard0, table, panel.id), table).toBe(0);
    for (const db of [shard0, panelData]) expect(await moveTriggers(db)).toEqual([]);
    expect(await rowCount(shard0, "panels_in_transit", panel.id)).toBe(0);
    // The panel still takes writes on every bucket.
    expect((await api("contact", "add", { data: { EMAIL: "after@example.com" }, listid: String(list) })).status).toBe(200);
  });

  it("refuses a split point outside a partition, an unknown shard, the home or a shard already holding a partition, naming the field", async () => {
    const created = await createPanel();
    const panel = (await getPanel(env.DB, created.id))!;
    const refusal = async (at: number, shard: number) => {
      const result = await startPartitionSplit(env, panel, at, shard, Date.now());
      return result.ok ? "started" : { kind: result.problem.kind, fields: result.problem.fields.map((f) => f.field) };
    };
    expect(await refusal(0, 0)).toEqual({ kind: "invalid", fields: ["split_at"] });
    expect(await refusal(4096, 0)).toEqual({ kind: "invalid", fields: ["split_at"] });
    expect(await refusal(AT, 7)).toEqual({ kind: "invalid", fields: ["shard"] });
    expect(await refusal(AT, TEST_SHARD)).toEqual({ kind: "conflict", fields: ["shard"] });
    const split = { ...panel, partitions: [
      { firstBucket: 0, lastBucket: AT - 1, shard: TEST_SHARD, state: "active" as const },
      { firstBucket: AT, lastBucket: 4095, shard: 0, state: "active" as const },
    ] };
    expect(await startPartitionSplit(env, split, AT, 0, Date.now())).toMatchObject({ ok: false, problem: { kind: "invalid", fields: [{ field: "split_at" }] } });
    expect(await startPartitionSplit(env, split, 100, 0, Date.now())).toMatchObject({ ok: false, problem: { kind: "conflict", fields: [{ field: "shard" }] } });
    // A campaign sending (or paused) still publishing walks its map's buckets: no split until it
    // has published, on its home and on every other shard (one published goes on: see "campaigns under way").
    const list = (await admin("POST", `/panels/${panel.id}/lists`, { name: "Readers" })).body.id as number;
    const campaign = (await listCampaign(created, list)).body.id as string;
    await panelData.prepare("UPDATE campaigns SET status = 'sending', publish_after = 0 WHERE id = ?").bind(campaign).run();
    expect(await startPartitionSplit(env, panel, AT, 0, Date.now())).toMatchObject({ ok: false, problem: { kind: "conflict", message: expect.stringContaining(`campaign ${campaign} `) } });
    await panelData.prepare("UPDATE campaigns SET status = 'paused' WHERE id = ?").bind(campaign).run();
    const paused = await admin("POST", `/panels/${panel.id}/moves`, { shard: 0, split_at: AT });
    expect([paused.status, paused.body.error]).toEqual([409, expect.stringContaining(`campaign ${campaign} `)]);
    // Its home published, another shard's part not yet.
    await panelData.prepare("UPDATE campaigns SET status = 'sending', publish_after = NULL WHERE id = ?").bind(campaign).run();
    await panelData.prepare("INSERT INTO campaign_shards (campaign_id, shard, panel_id) VALUES (?, 0, ?)").bind(campaign, panel.id).run();
    expect(await startPartitionSplit(env, panel, AT, 0, Date.now())).toMatchObject({ ok: false, problem: { kind: "conflict", message: expect.stringContaining(`campaign ${campaign} `) } });
    // Nothing was recorded.
    expect((await admin("GET", `/panels/${panel.id}/moves`)).body.moves).toEqual([]);
  });

  it("is started by the deployment's admin on the panel's moves, refused naming the field, and runs to the end from the queue", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const keys = Array.from({ length: 8 }, (_, i) => `route${i}@example.com`);
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key } })).status).toBe(200);
    const start = (body: unknown) => admin("POST", `/panels/${panel.id}/moves`, body);
    const field = async (body: unknown) => {
      const answer = await start(body);
      return [answer.status, answer.body.errors?.map((e: { field: string }) => e.field)];
    };
    expect(await field({ shard: 0, split_at: 0 })).toEqual([400, ["split_at"]]);
    expect(await field({ shard: 0, split_at: 4096 })).toEqual([400, ["split_at"]]);
    expect(await field({ shard: 0, split_at: "2048" })).toEqual([400, ["split_at"]]);
    expect(await field({ shard: 9, split_at: AT })).toEqual([400, ["shard"]]);
    expect(await field({ shard: TEST_SHARD, split_at: AT })).toEqual([409, ["shard"]]);
    expect((await admin("GET", `/panels/${panel.id}/moves`)).body.moves).toEqual([]);

    const started = await start({ shard: 0, split_at: AT });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ from_shard: TEST_SHARD, to_shard: 0, buckets: { first: AT, last: 4095 }, state: "copying" });
    const done = await eventually(async () => {
      const move = (await admin("GET", `/panels/${panel.id}/moves/${started.body.id}`)).body;
      return move.state === "done" || move.state === "failed" ? move : undefined;
    }, 60_000);
    expect(done).toMatchObject({ state: "done", error: null });
    expect(await keysOn(shard0, panel.id)).toEqual(keys.filter((k) => moving(panel.id, k)).sort());
    expect(await keysOn(panelData, panel.id)).toEqual(keys.filter((k) => !moving(panel.id, k)).sort());
    // The panel now has a map: the same split again meets a partition boundary, the target a partition of the panel.
    expect(await field({ shard: 0, split_at: AT })).toEqual([400, ["split_at"]]);
    expect(await field({ shard: 0, split_at: 3000 })).toEqual([409, ["shard"]]);
    // A whole move of a panel with a map is refused, pointing at split_at.
    expect((await start({ shard: 0 })).body.errors[0].message).toContain("split_at");
  }, 90_000);

  it("moves saved segments' members and running journeys' instances with their contacts: counts unchanged, each delay fires once on the contact's shard", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const cart = await defineActivity(panel, "add_to_cart");
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: helloPauseLater(hook.id),
    });
    const keys = Array.from({ length: 10 }, (_, i) => `walker${i}@example.com`);
    const movers = keys.filter((k) => moving(panel.id, k));
    expect(movers.length).toBeGreaterThan(1);
    expect(movers.length).toBeLessThan(keys.length - 1);
    const pune = keys.filter((_, i) => i % 2 === 0);
    for (const [i, key] of keys.entries()) expect((await api("contact", "add", { data: { EMAIL: key, CITY: i % 2 === 0 ? "Pune" : "Goa" } })).status).toBe(200);
    const saved = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
    expect(saved.status, JSON.stringify(saved.body)).toBe(201);
    const segment = saved.body.id as string;
    await eventually(async () => ((await segmentMembersOn(panelData, segment)).length === pune.length ? true : undefined));
    for (const key of keys) await act(panel, cart, key);
    expect((await delivered(hook)).filter((e) => e.custom_params.Action === "hello")).toHaveLength(keys.length);
    expect(await countersOf(journey)).toMatchObject({ entered: keys.length, active: keys.length, steps: { hello: { acted: keys.length }, pause: { waiting: keys.length } } });
    const before = {
      segment: (await admin("GET", `/panels/${panel.id}/segments/${segment}`)).body,
      history: (await admin("GET", `/panels/${panel.id}/segments/${segment}/history`)).body.days,
    };
    expect(before.segment).toMatchObject({ count: pune.length, members: pune.length });
    // Housekeeping counted the home's figures, the moving contacts among them.
    await refreshPanelCounts(panelData, [panel.id], Date.now());
    expect(await storedOn(panelData, panel.id)).toEqual({ "": keys.length, [segment]: pune.length });

    // A kept segment entry key (left by a pruned instance) and a list entry waiting for its consumer: rows of a contact without a bucket
    // (free: a held one is freed on the target at the switch and taken by the nudge that follows).
    const idOf = async (key: string) => (await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, key).first<number>("id"))!;
    const [mover, stayer] = [movers[0]!, keys.find((k) => !moving(panel.id, k))!];
    for (const key of [mover, stayer]) {
      const id = await idOf(key);
      await panelData.batch([
        panelData.prepare("INSERT INTO journey_entry_keys (journey_id, entry_key, panel_id) VALUES (?, ?, ?)").bind(journey.id, `segment:${id}`, panel.id),
        panelData
          .prepare("INSERT INTO journey_list_entries (panel_id, journey_id, list_id, contact_id, leased_until) VALUES (?, ?, 0, ?, 0)")
          .bind(panel.id, journey.id, id),
      ]);
    }

    // Split through the admin API, run from the queue to the end.
    const started = await admin("POST", `/panels/${panel.id}/moves`, { shard: 0, split_at: AT });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    const done = await eventually(async () => {
      const move = (await admin("GET", `/panels/${panel.id}/moves/${started.body.id}`)).body;
      return move.state === "done" || move.state === "failed" ? move : undefined;
    }, 60_000);
    expect(done).toMatchObject({ state: "done", error: null });

    // Each contact's membership, instance, points and step runs on its key's shard only.
    const on0 = movers.sort();
    const on1 = keys.filter((k) => !moving(panel.id, k)).sort();
    expect(await keysOn(shard0, panel.id)).toEqual(on0);
    expect(await segmentMembersOn(shard0, segment)).toEqual(on0.filter((k) => pune.includes(k)));
    expect(await segmentMembersOn(panelData, segment)).toEqual(on1.filter((k) => pune.includes(k)));
    for (const [db, held] of [[shard0, on0], [panelData, on1]] as const) {
      expect(await instancesOn(db, panel.id)).toEqual(held.map((k) => `${k}: active`));
      expect(await stepRunsOn(db, journey.id)).toEqual(held.flatMap((k) => [`${k} hello`, `${k} pause`]));
      expect(await pointsOn(db, panel.id)).toEqual(held.flatMap((k) => [`${k}  start`, `${k} pause waiting`]));
    }
    const entryKeysOn = async (db: ShardDb) =>
      (await db.prepare("SELECT c.pk_value AS k FROM journey_entry_keys e JOIN contacts c ON 'segment:' || c.id = e.entry_key WHERE e.panel_id = ?").bind(panel.id).all<{ k: string }>()).results.map((r) => r.k);
    const listEntriesOn = async (db: ShardDb) =>
      (await db.prepare("SELECT c.pk_value AS k FROM journey_list_entries e JOIN contacts c ON c.id = e.contact_id WHERE e.panel_id = ?").bind(panel.id).all<{ k: string }>()).results.map((r) => r.k);
    expect([await entryKeysOn(shard0), await entryKeysOn(panelData)]).toEqual([[mover], [stayer]]);
    expect([await listEntriesOn(shard0), await listEntriesOn(panelData)]).toEqual([[mover], [stayer]]);
    expect(await rowCount(shard0, "journey_entry_keys", panel.id) + (await rowCount(panelData, "journey_entry_keys", panel.id))).toBe(2);
    expect(await rowCount(shard0, "journey_list_entries", panel.id) + (await rowCount(panelData, "journey_list_entries", panel.id))).toBe(2);
    // The definitions are on the target, every version an instance may walk.
    expect(await shard0.prepare("SELECT status FROM journeys WHERE id = ?").bind(journey.id).first("status")).toBe("running");
    expect(await shard0.prepare("SELECT version FROM segments WHERE id = ?").bind(segment).first("version")).toBe(1);

    // What the panel shows is unchanged: the segment's count, members and history (no exit for a member that moved); the journey's counters.
    expect((await admin("GET", `/panels/${panel.id}/segments/${segment}`)).body).toMatchObject({ count: pune.length, members: pune.length });
    expect((await admin("GET", `/panels/${panel.id}/segments/${segment}/history`)).body.days).toEqual(before.history);
    const members = (await admin("GET", `/panels/${panel.id}/segments/${segment}/contacts?limit=100`)).body.contacts.map((c: { EMAIL: string }) => c.EMAIL);
    expect(members.sort()).toEqual([...pune].sort());
    expect(await countersOf(journey)).toMatchObject({ active: keys.length, steps: { pause: { waiting: keys.length } } });
    // The report sums each shard's waiting gauge: the target's counts the waits it took.
    expect((await admin("GET", `${journey.path}/report`)).body.steps.pause).toMatchObject({ waiting: keys.length });
    // The target's stored figures count what it took; the source's are counted again.
    expect(await storedOn(shard0, panel.id)).toEqual({ "": on0.length, [segment]: on0.filter((k) => pune.includes(k)).length });
    expect(await storedOn(panelData, panel.id)).toEqual({ "": null, [segment]: null });

    // The delay fires on each contact's shard: the next step once per contact, none run again.
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    const all = await delivered(hook);
    expect(all.filter((e) => e.custom_params.Action === "later").map((e) => e.event_params.identity).sort()).toEqual([...keys].sort());
    expect(all).toHaveLength(2 * keys.length);
    for (const [db, held] of [[shard0, on0], [panelData, on1]] as const) {
      expect(await instancesOn(db, panel.id)).toEqual(held.map((k) => `${k}: completed`));
      expect(await stepRunsOn(db, journey.id)).toEqual(held.flatMap((k) => [`${k} hello`, `${k} later`, `${k} pause`]));
    }
    expect(await countersOf(journey)).toMatchObject({ entered: keys.length, active: 0, completed: keys.length, steps: { later: { acted: keys.length }, pause: { waiting: 0 } } });
    expect((await admin("GET", `${journey.path}/report`)).body.steps.pause).toMatchObject({ waiting: 0 });
    // And the moved contacts keep entering it on their new shard.
    expect((await postActivity(panel.clientId, { activityid: cart, identity: mover })).status).toBe(200);
    const again = [`${mover}: active`, ...on0.map((k) => `${k}: completed`)].sort();
    await eventually(async () => (JSON.stringify(await instancesOn(shard0, panel.id)) === JSON.stringify(again) ? true : undefined));
  }, 120_000);

  it("splits a panel with a running segment journey: each matching contact enters once, on its key's shard, scanned before, during or after the switch", async () => {
    const { panel, hook, journey, entered, goa, unscanned } = await segmentJourneyPanel("scan");
    const moveId = `mov_segment_${panel.id}`;
    expect(await insertPanelMove(env.DB, { id: moveId, panelId: panel.id, fromShard: TEST_SHARD, toShard: 0, buckets: { first: AT, last: 4095 }, createdAt: Date.now() })).toBe(true);
    let clock = Date.now();
    const step = () => runMoveStep(env, moveId, TUNING, () => clock);

    // Copied: the target's copy of the journey has a scan from its first contact, and holds the
    // moving contacts (the unscanned among them) while the panel is in transit there.
    expect(await step()).toEqual({ next: "now" });
    expect(await shard0.prepare("SELECT scan_cursor FROM journeys WHERE id = ?").bind(journey.id).first("scan_cursor")).toBe(0);
    expect(await keysOn(shard0, panel.id)).toEqual([...entered, ...goa, ...unscanned].filter((k) => moving(panel.id, k)).sort());
    // The cron meanwhile: the target's copy does not scan a panel in transit; the source's scan enters the unscanned there (captured, copied).
    await cronAt(clock);
    expect(await instancesOn(shard0, panel.id)).toEqual(entered.filter((k) => moving(panel.id, k)).map((k) => `${k}: active`).sort());
    expect(await instancesOn(panelData, panel.id)).toEqual([...entered, ...unscanned].map((k) => `${k}: active`).sort());

    // Moving contacts written while the split runs and not scanned on the source (its scan is done): the target's scan enters them after the switch.
    const late = sideKeys(panel.id, "late", true, 2);
    await addQuietly(panel.id, late);
    expect(await step()).toEqual({ next: "later", ms: TUNING.settleMs });
    expect((await getPanelMove(env.DB, panel.id, moveId))!.state).toBe("cleaning");
    // The source's scan going again (as an upload's end restarts it) while the moved contacts are still there until the settle time.
    await panelData.prepare("UPDATE journeys SET scan_cursor = 0 WHERE id = ?").bind(journey.id).run();
    await cronAt(clock);
    clock += TUNING.settleMs;
    expect(await step()).toEqual({ next: "none" });
    expect((await getPanelMove(env.DB, panel.id, moveId))!).toMatchObject({ state: "done", error: null });

    await expectEachOnce(panel, hook, journey, [...entered, ...unscanned, ...late]);
  }, 120_000);

  it("splits a panel with a running segment journey through the admin API and the queue while the cron scans: each matching contact enters once, on its key's shard", async () => {
    const { panel, hook, journey, entered, unscanned } = await segmentJourneyPanel("queued");
    const started = await admin("POST", `/panels/${panel.id}/moves`, { shard: 0, split_at: AT });
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    // The cron runs on every shard while the split goes on, as the per-minute trigger would.
    const done = await eventually(async () => {
      await cronAt(Date.now());
      const move = (await admin("GET", `/panels/${panel.id}/moves/${started.body.id}`)).body;
      return move.state === "done" || move.state === "failed" ? move : undefined;
    }, 60_000);
    expect(done).toMatchObject({ state: "done", error: null });
    await cronAt(Date.now());
    await expectEachOnce(panel, hook, journey, [...entered, ...unscanned]);
  }, 120_000);

  it("fires a delay falling due while its contacts' buckets are copied once per contact: the target's copies wait for the switch", async () => {
    const { panel, hook, journey, movers, stayers } = await delayJourneyPanel("copying");
    const moveId = `mov_delay_${panel.id}`;
    expect(await insertPanelMove(env.DB, { id: moveId, panelId: panel.id, fromShard: TEST_SHARD, toShard: 0, buckets: { first: AT, last: 4095 }, createdAt: Date.now() })).toBe(true);
    let clock = Date.now();
    const step = () => runMoveStep(env, moveId, TUNING, () => clock);

    expect(await step()).toEqual({ next: "now" });
    expect(await pointsOn(shard0, panel.id)).toEqual(movers.flatMap((k) => [`${k}  start`, `${k} pause waiting`]));
    // The delay falls due while the panel is in transit on the target: the source fires it, the copies wait.
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    expect(await pointsOn(shard0, panel.id)).toEqual(movers.flatMap((k) => [`${k}  start`, `${k} pause waiting`]));
    expect(await calls(hook, "later")).toEqual([...movers, ...stayers].sort());

    // The catch-up carries what fired; nothing is left to fire on the target after the switch.
    expect(await step()).toEqual({ next: "later", ms: TUNING.settleMs });
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    clock += TUNING.settleMs;
    expect(await step()).toEqual({ next: "none" });
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    expect(await calls(hook, "later")).toEqual([...movers, ...stayers].sort());
    expect(await instancesOn(shard0, panel.id)).toEqual(movers.map((k) => `${k}: completed`));
    expect(await instancesOn(panelData, panel.id)).toEqual(stayers.map((k) => `${k}: completed`));
    expect(await countersOf(journey)).toMatchObject({ active: 0, completed: movers.length + stayers.length, steps: { later: { acted: movers.length + stayers.length } } });
  }, 120_000);

  it("on the source after the switch, leaves the moved contacts' due points to the target and fires the points of its other contacts and other panels", async () => {
    const { panel, hook, journey, movers, stayers } = await delayJourneyPanel("switched");
    const other = await delayJourneyPanel("other");
    const moveId = `mov_switched_${panel.id}`;
    expect(await insertPanelMove(env.DB, { id: moveId, panelId: panel.id, fromShard: TEST_SHARD, toShard: 0, buckets: { first: AT, last: 4095 }, createdAt: Date.now() })).toBe(true);
    let clock = Date.now();
    const step = () => runMoveStep(env, moveId, TUNING, () => clock);
    expect(await step()).toEqual({ next: "now" });
    expect(await step()).toEqual({ next: "later", ms: TUNING.settleMs });
    expect((await getPanelMove(env.DB, panel.id, moveId))!.state).toBe("cleaning");

    // Before cleaning: the source still holds the moved contacts' waiting points, fenced.
    expect(await pointsOn(panelData, panel.id)).toEqual([...movers, ...stayers].sort().flatMap((k) => [`${k}  start`, `${k} pause waiting`]));
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    const everyOther = [...other.movers, ...other.stayers].sort();
    expect(await calls(other.hook, "later")).toEqual(everyOther);
    expect(await calls(hook, "later")).toEqual([...movers, ...stayers].sort());
    expect(await instancesOn(shard0, panel.id)).toEqual(movers.map((k) => `${k}: completed`));
    // The source's old rows of the moved contacts, left alone until cleaning removes them.
    expect(await instancesOn(panelData, panel.id)).toEqual([...movers.map((k) => `${k}: active`), ...stayers.map((k) => `${k}: completed`)].sort());

    clock += TUNING.settleMs;
    expect(await step()).toEqual({ next: "none" });
    expect(await instancesOn(panelData, panel.id)).toEqual(stayers.map((k) => `${k}: completed`));
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    expect(await calls(hook, "later")).toEqual([...movers, ...stayers].sort());
    expect(await calls(other.hook, "later")).toEqual(everyOther);
    expect(await countersOf(journey)).toMatchObject({ active: 0, completed: movers.length + stayers.length });
  }, 120_000);
});

const PUNE = [{ attribute: "CITY", op: "eq", value: "Pune" }];

/** `n` keys `<prefix>N@example.com` of the moving buckets (`movers`) or of those that stay. */
function sideKeys(panelId: string, prefix: string, movers: boolean, n: number): string[] {
  const keys: string[] = [];
  for (let i = 0; keys.length < n; i++) {
    const key = `${prefix}${i}@example.com`;
    if (moving(panelId, key) === movers) keys.push(key);
  }
  return keys;
}

/**
 * A panel (no map) with a running activity journey (webhook, one hour's delay, webhook) that
 * `movers` (of the moving buckets) and `stayers` entered: each waits in the delay.
 */
async function delayJourneyPanel(prefix: string) {
  const panel = await createPanel();
  const api = apiFor(panel);
  const cart = await defineActivity(panel, "add_to_cart");
  const hook = await createWebhook(panel);
  const journey = await startJourney(panel, {
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: helloPauseLater(hook.id),
  });
  const movers = sideKeys(panel.id, prefix, true, 3).sort();
  const stayers = sideKeys(panel.id, prefix, false, 3).sort();
  for (const key of [...movers, ...stayers]) {
    expect((await api("contact", "add", { data: { EMAIL: key } })).status).toBe(200);
    await act(panel, cart, key);
  }
  expect(await calls(hook, "hello")).toEqual([...movers, ...stayers].sort());
  return { panel, hook, journey, movers, stayers };
}

/** The identities the webhook was called for with `action`, each time it was. */
async function calls(hook: { id: string; bucket: string }, action: string): Promise<string[]> {
  return (await delivered(hook)).filter((e) => e.custom_params.Action === action).map((e) => e.event_params.identity).sort();
}

/** Contacts of Pune written straight into the home's D1, as a large panel's not yet scanned are: no write enters them. */
async function addQuietly(panelId: string, keys: readonly string[]): Promise<void> {
  const now = Date.now();
  const insert = panelData.prepare("INSERT INTO contacts (panel_id, pk_value, attrs, bucket, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)");
  await panelData.batch(keys.map((k) => insert.bind(panelId, k, JSON.stringify({ EMAIL: k, CITY: "Pune" }), contactBucket(panelId, k), now, now)));
}

/**
 * A panel (no map) with a running segment journey of Pune (webhook, one hour's delay, webhook):
 * `entered` matched when it started, on both sides of the split point, and wait in the delay;
 * contacts of Goa on both sides never match; `unscanned` (both sides) match but the scan,
 * as a large panel's, has not reached them yet.
 */
async function segmentJourneyPanel(prefix: string) {
  const panel = await createPanel();
  const api = apiFor(panel);
  const hook = await createWebhook(panel);
  const entered = [...sideKeys(panel.id, `${prefix}-in`, true, 3), ...sideKeys(panel.id, `${prefix}-in`, false, 3)];
  const goa = [...sideKeys(panel.id, `${prefix}-goa`, true, 2), ...sideKeys(panel.id, `${prefix}-goa`, false, 2)];
  for (const key of entered) expect((await api("contact", "add", { data: { EMAIL: key, CITY: "Pune" } })).status).toBe(200);
  for (const key of goa) expect((await api("contact", "add", { data: { EMAIL: key, CITY: "Goa" } })).status).toBe(200);
  const journey = await startJourney(panel, {
    trigger: { type: "segment", filter: PUNE },
    steps: helloPauseLater(hook.id),
  });
  expect(await instancesOn(panelData, panel.id)).toEqual(entered.map((k) => `${k}: active`).sort());
  expect(await panelData.prepare("SELECT scan_cursor FROM journeys WHERE id = ?").bind(journey.id).first("scan_cursor")).toBeNull();
  const last = (await panelData.prepare("SELECT MAX(id) AS n FROM contacts WHERE panel_id = ?").bind(panel.id).first<number>("n"))!;
  const unscanned = [...sideKeys(panel.id, `${prefix}-new`, true, 2), ...sideKeys(panel.id, `${prefix}-new`, false, 2)];
  await addQuietly(panel.id, unscanned);
  // The scan is past the contacts written before and short of these.
  await panelData.prepare("UPDATE journeys SET scan_cursor = ? WHERE id = ?").bind(last, journey.id).run();
  return { panel, hook, journey, entered, goa, unscanned };
}

/**
 * After a split: each of `matching` has one instance, on its key's shard, the webhook's first
 * call once each; after the delay's cron the second call once each; and a contact coming to
 * match after the split enters on its shard.
 */
async function expectEachOnce(panel: TestPanel, hook: { id: string; bucket: string }, journey: { path: string }, matching: readonly string[]) {
  // Any scan left runs out on both shards (a page a run).
  await cronAt(Date.now());
  const on0 = matching.filter((k) => moving(panel.id, k)).sort();
  const on1 = matching.filter((k) => !moving(panel.id, k)).sort();
  expect(await instancesOn(shard0, panel.id)).toEqual(on0.map((k) => `${k}: active`));
  expect(await instancesOn(panelData, panel.id)).toEqual(on1.map((k) => `${k}: active`));
  const calls = async (action: string) => (await delivered(hook)).filter((e) => e.custom_params.Action === action).map((e) => e.event_params.identity).sort();
  expect(await calls("hello")).toEqual([...matching].sort());
  await cronAt(Date.now() + 2 * 60 * MINUTE);
  expect(await calls("later")).toEqual([...matching].sort());
  expect(await calls("hello")).toEqual([...matching].sort());
  expect(await instancesOn(shard0, panel.id)).toEqual(on0.map((k) => `${k}: completed`));
  expect(await instancesOn(panelData, panel.id)).toEqual(on1.map((k) => `${k}: completed`));
  expect(await countersOf(journey)).toMatchObject({ entered: matching.length, active: 0, completed: matching.length });

  // Contacts coming to match after the split enter on their key's shard.
  const api = apiFor(panel);
  const [after0, after1] = [sideKeys(panel.id, "after", true, 1)[0]!, sideKeys(panel.id, "after", false, 1)[0]!];
  for (const EMAIL of [after0, after1]) expect((await api("contact", "add", { data: { EMAIL, CITY: "Pune" } })).status).toBe(200);
  await eventually(async () => ((await countersOf(journey)).entered === matching.length + 2 ? true : undefined));
  expect(await instancesOn(shard0, panel.id)).toEqual([...on0.map((k) => `${k}: completed`), `${after0}: active`].sort());
  expect(await instancesOn(panelData, panel.id)).toEqual([...on1.map((k) => `${k}: completed`), `${after1}: active`].sort());
}

/** The segment's members on `db`, by key, their contact on the same shard. */
const segmentMembersOn = (db: ShardDb, segmentId: string) =>
  textsOn(db, "SELECT c.pk_value FROM segment_members m JOIN contacts c ON c.id = m.contact_id WHERE m.segment_id = ? ORDER BY 1", segmentId);

/** The journey's step runs on `db`, as "key step", their instance and contact on the same shard. */
const stepRunsOn = (db: ShardDb, journeyId: string) =>
  textsOn(
    db,
    `SELECT c.pk_value || ' ' || r.step_id FROM journey_step_runs r JOIN journey_instances i ON i.id = r.instance_id
     JOIN contacts c ON c.id = i.contact_id WHERE r.journey_id = ? ORDER BY 1`,
    journeyId,
  );

/** The panel's journey points on `db`, as "key step state". */
const pointsOn = (db: ShardDb, panelId: string) =>
  textsOn(
    db,
    `SELECT c.pk_value || ' ' || p.step_id || ' ' || COALESCE(p.outcome, 'waiting') FROM journey_points p JOIN journey_instances i ON i.id = p.instance_id
     JOIN contacts c ON c.id = i.contact_id WHERE p.panel_id = ? ORDER BY 1`,
    panelId,
  );

/** The panel's stored figures on `db` by subject (contacts: ""). */
async function storedOn(db: ShardDb, panelId: string): Promise<Record<string, number | null>> {
  const { results } = await db.prepare("SELECT subject, n FROM panel_counts WHERE panel_id = ?").bind(panelId).all<{ subject: string; n: number | null }>();
  return Object.fromEntries(results.map((r) => [r.subject, r.n]));
}

describe("what starts on a panel after its split's start check (decision 0047)", () => {
  /** Three contacts on each side of the split point in a list, a draft campaign to it and a split recorded as its start's check passed it. */
  async function panelWithCampaign(prefix: string) {
    const { panel, list, keys } = await readersPanel((id) => [...sideKeys(id, prefix, true, 3), ...sideKeys(id, prefix, false, 3)].sort());
    return { panel, keys, ...(await campaignTo(panel, list)), split: await recordedSplit(panel.id, prefix) };
  }

  it("fails the split cleanly at its first step when a campaign started publishing after the start's check and still publishes: nothing copied, the map unchanged", async () => {
    const { panel, id, keys, split, sendNow } = await panelWithCampaign("race");
    await sendNow();
    // Its first publish step (one contact id); the next is nudged, not yet taken.
    const imports = collectingQueue();
    const stepEnv = withBindings(env, { IMPORTS: imports, FANOUT_CHUNK_IDS: "1" } as Partial<Env>);
    await publishDueBroadcasts(stepEnv, Date.now());
    expect((await campaign(panel, id)).status).not.toBe("scheduled");
    expect(await split.step()).toEqual({ next: "none" });
    expect((await getPanelMove(env.DB, panel.id, split.moveId))!).toMatchObject({ state: "failed", error: expect.stringContaining("campaign") });
    expect((await getPanel(env.DB, panel.id))!.partitions).toEqual([]);
    expect(await keysOn(shard0, panel.id)).toEqual([]);
    expect(await rowCount(shard0, "lists", panel.id)).toBe(0);
    // The campaign goes on where it was laid out: every member once.
    await deliverAll(stepEnv, imports, "imports");
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: keys.length, sent: keys.length } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(keys);
    expect(await panelData.prepare("SELECT COUNT(*) AS n FROM panels_in_transit WHERE panel_id LIKE ?").bind(`${panel.id}/%`).first("n")).toBe(0);
  }, 60_000);

  it("holds a campaign's start from the split's first step to its end; it then publishes over the new map, each member once", async () => {
    const { panel, id, keys, split, sendNow } = await panelWithCampaign("held");
    expect(await split.step()).toEqual({ next: "now" });
    await sendNow();
    await publishDueBroadcasts(env, Date.now());
    expect((await campaign(panel, id)).status).toBe("scheduled");
    expect(await split.step()).toEqual({ next: "later", ms: TUNING.settleMs });
    await publishDueBroadcasts(env, Date.now());
    expect((await campaign(panel, id)).status).toBe("scheduled");
    split.settle();
    expect(await split.step()).toEqual({ next: "none" });
    expect((await getPanelMove(env.DB, panel.id, split.moveId))!).toMatchObject({ state: "done", error: null });

    await publishDueBroadcasts(env, Date.now());
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: keys.length, sent: keys.length } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(keys);
    // Each shard inserted its own contacts' recipients.
    const recipientsOn = (db: ShardDb) => textsOn(db, "SELECT c.pk_value FROM campaign_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.campaign_id = ? ORDER BY 1", id);
    expect(await recipientsOn(shard0)).toEqual(keys.filter((k) => moving(panel.id, k)));
    expect(await recipientsOn(panelData)).toEqual(keys.filter((k) => !moving(panel.id, k)));
  }, 60_000);

  it("a segment journey set running with the map from before the switch reaches the target after the settle time: its contacts there enter once", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, { trigger: { type: "segment", filter: PUNE }, steps: helloPauseLater(hook.id) }, null);
    const matching = [...sideKeys(panel.id, "set", true, 3), ...sideKeys(panel.id, "set", false, 3)];
    for (const key of matching) expect((await api("contact", "add", { data: { EMAIL: key, CITY: "Pune" } })).status).toBe(200);
    const before = (await getPanel(env.DB, panel.id))!;
    const split = await recordedSplit(panel.id, "setrunning");
    expect(await split.step()).toEqual({ next: "now" });
    expect(await split.step()).toEqual({ next: "later", ms: TUNING.settleMs });
    // Set running by a caller that read the map before the switch: its copies reach no shard but the home.
    const started = await setJourneyStatus(env, panelData, before, journey.id, "running", { operator: null });
    expect(started.ok).toBe(true);
    expect(await shard0.prepare("SELECT status FROM journeys WHERE id = ?").bind(journey.id).first("status")).toBe("draft");
    await cronAt(split.now());
    split.settle();
    expect(await split.step()).toEqual({ next: "none" });
    expect(await shard0.prepare("SELECT status FROM journeys WHERE id = ?").bind(journey.id).first("status")).toBe("running");
    await expectEachOnce(panel, hook, journey, matching);
  }, 120_000);
});

describe("messages sent before a split, their contacts moved (decision 0047)", () => {
  it("a journey SMS's delivery receipt and its short link's click after the split find the message on its contact's new shard, once each", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const token = `tok-${panel.id}`;
    const put = await admin("PUT", `/panels/${panel.id}/sms`, { provider: "twilio", account_sid: `AC${crypto.randomUUID().replaceAll("-", "")}`, auth_token: token, from: "+15005550006" });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const reportUrl = put.body.delivery_report_url as string;
    const { cart } = await cartPanel(panel);
    await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "sms", type: "sms", text: "Your cart: https://shop.example.com/cart" }] });
    // One contact of the moving buckets and one that stays, each sent an SMS with a short link before the split.
    const [mover, stayer] = [sideKeys(panel.id, "sms", true, 1)[0]!, sideKeys(panel.id, "sms", false, 1)[0]!];
    const sent: Record<string, { sid: string; code: string }> = {};
    for (const [i, key] of [mover, stayer].entries()) {
      const MOBILE = `+1415555010${i}`;
      expect((await api("contact", "add", { data: { EMAIL: key, MOBILE } })).status).toBe(200);
      const sid = `SM${crypto.randomUUID().replaceAll("-", "")}`;
      // This account's own path: another file sending SMS at the same time scripts the bucket "twilio-api".
      await receiver.script(encodeURIComponent(`twilio-api/2010-04-01/Accounts/${put.body.account_sid}/Messages.json`), [{ status: 201, body: JSON.stringify({ sid, status: "queued" }) }]);
      await act(panel, cart, key);
      const request = await eventually(async () => (await receiver.requests("twilio-api")).find((r) => new URLSearchParams(r.body).get("To") === MOBILE && r.path.includes(put.body.account_sid)));
      const code = /\/s\/([A-Za-z0-9_-]{12})/.exec(new URLSearchParams(request.body).get("Body")!)![1]!;
      await eventually(async () => ((await messagesOf(panel, "sms")).filter((m) => m.status === "sent").length === i + 1 ? true : undefined));
      sent[key] = { sid, code };
    }

    await splitToEnd(await recordedSplit(panel.id, "sms"));

    // The provider reports both delivered, and each recipient follows their link.
    for (const key of [mover, stayer]) {
      const params = { MessageSid: sent[key]!.sid, MessageStatus: "delivered", AccountSid: put.body.account_sid, To: "x" };
      const url = `https://api.test${new URL(reportUrl).pathname}`;
      const signature = await twilioSignature(token, url, new URLSearchParams(params));
      const receipt = await call(new URL(url).pathname, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature }, body: new URLSearchParams(params) });
      expect(await receipt.text(), key).toBe("ok");
      const visit = await call(`/s/${sent[key]!.code}`, { redirect: "manual" });
      expect(visit.status).toBe(302);
      expect(visit.headers.get("location")).toBe("https://shop.example.com/cart");
    }
    await settledOnBoth(panel.id);
    const smsEvents = (db: ShardDb) => channelEventsOn(db, panel.id, "sms");
    await bothShardsHold(smsEvents, 4);
    expect(await smsEvents(shard0)).toEqual([`${mover} click`, `${mover} delivered`]);
    expect(await smsEvents(panelData)).toEqual([`${stayer} click`, `${stayer} delivered`]);
    const deliveryOn = (db: ShardDb) => textsOn(db, "SELECT c.pk_value || ' ' || m.delivery FROM journey_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.panel_id = ? ORDER BY 1", panel.id);
    expect(await deliveryOn(shard0)).toEqual([`${mover} delivered`]);
    expect(await deliveryOn(panelData)).toEqual([`${stayer} delivered`]);
    // Each link lives with its message: an erasure or housekeeping on the contact's shard reaches it.
    const linksOn = (db: ShardDb) => textsOn(db, "SELECT c.pk_value FROM sms_links l JOIN journey_messages m ON m.msgid = l.msgid JOIN contacts c ON c.id = m.contact_id WHERE l.panel_id = ? ORDER BY 1", panel.id);
    expect(await linksOn(shard0)).toEqual([mover]);
    expect(await linksOn(panelData)).toEqual([stayer]);
    expect(await rowCount(panelData, "sms_links", panel.id)).toBe(1);
  }, 120_000);
});

/** "<contact key> <event name>" of the panel's events on a channel recorded on `db`, sorted. */
function channelEventsOn(db: ShardDb, panelId: string, channel: string): Promise<string[]> {
  return textsOn(db, "SELECT c.pk_value || ' ' || e.name FROM events e JOIN contacts c ON c.id = e.contact_id WHERE e.panel_id = ? AND e.channel = ? ORDER BY 1", panelId, channel);
}

/** Waits until `read` finds at least `count` rows on the two shards together. */
async function bothShardsHold(read: (db: ShardDb) => Promise<readonly unknown[]>, count: number): Promise<void> {
  await eventually(async () => ((await read(shard0)).length + (await read(panelData)).length >= count ? true : undefined));
}

describe("campaign mail sent before a split, its contacts moved (decision 0047)", () => {
  it("a bounce and an open after the split find each message on its contact's shard: the bounce suppresses the address there, each counted once", async () => {
    const { panel, list, keys } = await readersPanel((id) => [sideKeys(id, "mail", true, 1)[0]!, sideKeys(id, "mail", false, 1)[0]!]);
    const [mover, stayer] = keys as [string, string];
    const id = await sentCampaign(panel, list);
    await splitToEnd(await recordedSplit(panel.id, "mail"));

    const signer = new TrackingSigner(env.SECRETS_KEY);
    for (const [key, db] of [[mover, shard0], [stayer, panelData]] as const) {
      const message = (await messageOf(db, id, key))!;
      expect(message, key).not.toBeNull();
      expect(await recordBounce(env, { providerMessageId: message.provider_msg_id, permanent: true, addresses: [], detail: {} }, Date.now()), key).toBe(true);
      expect((await call(`/t/o/${await signer.sign({ kind: "open", panelId: panel.id, campaignId: id, contactId: message.contact_id })}`)).status).toBe(200);
    }
    await settledOnBoth(panel.id);
    const mailEvents = async (db: ShardDb) => (await channelEventsOn(db, panel.id, "email")).filter((text) => / (bounce|open)$/.test(text));
    await bothShardsHold(mailEvents, 4);
    expect(await mailEvents(shard0)).toEqual([`${mover} bounce`, `${mover} open`]);
    expect(await mailEvents(panelData)).toEqual([`${stayer} bounce`, `${stayer} open`]);
    const suppressedOn = (db: ShardDb) => textsOn(db, "SELECT address || ' ' || reason FROM email_suppressions WHERE panel_id = ? ORDER BY 1", panel.id);
    // The home's stop is on every shard too (decision 0038, "Stops by address"): the target's segment conditions read it there.
    expect(await suppressedOn(shard0)).toEqual([`${mover} hard_bounce`, `${stayer} hard_bounce`].sort());
    expect(await suppressedOn(panelData)).toEqual([`${stayer} hard_bounce`]);
    const bounced = (db: ShardDb) => textsOn(db, "SELECT c.pk_value FROM campaign_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.campaign_id = ? AND m.bounced_at IS NOT NULL ORDER BY 1", id);
    expect([...(await bounced(shard0)), ...(await bounced(panelData))].sort()).toEqual([mover, stayer].sort());
  }, 120_000);
});

describe("stops of moved contacts (decision 0047)", () => {
  it("an address stopped before the split stays stopped after it: a journey email then reaches neither the moved contact nor the staying one", async () => {
    const { panel, list, keys } = await readersPanel((id) => [sideKeys(id, "stop", true, 1)[0]!, sideKeys(id, "stop", false, 1)[0]!, sideKeys(id, "stop-ok", true, 1)[0]!]);
    const [mover, stayer, other] = keys as [string, string, string];
    // A campaign before the split bounces for the mover and the stayer: their addresses are stopped where their messages were.
    const id = await sentCampaign(panel, list);
    for (const key of [mover, stayer]) expect(await recordBounce(env, { providerMessageId: (await messageOf(panelData, id, key))!.provider_msg_id, permanent: true, addresses: [], detail: {} }, Date.now())).toBe(true);
    // An operator's SMS stop, written on every shard the map named then: the home.
    expect((await admin("PUT", `/panels/${panel.id}/sms/suppressions/14155550123`)).status).toBe(200);
    const { cart } = await cartPanel(panel);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "mail", type: "email", subject: "Your cart", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
    });

    const split = await recordedSplit(panel.id, "stop");
    expect(await split.step()).toEqual({ next: "now" });
    expect(await split.step()).toEqual({ next: "later", ms: TUNING.settleMs });
    // From the switch, the moved contacts' sends read the target's stops.
    const stopsOn = (db: ShardDb) => textsOn(db, "SELECT address || ' ' || reason FROM email_suppressions WHERE panel_id = ? ORDER BY 1", panel.id);
    expect(await stopsOn(shard0)).toEqual([`${mover} hard_bounce`, `${stayer} hard_bounce`].sort());
    expect(await textsOn(shard0, "SELECT phone || ' ' || reason FROM sms_suppressions WHERE panel_id = ?", panel.id)).toEqual(["14155550123 operator"]);
    split.settle();
    expect(await split.step()).toEqual({ next: "none" });

    // The moved contacts' events are recorded on the target: the pipeline is waited for on both shards.
    for (const identity of [mover, stayer, other]) expect((await postActivity(panel.clientId, { activityid: cart, identity })).status).toBe(200);
    await settledOnBoth(panel.id);
    const outcomes = async () => [shard0, panelData].map((db) => textsOn(db, "SELECT recipient || ' ' || status FROM journey_messages WHERE panel_id = ? AND channel = 'email' ORDER BY 1", panel.id));
    const settled = await eventually(async () => {
      const [on0, on1] = await Promise.all(await outcomes());
      return [...on0!, ...on1!].filter((o) => / (sent|skipped|failed)$/.test(o)).length === 3 ? [on0, on1] : undefined;
    });
    expect(settled).toEqual([[`${mover} skipped`, `${other} sent`].sort(), [`${stayer} skipped`]]);
  }, 120_000);

  it("a stop the home records after the switch on the old map's shards alone (a writer holding the map from before) reaches the target with the cron's pass once the map has settled (decision 0061)", async () => {
    const { panel, keys } = await readersPanel((id) => sideKeys(id, "late-stop", true, 1));
    const [mover] = keys as [string];
    const split = await recordedSplit(panel.id, "late-stop");
    expect(await split.step()).toEqual({ next: "now" });
    expect(await split.step()).toEqual({ next: "later", ms: TUNING.settleMs });
    // Written as a writer that read the directory before the switch writes it: on the home alone.
    await panelData.prepare("INSERT INTO email_suppressions (panel_id, address, reason, created_at) VALUES (?, ?, 'complaint', ?)").bind(panel.id, mover, Date.now()).run();
    const stopsOn0 = () => textsOn(shard0, "SELECT address || ' ' || reason FROM email_suppressions WHERE panel_id = ?", panel.id);
    await runCron(split.now(), [stopCopiesTask]);
    expect(await stopsOn0()).toEqual([]);
    await runCron(split.now() + STOP_COPIES_AFTER_MAP_MS, [stopCopiesTask]);
    expect(await stopsOn0()).toEqual([`${mover} complaint`]);
    const counted = await admin("POST", `/panels/${panel.id}/segments/count`, { match: { all: [{ reachable: "email" }] } });
    expect([counted.status, counted.body.count]).toEqual([200, 0]);
  });
});

describe("a split while a campaign of the panel sends or is paused (decision 0047, campaigns under way)", () => {
  /**
   * A panel (no map) with a list of `n` contacts of the moving buckets and `n` that stay, added in
   * turn (so a publish step's batch holds both), and a campaign to it (`setUp` before it is
   * scheduled), published whole with its send nudges kept back.
   */
  async function publishedCampaign(prefix: string, n: number, ids?: number, setUp?: (panel: TestPanel, id: string) => Promise<void>) {
    const { panel, list, keys } = await readersPanel((id) => sideKeys(id, prefix, true, n).flatMap((mover, i) => [mover, sideKeys(id, prefix, false, n)[i]!]));
    const { id, sendNow } = await campaignTo(panel, list);
    if (setUp) await setUp(panel, id);
    await sendNow();
    const queues = heldQueues(ids);
    await publishDueBroadcasts(queues.stepEnv, Date.now());
    await deliverAll(queues.stepEnv, queues.imports, "imports");
    expect(await panelData.prepare("SELECT publish_after FROM campaigns WHERE id = ?").bind(id).first("publish_after")).toBeNull();
    const movers = keys.filter((key) => moving(panel.id, key)).sort();
    return { panel, id, keys: [...keys].sort(), movers, stayers: keys.filter((key) => !moving(panel.id, key)).sort(), ...queues };
  }

  /** "key status" of the campaign's recipient rows on `db`. */
  const rowsOn = (db: ShardDb, campaignId: string) => textsOn(db, "SELECT c.pk_value || ' ' || m.status FROM campaign_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.campaign_id = ? ORDER BY 1", campaignId);
  /** The send batches of the campaign's rows on `db`. */
  const batchesOn = async (db: ShardDb, campaignId: string) => (await textsOn(db, "SELECT DISTINCT CAST(batch AS TEXT) FROM campaign_messages WHERE campaign_id = ? ORDER BY batch", campaignId)).map(Number);
  const homeBatch = (batch: number) => (body: any) => body.kind === "campaign_batch" && body.batch === batch && body.shard === undefined;
  const sentEach = (keys: readonly string[]) => keys.map((key) => `${key} sent`);

  it("sends every recipient once when the panel is split mid-send: a batch split between the shards goes out from both, the campaign sent once the target's half is", async () => {
    const { panel, id, keys, movers, stayers, stepEnv, imports, sends } = await publishedCampaign("midsend", 4, 3);
    // Batches of three contact ids, each holding contacts that move and contacts that stay.
    const batches = await batchesOn(panelData, id);
    expect(batches.length).toBeGreaterThanOrEqual(3);
    await deliverAll(stepEnv, sends, "sends", homeBatch(batches[0]!));
    const split = await startedSplit(stepEnv, imports, panel.id);
    expect(await split.step()).toEqual({ next: "now" });
    // Sent from the source while its rows are copied: the catch-up carries what it did.
    await deliverAll(stepEnv, sends, "sends", homeBatch(batches[1]!));
    expect(await split.step()).toEqual({ next: "later", ms: TUNING.settleMs });

    // The target's part: published as the source's was, not finished; its unsent batches nudged naming it.
    expect((await panelData.prepare("SELECT shard, published_at, finished_at FROM campaign_shards WHERE campaign_id = ?").bind(id).all()).results).toEqual([
      { shard: 0, published_at: (await getCampaign(panelData, panel.id, id))!.publishedEndAt, finished_at: null },
    ]);
    expect(await shard0.prepare("SELECT publish_after, recipients FROM campaign_parts WHERE campaign_id = ?").bind(id).first()).toEqual({ publish_after: null, recipients: 0 });
    const queuedMovers = (await rowsOn(shard0, id)).filter((row) => row.endsWith(" queued"));
    expect(queuedMovers.length).toBeGreaterThan(0);
    const targetBatches = await textsOn(shard0, "SELECT DISTINCT CAST(batch AS TEXT) FROM campaign_messages WHERE campaign_id = ? AND status = 'queued' ORDER BY batch", id);
    expect(sends.bodies.filter((body: any) => body.shard === 0)).toEqual(targetBatches.map((batch) => ({ kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: Number(batch), shard: 0 })));
    // A batch number with rows on both shards: each shard sends its own half.
    const shared = (await batchesOn(shard0, id)).filter((batch) => batches.slice(2).includes(batch));
    expect(shared.length).toBeGreaterThan(0);

    // The source's nudges of those batches send its own contacts and pass over the moved rows it still holds (fenced until they go).
    await deliverAll(stepEnv, sends, "sends", (body) => body.shard === undefined);
    expect((await rowsOn(panelData, id)).filter((row) => stayers.some((key) => row.startsWith(`${key} `)))).toEqual(sentEach(stayers));
    expect((await campaign(panel, id)).status).toBe("sending");
    // The old rows go: nothing is left to send on the home, but the target has not finished.
    split.settle();
    expect(await split.step()).toEqual({ next: "none" });
    expect(await rowsOn(panelData, id)).toEqual(sentEach(stayers));
    expect((await campaign(panel, id)).status).toBe("sending");

    await deliverAll(stepEnv, sends, "sends");
    expect(await rowsOn(shard0, id)).toEqual(sentEach(movers));
    const done = await campaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: keys.length, sent: keys.length, queued: 0, failed: 0, skipped: 0 } });
    // One message a recipient: one row each, on its contact's shard, and one outbox copy each.
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(keys);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.counters).toMatchObject({ recipients: keys.length, sent: keys.length, queued: 0 });
  }, 60_000);

  it("splits a paused campaign; its resume sends the rest from both shards, every recipient once", async () => {
    const { panel, id, keys, movers, stayers, stepEnv, imports, sends } = await publishedCampaign("pausedsplit", 3, 2);
    await deliverAll(stepEnv, sends, "sends", homeBatch((await batchesOn(panelData, id))[0]!));
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/pause`, {})).body.status).toBe("paused");
    const split = await startedSplit(stepEnv, imports, panel.id);
    expect(await split.step()).toEqual({ next: "now" });
    expect(await split.step()).toEqual({ next: "later", ms: TUNING.settleMs });
    split.settle();
    expect(await split.step()).toEqual({ next: "none" });
    // Paused: the target holds its part and its queued recipients, nudged by nothing yet.
    expect(sends.bodies.filter((body: any) => body.shard === 0)).toEqual([]);
    expect((await rowsOn(shard0, id)).filter((row) => row.endsWith(" queued")).length).toBeGreaterThan(0);
    expect(await panelData.prepare("SELECT finished_at FROM campaign_shards WHERE campaign_id = ? AND shard = 0").bind(id).first()).toEqual({ finished_at: null });
    expect((await campaign(panel, id)).status).toBe("paused");

    // The resume (the admin route, on the real queues) nudges the home's batches and the target's.
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/resume`, {})).body.status).toBe("sending");
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: keys.length, sent: keys.length, queued: 0, failed: 0, skipped: 0 } });
    expect(await rowsOn(shard0, id)).toEqual(sentEach(movers));
    expect(await rowsOn(panelData, id)).toEqual(sentEach(stayers));
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(keys);
  }, 60_000);

  it("cancels a campaign while the split's fence holds its moved rows: taken at once (no 503), every recipient sent or skipped, none left queued", async () => {
    const { panel, id, keys, movers, stepEnv, imports, sends } = await publishedCampaign("cancelsplit", 3, 2);
    await deliverAll(stepEnv, sends, "sends", homeBatch((await batchesOn(panelData, id))[0]!));
    const sentBefore = (await rowsOn(panelData, id)).filter((row) => row.endsWith(" sent")).length;
    expect(sentBefore).toBeGreaterThan(0);
    const split = await startedSplit(stepEnv, imports, panel.id);
    expect(await split.step()).toEqual({ next: "now" });
    expect(await split.step()).toEqual({ next: "later", ms: TUNING.settleMs });
    // Switched, the old rows not gone: the source (the home) still holds fenced copies of the moved recipients.
    const cancelled = await admin("POST", `/panels/${panel.id}/campaigns/${id}/cancel`, {});
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.status).toBe("cancelled");
    // The target's queued copies are skipped by the cancel (its caller's map naming the target) or by the cleaning step's carry (a map cached before the switch).
    split.settle();
    expect(await split.step()).toEqual({ next: "none" });
    const counters = (await campaign(panel, id)).counters;
    expect(counters).toMatchObject({ recipients: keys.length, sent: sentBefore, queued: 0, skipped: keys.length - sentBefore });
    expect((await rowsOn(shard0, id)).map((row) => row.split(" ")[0])).toEqual(movers);
    expect((await rowsOn(shard0, id)).filter((row) => row.endsWith(" queued"))).toEqual([]);

    // A cancel whose caller's map did not name the target yet (made in the pause) left a moved recipient queued there: the target's part skips it.
    const stale = await shard0.prepare("UPDATE campaign_messages SET status = 'queued', error = NULL WHERE campaign_id = ? AND status = 'skipped' RETURNING contact_id").bind(id).first<number>("contact_id");
    expect(stale).not.toBeNull();
    const nudged = sends.bodies.length;
    await carryCampaignsToTarget(stepEnv, { panelId: panel.id, home: { shard: TEST_SHARD, db: panelData }, source: { shard: TEST_SHARD, db: panelData }, target: { shard: 0, db: shard0 }, startedAt: split.now() - 60_000 }, Date.now(), false);
    expect(await shard0.prepare("SELECT status FROM campaign_messages WHERE campaign_id = ? AND contact_id = ?").bind(id, stale).first("status")).toBe("skipped");
    expect(sends.bodies.length).toBe(nudged);
  }, 60_000);

  it("moves a whole panel while its campaign sends: nudges taken in the pause claim nothing, the new home's unsent batches are nudged at the switch, each recipient once", async () => {
    const { panel, id, keys, stepEnv, imports, sends } = await publishedCampaign("wholemove", 3, 2);
    await deliverAll(stepEnv, sends, "sends", homeBatch((await batchesOn(panelData, id))[0]!));
    // The other batches' nudges are taken during the move's pause: they claim nothing and are gone.
    sends.bodies.splice(0, sends.bodies.length);
    const started = await startPanelMove(stepEnv, (await getPanel(env.DB, panel.id))!, 0, Date.now());
    if (!started.ok) throw new Error(`the move was refused: ${started.problem.message}`);
    imports.bodies.splice(0, imports.bodies.length, ...imports.bodies.filter((body) => readMoveNudge(body) === null));
    const move = steppedSplit(panel.id, started.value.id, stepEnv);
    while ((await move.step()).next === "now");
    expect((await getPanelMove(env.DB, panel.id, started.value.id))!.state).toBe("cleaning");
    const unsent = (await textsOn(shard0, "SELECT DISTINCT CAST(batch AS TEXT) FROM campaign_messages WHERE campaign_id = ? AND status = 'queued' ORDER BY batch", id)).map(Number);
    expect(unsent.length).toBeGreaterThan(0);
    expect(sends.bodies).toEqual(unsent.map((batch) => ({ kind: "campaign_batch", panelId: panel.id, campaignId: id, batch })));
    move.settle();
    while ((await move.step()).next !== "none");
    await deliverAll(stepEnv, sends, "sends");
    expect(await campaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: keys.length, sent: keys.length, queued: 0, failed: 0, skipped: 0 } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(keys);
  }, 60_000);

  /** Eight movers and eight stayers, a campaign to them with an A/B test of two subjects over half of them (four a variant), published. */
  async function abCampaign(prefix: string) {
    const test = { variants: [{ subject: "A: spring sale" }, { subject: "B: last chance" }], test_share: 50, metric: "unique_opens", wait_minutes: 60 };
    const published = await publishedCampaign(prefix, 8, undefined, async (p, campaignId) => {
      const set = await admin("PUT", `/panels/${p.id}/campaigns/${campaignId}/ab-test`, test);
      expect(set.status, JSON.stringify(set.body)).toBe(200);
    });
    const { panel, id } = published;
    type Row = { contact_id: number; ab_group: string; variant: number | null; status: string };
    const abRowsOn = async (db: ShardDb) => (await db.prepare("SELECT contact_id, ab_group, variant, status FROM campaign_messages WHERE campaign_id = ? ORDER BY contact_id").bind(id).all<Row>()).results;
    const signer = new TrackingSigner(env.SECRETS_KEY);
    const open = async (contactId: number) => expect((await call(`/t/o/${await signer.sign({ kind: "open", panelId: panel.id, campaignId: id, contactId })}`)).status).toBe(200);
    const abReport = async () => (await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test;
    return { ...published, abRowsOn, open, abReport };
  }

  /** Both shards' rest went to `winner`, every recipient once (12 messages of the winner's subject, 4 of the other's). */
  async function restSentToWinner(c: Awaited<ReturnType<typeof abCampaign>>, winner: number): Promise<void> {
    const done = await campaign(c.panel, c.id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: c.keys.length, sent: c.keys.length, queued: 0, failed: 0, skipped: 0 }, ab_test: { winner: ["A", "B"][winner] } });
    for (const db of [panelData, shard0]) {
      const rest = (await c.abRowsOn(db)).filter((r) => r.ab_group === "rest");
      expect(rest.length).toBeGreaterThan(0);
      expect(rest.every((r) => r.variant === winner && r.status === "sent")).toBe(true);
    }
    const messages = await outbox(c.panel);
    expect(messages.map((m) => m.to).sort()).toEqual(c.keys);
    expect(messages.filter((m) => m.subject === ["A: spring sale", "B: last chance"][winner])).toHaveLength(12);
    expect(messages.filter((m) => m.subject === ["A: spring sale", "B: last chance"][1 - winner])).toHaveLength(4);
  }

  it("an A/B test decided before the split: the rest goes to the winner on both shards, each recipient once; the target counts its moved recipients' later opens", async () => {
    const ab = await abCampaign("absplit");
    const { panel, id, stepEnv, imports, sends, abRowsOn, open } = ab;
    // The test share goes out (four a variant); one of B's opens it, and B wins after the wait.
    await deliverAll(stepEnv, sends, "sends");
    const opened = (await abRowsOn(panelData)).find((r) => r.ab_group === "test" && r.variant === 1)!.contact_id;
    await open(opened);
    expect(await decideDueAbTests(stepEnv, panelData, Date.now() + 61 * 60_000)).toBe(1);
    // The rest's batches are nudged on the home; the split comes before they are taken.
    expect(sends.bodies.length).toBeGreaterThan(0);
    const split = await startedSplit(stepEnv, imports, panel.id);
    expect(await split.step()).toEqual({ next: "now" });
    expect(await split.step()).toEqual({ next: "later", ms: TUNING.settleMs });
    // The target's part carries the release: its held rest takes the winner.
    expect(await shard0.prepare("SELECT ab_winner FROM campaign_parts WHERE campaign_id = ?").bind(id).first("ab_winner")).toBe(1);
    split.settle();
    expect(await split.step()).toEqual({ next: "none" });
    // A moved test recipient opens its message after the split: counted on the target.
    const movedTest = (await abRowsOn(shard0)).find((r) => r.ab_group === "test" && r.contact_id !== opened)!;
    await open(movedTest.contact_id);
    await deliverAll(stepEnv, sends, "sends");

    await restSentToWinner(ab, 1);
    // The groups summed over both shards: the rest whole and sent, each variant's opens with the moved one's.
    const opensOf = (variant: number) => (variant === 1 ? 1 : 0) + (movedTest.variant === variant ? 1 : 0);
    expect(await ab.abReport()).toMatchObject({
      winner: "B",
      variants: [
        { label: "A", recipients: 4, sent: 4, unique_opens: opensOf(0) },
        { label: "B", recipients: 4, sent: 4, unique_opens: opensOf(1) },
      ],
      rest: { variant: "B", recipients: 8, sent: 8 },
    });
  }, 60_000);

  it("an A/B test split before its decision: the decision sums the target's figures, releases its rest there, the wait counting from the publish, each recipient once", async () => {
    const ab = await abCampaign("abearly");
    const { panel, id, stepEnv, imports, sends, abRowsOn, open, abReport } = ab;
    await deliverAll(stepEnv, sends, "sends");
    const decideAt = (await admin("GET", `/panels/${panel.id}/campaigns/${id}/ab-test`)).body.ab_test.results.decide_at;
    expect(decideAt).toEqual(expect.any(String));
    await splitToEnd(await startedSplit(stepEnv, imports, panel.id));
    // The target's part holds no winner yet; its rest is held (nothing of it nudged).
    expect(await shard0.prepare("SELECT ab_winner FROM campaign_parts WHERE campaign_id = ?").bind(id).first("ab_winner")).toBeNull();
    expect(sends.bodies).toEqual([]);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/ab-test`)).body.ab_test.results.decide_at).toBe(decideAt);
    // A moved test recipient opens its message: counted on the target, it decides the test.
    const moved = (await abRowsOn(shard0)).find((r) => r.ab_group === "test")!;
    await open(moved.contact_id);
    expect(await decideDueAbTests(stepEnv, panelData, Date.now() + 61 * 60_000)).toBe(1);
    expect(await panelData.prepare("SELECT ab_winner FROM campaigns WHERE id = ?").bind(id).first("ab_winner")).toBe(moved.variant);
    // The target's release comes by its nudge, as any shard's.
    await deliverAll(stepEnv, imports, "imports");
    expect(await shard0.prepare("SELECT ab_winner FROM campaign_parts WHERE campaign_id = ?").bind(id).first("ab_winner")).toBe(moved.variant);
    await deliverAll(stepEnv, sends, "sends");
    await restSentToWinner(ab, moved.variant!);
    expect(await abReport()).toMatchObject({ rest: { recipients: 8, sent: 8 } });
    expect((await abReport()).variants[moved.variant!]).toMatchObject({ recipients: 4, sent: 4, unique_opens: 1 });
  }, 60_000);
});

/** A panel (no map, campaigns sent when asked) with a list "Readers" of `keysOf(its id)`. */
async function readersPanel(keysOf: (panelId: string) => string[]) {
  const panel = await createPanel();
  const api = apiFor(panel);
  expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
  const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
  const keys = keysOf(panel.id);
  for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key }, listid: String(list) })).status).toBe(200);
  return { panel, list, keys };
}

/** A draft campaign to `list`, and the call scheduling it to send now. */
async function campaignTo(panel: TestPanel, list: number) {
  const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
  const sendNow = async () => expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true })).status).toBe(200);
  return { id, sendNow };
}

/** A campaign to `list` sent to every member. */
async function sentCampaign(panel: TestPanel, list: number): Promise<string> {
  const { id, sendNow } = await campaignTo(panel, list);
  await sendNow();
  await publishDueBroadcasts(env, Date.now());
  expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent" });
  return id;
}

/** The campaign's message to `key` on `db`. */
const messageOf = (db: ShardDb, campaignId: string, key: string) =>
  db
    .prepare("SELECT m.contact_id, m.provider_msg_id FROM campaign_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.campaign_id = ? AND c.pk_value = ?")
    .bind(campaignId, key)
    .first<{ contact_id: number; provider_msg_id: string }>();

/** The split of buckets AT–4095 to SHARD_0 as startPartitionSplit records it, its steps run on a clock of the test's own. */
async function recordedSplit(panelId: string, prefix: string) {
  const moveId = `mov_${prefix}_${panelId}`;
  expect(await insertPanelMove(env.DB, { id: moveId, panelId, fromShard: TEST_SHARD, toShard: 0, buckets: { first: AT, last: 4095 }, createdAt: Date.now() })).toBe(true);
  return steppedSplit(panelId, moveId);
}

/** The recorded move `moveId`, its steps run with `stepEnv` on a clock of the test's own. */
function steppedSplit(panelId: string, moveId: string, stepEnv: Env = env) {
  let clock = Date.now();
  return { panelId, moveId, step: () => runMoveStep(stepEnv, moveId, TUNING, () => clock), settle: () => void (clock += TUNING.settleMs), now: () => clock };
}

/** The split of buckets AT–4095 to SHARD_0 started as the admin route starts it (not refused), its nudge kept back: the test runs its steps. */
async function startedSplit(stepEnv: Env, imports: CollectingQueue, panelId: string) {
  const started = await startPartitionSplit(stepEnv, (await getPanel(env.DB, panelId))!, AT, 0, Date.now());
  if (!started.ok) throw new Error(`the split was refused: ${started.problem.message}`);
  imports.bodies.splice(0, imports.bodies.length, ...imports.bodies.filter((body) => readMoveNudge(body) === null));
  return steppedSplit(panelId, started.value.id, stepEnv);
}

/** An env whose IMPORTS and SENDS messages are kept for the test to hand over (publish steps of `ids` contact ids each, when given). */
function heldQueues(ids?: number) {
  const imports = collectingQueue();
  const sends = collectingQueue();
  const overrides: Record<string, unknown> = { IMPORTS: imports, SENDS: sends };
  if (ids !== undefined) overrides.FANOUT_CHUNK_IDS = String(ids);
  return { stepEnv: withBindings(env, overrides as Partial<Env>), imports, sends };
}

let rounds = 0;

/**
 * Hands the kept messages of `queue` that `which` takes to their queue's consumer, each twice in
 * one batch (a redelivery, taken at once), until none is left; the others stay kept.
 */
async function deliverAll(stepEnv: Env, queue: CollectingQueue, kind: "imports" | "sends", which: (body: any) => boolean = () => true): Promise<void> {
  for (;;) {
    const taken = queue.bodies.filter(which);
    if (taken.length === 0) return;
    queue.bodies.splice(0, queue.bodies.length, ...queue.bodies.filter((body) => !which(body)));
    const round = rounds++;
    const batch = createMessageBatch(`apiv2-${kind}-default`, taken.flatMap((body) => [body, body]).map((body, i) => ({ id: `split-${round}-${i}`, timestamp: new Date(), attempts: 1, body })));
    const exec = createExecutionContext();
    await handleQueue(batch, stepEnv, exec);
    await getQueueResult(batch, exec);
  }
}

/** Runs a recorded split through: the copy, the switch, the settle time, the old rows' removal. */
async function splitToEnd(split: Awaited<ReturnType<typeof recordedSplit>>): Promise<void> {
  expect(await split.step()).toEqual({ next: "now" });
  expect(await split.step()).toEqual({ next: "later", ms: TUNING.settleMs });
  split.settle();
  expect(await split.step()).toEqual({ next: "none" });
  expect(await getPanelMove(env.DB, split.panelId, split.moveId)).toMatchObject({ state: "done", error: null });
}
