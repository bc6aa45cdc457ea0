import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleQueue } from "../../src/jobs/queues";
import { setPartitionMap } from "../../src/services/access/partitions";
import { abOrderKey, abSeed, testRecipients } from "../../src/domain/ab-test";
import { decideDueAbTests } from "../../src/services/broadcasts/ab-decision";
import { abTalliesAcross } from "../../src/services/broadcasts/report";
import { abGroupTallies, releaseAbRest } from "../../src/store/campaigns/ab-tests";
import { countEngagement } from "../../src/store/campaigns/messages";
import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";
import { TrackingSigner } from "../../src/services/channels/email/tracking";
import { pruneShard } from "../../src/services/retention/housekeeping";
import { config } from "../../src/lib/config";
import type { ShardDb } from "../../src/store/shards";
import { admin, apiFor, call, createPanel, panelData, TEST_SHARD, type TestPanel } from "../support/helpers";
import { campaign, outbox, waitForCampaign } from "../support/broadcasts";
import { collectingQueue, withBindings, type CollectingQueue } from "../support/cron";
import { eventually } from "../support/activity";
import { keyOn, listCampaign, shard0, TWO } from "../support/partitions";
import { planOf, recording } from "../support/plans";
import { namingMessages, talliesFromMessages } from "../support/ab-tallies";

// Decision 0038 step 4: a campaign's A/B test on a panel split over two partitions (TWO: SHARD_0
// and SHARD_1, its home). Each shard splits its own recipients into test groups and a held rest;
// the winner is picked on the home from both shards' figures, summed, and each shard's rest gets it.

/** Contacts a shard of TWO holds in these tests. */
const PER_SHARD = 10;

const TEST = {
  variants: [{ subject: "A: spring sale" }, { subject: "B: last chance", html: "<p>Only today</p>" }],
  // 40 % of each shard's ten: four test recipients a shard, two a variant; six held for the winner.
  test_share: 40,
  metric: "unique_opens",
  wait_minutes: 60,
};

/** An env whose IMPORTS messages (publish steps, A/B releases) are kept for the test to hand over; sends go to the real queue. */
function collectingEnv(): { stepEnv: Env; imports: CollectingQueue } {
  const imports = collectingQueue();
  return { stepEnv: withBindings(env, { IMPORTS: imports } as Partial<Env>), imports };
}

let rounds = 0;

/**
 * Hands the kept IMPORTS messages to the consumer, each delivered twice in the same batch (a
 * redelivery), or (`once`) each distinct one once, so that a round runs one step of each chain.
 */
async function drainOnce(stepEnv: Env, imports: CollectingQueue, once = false): Promise<void> {
  const kept = imports.bodies.splice(0);
  const bodies = once ? [...new Set(kept.map((body) => JSON.stringify(body)))].map((body) => JSON.parse(body) as unknown) : kept.flatMap((body) => [body, body]);
  const round = rounds++;
  const batch = createMessageBatch("apiv2-imports-default", bodies.map((body, i) => ({ id: `ab-${round}-${i}`, timestamp: new Date(), attempts: 1, body })));
  const exec = createExecutionContext();
  await handleQueue(batch, stepEnv, exec);
  await getQueueResult(batch, exec);
}

/** drainOnce until no message is left. */
async function drainImports(stepEnv: Env, imports: CollectingQueue): Promise<void> {
  while (imports.bodies.length) await drainOnce(stepEnv, imports);
}

type Row = { contact_id: number; ab_group: string; variant: number | null; status: string };

/** The campaign's recipient rows kept on `db`. */
async function rowsOn(db: ShardDb, campaignId: string): Promise<Row[]> {
  return (await db.prepare("SELECT contact_id, ab_group, variant, status FROM campaign_messages WHERE campaign_id = ? ORDER BY contact_id").bind(campaignId).all<Row>()).results;
}

const testOf = (rows: Row[], variant: number) => rows.filter((r) => r.ab_group === "test" && r.variant === variant);

/** Opens (through the tracking pixel) the messages of `count` test recipients of `variant` kept on `db`. */
async function open(panel: TestPanel, db: ShardDb, campaignId: string, variant: number, count: number): Promise<void> {
  const signer = new TrackingSigner(env.SECRETS_KEY);
  for (const row of testOf(await rowsOn(db, campaignId), variant).slice(0, count)) {
    expect((await call(`/t/o/${await signer.sign({ kind: "open", panelId: panel.id, campaignId, contactId: row.contact_id })}`)).status).toBe(200);
  }
}

const winnerOf = async (id: string) => (await panelData.prepare("SELECT ab_winner FROM campaigns WHERE id = ?").bind(id).first<number | null>("ab_winner")) ?? null;

/** A panel on TWO with a list of PER_SHARD contacts on each shard, and a draft to the list with TEST as its A/B test. */
async function spreadCampaign(): Promise<{ panel: TestPanel; id: string; keys: string[] }> {
  const panel = await createPanel();
  const api = apiFor(panel);
  expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
  expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
  const keys = [0, TEST_SHARD].flatMap((shard) => Array.from({ length: PER_SHARD }, (_, i) => keyOn(panel.id, shard, i)));
  for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key }, listid: list })).status).toBe(200);
  const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
  const set = await admin("PUT", `/panels/${panel.id}/campaigns/${id}/ab-test`, TEST);
  expect(set.status, JSON.stringify(set.body)).toBe(200);
  const scheduled = await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true });
  expect(scheduled.status, JSON.stringify(scheduled.body)).toBe(200);
  return { panel, id, keys: keys.sort() };
}

/** Until `count` messages of the panel are in the outbox. */
const sentCount = (panel: TestPanel, count: number) => eventually(async () => ((await outbox(panel)).length >= count ? true : undefined));

describe("A/B tests of a campaign on a panel on two partitions (decision 0038 step 4)", () => {
  it("each shard splits its own recipients; the decision waits for both, picks the winner from both shards' opens summed, and both shards' rest get it, each recipient once", async () => {
    const { panel, id, keys } = await spreadCampaign();
    const { stepEnv, imports } = collectingEnv();
    // The home publishes (one step here) and sends its test share; SHARD_0's first step is nudged, not yet taken.
    await publishDueBroadcasts(stepEnv, Date.now());
    expect(imports.bodies).toContainEqual({ type: "campaign_publish", panelId: panel.id, campaignId: id, shard: 0 });
    const home = await rowsOn(panelData, id);
    expect(home).toHaveLength(PER_SHARD);
    expect([testOf(home, 0).length, testOf(home, 1).length]).toEqual([2, 2]);
    expect(home.filter((r) => r.ab_group === "rest").every((r) => r.variant === null)).toBe(true);
    expect(await rowsOn(shard0, id)).toEqual([]);
    // However long the wait, no winner while a shard has not published.
    expect(await decideDueAbTests(stepEnv, panelData, Date.now() + 24 * 60 * 60_000)).toBe(0);
    expect(await winnerOf(id)).toBeNull();
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/ab-test`)).body.ab_test.results.decide_at).toBeNull();

    await drainImports(stepEnv, imports);
    // SHARD_0 split its own ten the same way: two test recipients a variant, six held.
    const other = await rowsOn(shard0, id);
    expect(other).toHaveLength(PER_SHARD);
    expect([testOf(other, 0).length, testOf(other, 1).length]).toEqual([2, 2]);
    expect(other.filter((r) => r.ab_group === "rest")).toHaveLength(6);
    // Both shards' test shares go out; the rest waits.
    await sentCount(panel, 8);
    expect(await outbox(panel)).toHaveLength(8);
    expect((await campaign(panel, id)).status).toBe("sending");
    const waitFrom = Date.now();

    // The home alone would pick A (2 opens to 1); SHARD_0 adds two to B: B wins only with both counted.
    await open(panel, panelData, id, 0, 2);
    await open(panel, panelData, id, 1, 1);
    await open(panel, shard0, id, 1, 2);
    expect(await decideDueAbTests(stepEnv, panelData, waitFrom + 61 * 60_000)).toBe(1);
    expect(await winnerOf(id)).toBe(1);
    // SHARD_0's rest is released by a nudge naming it; that nudge is lost (a crash), so its rest stays held.
    expect(imports.bodies).toEqual([{ type: "campaign_ab_release", panelId: panel.id, campaignId: id, shard: 0 }]);
    imports.bodies.splice(0);
    await sentCount(panel, 14);
    expect((await rowsOn(shard0, id)).filter((r) => r.ab_group === "rest").every((r) => r.variant === null && r.status === "queued")).toBe(true);
    // The cron's re-drive of the stalled campaign sends it again.
    await publishDueBroadcasts(stepEnv, waitFrom + 64 * 60_000);
    expect(imports.bodies).toContainEqual({ type: "campaign_ab_release", panelId: panel.id, campaignId: id, shard: 0 });
    // Before the nudge runs, SHARD_0's release by hand: the part's one row, found by key (decision 0056): no statement writes or walks
    // SHARD_0's rest, whatever its size. Once: a later release cannot change the winner there.
    const { db: recorded, caught } = recording(shard0);
    await releaseAbRest(recorded, panel.id, id, 1);
    await releaseAbRest(shard0, panel.id, id, 0);
    expect(caught.map((c) => c.sql.trim().split(/\s+/).slice(0, 2).join(" "))).toEqual(["UPDATE campaign_parts"]);
    expect(await planOf(shard0, caught[0]!)).toMatch(/^SEARCH campaign_parts USING (INDEX \S+|PRIMARY KEY) \(campaign_id=\?\)$/);
    expect(await shard0.prepare("SELECT ab_winner FROM campaign_parts WHERE campaign_id = ?").bind(id).first("ab_winner")).toBe(1);
    expect((await rowsOn(shard0, id)).filter((r) => r.ab_group === "rest").map((r) => [r.variant, r.status])).toEqual(Array(6).fill([null, "queued"]));
    // Released on both shards, the home's rest sent: each group's count exact, the rest the winner's.
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test).toMatchObject({
      winner: "B",
      variants: [
        { label: "A", recipients: 4, sent: 4 },
        { label: "B", recipients: 4, sent: 4 },
      ],
      rest: { variant: "B", recipients: 12, sent: 6 },
    });
    // The nudges (each delivered twice) repeat the release, which changes nothing, and send SHARD_0's rest.
    await drainImports(stepEnv, imports);

    const done = await waitForCampaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 20, sent: 20, queued: 0, skipped: 0, failed: 0 }, ab_test: { winner: "B" } });
    // Every recipient got exactly one message; both shards' rest got the winner.
    const messages = await outbox(panel);
    expect(messages.map((m) => m.to).sort()).toEqual(keys);
    expect(messages.filter((m) => m.subject === "B: last chance")).toHaveLength(16);
    expect(messages.filter((m) => m.subject === "A: spring sale")).toHaveLength(4);
    for (const db of [panelData, shard0]) {
      const rest = (await rowsOn(db, id)).filter((r) => r.ab_group === "rest");
      expect(rest).toHaveLength(6);
      expect(rest.every((r) => r.variant === 1 && r.status === "sent")).toBe(true);
    }

    // The results, summed over both shards, in the report and the test's own read.
    const results = {
      metric: "unique_opens",
      winner: "B",
      decide_at: expect.any(String),
      variants: [
        { label: "A", winner: false, recipients: 4, sent: 4, unique_opens: 2, open_rate: 0.5 },
        { label: "B", winner: true, recipients: 4, sent: 4, unique_opens: 3, open_rate: 0.75 },
      ],
      rest: { variant: "B", recipients: 12, sent: 12 },
    };
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test).toMatchObject(results);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/ab-test`)).body.ab_test.results).toMatchObject(results);

    // Past the retention window housekeeping prunes the recipient rows on both shards; each keeps its tallies first, the results unchanged.
    const later = Date.now() + 5 * 365 * 86_400_000;
    for (const db of [panelData, shard0]) await pruneShard(db, config(env).retentionDays, later);
    for (const db of [panelData, shard0]) expect(await rowsOn(db, id)).toEqual([]);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test).toMatchObject(results);
  });

  it("ranks a large audience a step at a time on each shard: exactly its share tested, in the campaign's hash order, the variants in turn", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const list = (await api("lists", "add", { listname: "Everyone" })).body.listid as number;
    const LARGE = 45;
    const keys = [0, TEST_SHARD].flatMap((shard) => Array.from({ length: LARGE }, (_, i) => keyOn(panel.id, shard, i)));
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key }, listid: list })).status).toBe(200);
    const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
    // Three variants, 30 %: of each shard's 45, 14 tested (13.5 rounded), the variants in turn; 31 held.
    const test = { ...TEST, variants: [...TEST.variants, { subject: "C: for you" }], test_share: 30 };
    expect((await admin("PUT", `/panels/${panel.id}/campaigns/${id}/ab-test`, test)).status).toBe(200);
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true })).status).toBe(200);

    // Steps of 8: each shard inserts its recipients in several steps, then ranks them in several more.
    const CHUNK = 8;
    const imports = collectingQueue();
    const stepEnv = withBindings(env, { IMPORTS: imports, FANOUT_CHUNK_IDS: String(CHUNK) } as Partial<Env>);
    const ranked = async (db: ShardDb) => (await rowsOn(db, id)).filter((r) => r.ab_group !== "pending").length;
    const seen = new Map<ShardDb, number[]>([[panelData, []], [shard0, []]]);
    const watch = async () => {
      for (const [db, counts] of seen) counts.push(await ranked(db));
    };
    await publishDueBroadcasts(stepEnv, Date.now());
    await watch();
    // One step of each shard's chain a round.
    while (imports.bodies.length) {
      await drainOnce(stepEnv, imports, true);
      await watch();
    }

    const tested = testRecipients(LARGE, 30, 3);
    expect(tested).toBe(14);
    const seed = abSeed(id);
    for (const [db, counts] of seen) {
      // Ranked a step's worth at a time, in several steps.
      const steps = counts.map((n, i) => n - (counts[i - 1] ?? 0)).filter((n) => n > 0);
      expect(steps.length).toBeGreaterThanOrEqual(Math.ceil(LARGE / CHUNK));
      expect(Math.max(...steps)).toBeLessThanOrEqual(CHUNK);
      // The groups one ranking of the whole shard gives: its first 14 in the hash order tested, the variants in turn.
      const rows = await rowsOn(db, id);
      expect(rows).toHaveLength(LARGE);
      const order = rows.map((r) => r.contact_id).sort((a, b) => abOrderKey(seed, a) - abOrderKey(seed, b) || a - b);
      const groups = Object.fromEntries(rows.map((r) => [r.contact_id, r.ab_group === "test" ? `test ${r.variant}` : `${r.ab_group} ${r.variant}`]));
      expect(order.map((contact) => groups[contact])).toEqual(order.map((_, rank) => (rank < tested ? `test ${rank % 3}` : "rest null")));
    }
    // Both shards' test shares go out, nothing of the rest.
    await sentCount(panel, 2 * tested);
    const sent = await outbox(panel);
    expect(sent).toHaveLength(2 * tested);
    expect(["A: spring sale", "B: last chance", "C: for you"].map((subject) => sent.filter((m) => m.subject === subject).length)).toEqual([10, 10, 8]);
    // Cancelled: no other test's decision (deployment-wide) finds it due.
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/cancel`, {})).body.status).toBe("cancelled");
  });

  it("pause during the wait holds the decision until the resume; cancel during the wait skips the rest on both shards", async () => {
    const paused = await spreadCampaign();
    const { stepEnv, imports } = collectingEnv();
    await publishDueBroadcasts(stepEnv, Date.now());
    await drainImports(stepEnv, imports);
    await sentCount(paused.panel, 8);
    const waitFrom = Date.now();
    const act = (panel: TestPanel, id: string, action: string) => admin("POST", `/panels/${panel.id}/campaigns/${id}/${action}`, {});
    expect((await act(paused.panel, paused.id, "pause")).body.status).toBe("paused");
    expect(await decideDueAbTests(stepEnv, panelData, waitFrom + 2 * 60 * 60_000)).toBe(0);
    expect((await act(paused.panel, paused.id, "resume")).body.status).toBe("sending");
    await drainImports(stepEnv, imports);
    // Resumed, nothing of either shard's rest goes before the winner.
    expect(await outbox(paused.panel)).toHaveLength(8);
    expect(await decideDueAbTests(stepEnv, panelData, waitFrom + 2 * 60 * 60_000)).toBe(1);
    await drainImports(stepEnv, imports);
    expect(await waitForCampaign(paused.panel, paused.id)).toMatchObject({ status: "sent", counters: { recipients: 20, sent: 20 }, ab_test: { winner: "A" } });
    expect(new Set((await outbox(paused.panel)).map((m) => m.to)).size).toBe(20);

    const cancelled = await spreadCampaign();
    await publishDueBroadcasts(stepEnv, Date.now());
    await drainImports(stepEnv, imports);
    await sentCount(cancelled.panel, 8);
    expect((await act(cancelled.panel, cancelled.id, "cancel")).body).toMatchObject({ status: "cancelled", counters: { sent: 8, skipped: 12, queued: 0 } });
    expect(await decideDueAbTests(stepEnv, panelData, Date.now() + 2 * 60 * 60_000)).toBe(0);
    expect(imports.bodies).toEqual([]);
    for (const db of [panelData, shard0]) expect((await rowsOn(db, cancelled.id)).filter((r) => r.ab_group === "rest").every((r) => r.status === "skipped" && r.variant === null)).toBe(true);
    expect(await outbox(cancelled.panel)).toHaveLength(8);
    expect((await admin("GET", `/panels/${cancelled.panel.id}/campaigns/${cancelled.id}/report`)).body.ab_test).toMatchObject({ winner: null, rest: { variant: null, recipients: 12, sent: 0 } });
  });

  it("keeps each shard's figures in its own counters (decision 0057), equal to a GROUP BY over its messages at every step; the report sums those rows, never the messages, before and after the pruning", async () => {
    const { panel, id } = await spreadCampaign();
    const { stepEnv, imports } = collectingEnv();
    await publishDueBroadcasts(stepEnv, Date.now());
    await drainImports(stepEnv, imports);
    await sentCount(panel, 8);
    const shards = [panelData, shard0] as const;
    const same = async () => {
      for (const [i, db] of shards.entries()) expect(await abGroupTallies(db, panel.id, id, i > 0)).toEqual(await talliesFromMessages(db, id));
    };
    await same();
    // A's opens on the home, B's on SHARD_0, and a click on each shard.
    await open(panel, panelData, id, 0, 1);
    await open(panel, shard0, id, 1, 2);
    for (const db of shards) {
      const [row] = testOf(await rowsOn(db, id), 1);
      expect(await countEngagement(db, { panelId: panel.id, campaignId: id, contactId: row!.contact_id }, "click", Date.now(), "https://example.com/sale")).not.toBeNull();
    }
    await same();
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test).toMatchObject({
      winner: null,
      variants: [
        { label: "A", recipients: 4, sent: 4, opens: 1, unique_opens: 1, clicks: 0 },
        { label: "B", recipients: 4, sent: 4, opens: 2, unique_opens: 2, clicks: 2, unique_clicks: 2 },
      ],
      rest: { variant: null, recipients: 12, sent: 0 },
    });

    // Decided on the home: its rest is B's there, SHARD_0's once its part is released; then both rests go out.
    expect(await decideDueAbTests(stepEnv, panelData, Date.now() + 61 * 60_000)).toBe(1);
    await same();
    await drainImports(stepEnv, imports);
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: 20, sent: 20 } });
    await same();

    // The report's read of the figures: a few counter rows on each shard, found by key.
    const home = recording(panelData);
    const other = recording(shard0);
    const summed = await abTalliesAcross([home.db, other.db], panel.id, id);
    expect(summed.find((t) => t.group === "rest")).toMatchObject({ variant: 1, recipients: 12, sent: 12 });
    for (const [db, caught] of [[panelData, home.caught], [shard0, other.caught]] as const) {
      expect(namingMessages(caught)).toEqual([]);
      for (const statement of caught) expect(await planOf(db, statement)).not.toMatch(/\bSCAN\b/);
    }
    const results = {
      winner: "B",
      variants: [
        { label: "A", recipients: 4, sent: 4, opens: 1, unique_opens: 1, clicks: 0, open_rate: 0.25 },
        { label: "B", recipients: 4, sent: 4, opens: 2, unique_opens: 2, clicks: 2, unique_clicks: 2, open_rate: 0.5 },
      ],
      rest: { variant: "B", recipients: 12, sent: 12 },
    };
    const before = (await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test;
    expect(before).toMatchObject(results);

    // Pruned on both shards: nothing kept in the campaign's row nor its part (the counters stay), the figures unchanged.
    // (Earlier tests' campaigns come due too: a run prunes a few campaigns, so it runs until this one's rows are gone.)
    const later = Date.now() + 5 * 365 * 86_400_000;
    for (const db of shards) for (let run = 0; run < 10 && (await rowsOn(db, id)).length; run++) await pruneShard(db, config(env).retentionDays, later);
    for (const db of shards) expect(await rowsOn(db, id)).toEqual([]);
    expect(await panelData.prepare("SELECT ab_results FROM campaigns WHERE id = ?").bind(id).first("ab_results")).toBeNull();
    expect(await shard0.prepare("SELECT ab_results FROM campaign_parts WHERE campaign_id = ?").bind(id).first("ab_results")).toBeNull();
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.ab_test).toEqual(before);
  });
});
