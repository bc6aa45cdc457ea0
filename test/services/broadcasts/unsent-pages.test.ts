import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleQueue } from "../../../src/jobs/queues";
import { compileAudience } from "../../../src/services/broadcasts/audience";
import { publishDueBroadcasts, STALLED_AFTER_MS } from "../../../src/services/broadcasts/publish";
import { readUnsentNudge } from "../../../src/services/broadcasts/unsent";
import { decideDueAbTests } from "../../../src/services/broadcasts/ab-decision";
import { isSendNudge } from "../../../src/services/broadcasts/send";
import { getCampaign } from "../../../src/store/campaigns/definitions";
import { publishCampaign } from "../../../src/store/campaigns/publish";
import { unsentBatches } from "../../../src/store/campaigns/sends";
import { ADMIN_TOKEN, admin, apiFor, BASE, createPanel, fetchWith, panelData, TEST_SHARD, type TestPanel } from "../../support/helpers";
import { campaign, outbox, scheduleIn } from "../../support/broadcasts";
import { collectingQueue, withBindings, type CollectingQueue } from "../../support/cron";
import { planOf, recording } from "../../support/plans";
import { setPartitionMap } from "../../../src/services/access/partitions";
import { keyOn, listCampaign, shard0, TWO } from "../../support/partitions";

const PAGE = 2;
const EMAILS = Array.from({ length: 5 }, (_, i) => `p${i}@example.com`);

/** Queues that keep what is sent to them, and an env whose pages of unsent batches are PAGE batches. */
function pagingEnv(): { pageEnv: Env; sends: CollectingQueue; imports: CollectingQueue } {
  const sends = collectingQueue();
  const imports = collectingQueue();
  return { pageEnv: withBindings(env, { SENDS: sends, IMPORTS: imports, UNSENT_PAGE_BATCHES: String(PAGE) } as Partial<Env>), sends, imports };
}

/** A campaign of five contacts sending, one recipient a batch (batches 0 to 4), none of its batches nudged yet. */
async function sendingCampaign(): Promise<{ panel: TestPanel; id: string; publishedAt: number }> {
  const panel = await createPanel();
  const api = apiFor(panel);
  const list = (await api("lists", "add", { listname: "All" })).body.listid as number;
  for (const email of EMAILS) await api("contact", "add", { data: { EMAIL: email }, listid: list });
  const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
    name: "Pages",
    subject: "Hi",
    sender_name: "Shop",
    sender_email: "shop@example.com",
    html: "<p>Hi</p>",
    audience: { lists: [list] },
    schedule_date: scheduleIn(60 * 24 * 44),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.id as string;
  const stored = (await getCampaign(panelData, panel.id, id))!;
  const publishedAt = Date.now();
  expect(await publishCampaign(panelData, stored, 1, publishedAt, await compileAudience(panelData, panel.id, stored.audience!, publishedAt))).toBe(5);
  return { panel, id, publishedAt };
}

const act = (pageEnv: Env, panel: TestPanel, id: string, action: string) =>
  fetchWith(
    { SENDS: pageEnv.SENDS, IMPORTS: pageEnv.IMPORTS, UNSENT_PAGE_BATCHES: String(PAGE) } as Partial<Record<keyof Env, unknown>>,
    new Request(`${BASE}/admin/v1/panels/${panel.id}/campaigns/${id}/${action}`, { method: "POST", headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" }, body: "{}" }),
  );

/** The batch numbers of the campaign's kept send nudges. */
const nudgedBatches = (sends: CollectingQueue, id: string) => sends.bodies.filter((b) => isSendNudge(b) && b.campaignId === id).map((b) => (b as { batch: number }).batch);

/** Hands the kept messages of `queue` to its consumer through handleQueue, as the queue does, each twice (a repeat claims nothing). */
async function deliver(pageEnv: Env, queue: CollectingQueue, name: string): Promise<number> {
  const bodies = queue.bodies.splice(0);
  if (bodies.length === 0) return 0;
  const batch = createMessageBatch(name, [...bodies, ...bodies].map((body, i) => ({ id: `m-${i}`, timestamp: new Date(), attempts: 1, body })));
  const exec = createExecutionContext();
  await handleQueue(batch, pageEnv, exec);
  await getQueueResult(batch, exec);
  return bodies.length;
}

/** Runs the kept IMPORTS and SENDS messages, and those they send, until none is left. */
async function drain(pageEnv: Env, sends: CollectingQueue, imports: CollectingQueue): Promise<void> {
  while ((await deliver(pageEnv, sends, "apiv2-sends-default")) + (await deliver(pageEnv, imports, "apiv2-imports-default")) > 0);
}

async function sentOnce(panel: TestPanel, id: string): Promise<void> {
  expect(await campaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: 5, sent: 5, queued: 0 } });
  expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(EMAILS);
}

describe("a campaign's unsent batches are nudged a page at a time (decision 0058)", () => {
  it("a resume nudges one page and a continuation; a continuation of a paused campaign nudges nothing; drained, each recipient gets one message", async () => {
    const { panel, id } = await sendingCampaign();
    const { pageEnv, sends, imports } = pagingEnv();
    expect((await act(pageEnv, panel, id, "pause")).status).toBe(200);

    expect((await act(pageEnv, panel, id, "resume")).status).toBe(200);
    expect(nudgedBatches(sends, id)).toEqual([0, 1]);
    expect(imports.bodies.map(readUnsentNudge)).toEqual([{ type: "campaign_unsent", panelId: panel.id, campaignId: id, after: 1 }]);

    // The first page is sent; paused, the continuation nudges nothing.
    await deliver(pageEnv, sends, "apiv2-sends-default");
    expect(await outbox(panel)).toHaveLength(2);
    expect((await act(pageEnv, panel, id, "pause")).status).toBe(200);
    await deliver(pageEnv, imports, "apiv2-imports-default");
    expect(sends.bodies).toEqual([]);

    // Resumed, the next page is the first still unsent.
    expect((await act(pageEnv, panel, id, "resume")).status).toBe(200);
    expect(nudgedBatches(sends, id)).toEqual([2, 3]);
    expect(imports.bodies.map(readUnsentNudge)).toEqual([{ type: "campaign_unsent", panelId: panel.id, campaignId: id, after: 3 }]);
    await drain(pageEnv, sends, imports);
    await sentOnce(panel, id);
  });

  it("the stalled-campaign sweep nudges the first page of a stalled campaign and hands the rest on", async () => {
    const { panel, id, publishedAt } = await sendingCampaign();
    const { pageEnv, sends, imports } = pagingEnv();
    const sweptAt = publishedAt + STALLED_AFTER_MS + 1000;

    await publishDueBroadcasts(pageEnv, sweptAt);
    expect(nudgedBatches(sends, id)).toEqual([0, 1]);
    expect(imports.bodies.map(readUnsentNudge).filter((n) => n?.campaignId === id)).toEqual([{ type: "campaign_unsent", panelId: panel.id, campaignId: id, after: 1, dueBy: sweptAt }]);
    await drain(pageEnv, sends, imports);
    await sentOnce(panel, id);
  });

  it("on a panel on two partitions, the sweep pages each shard's batches, the other shard's continuation naming it", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
    const keys = [0, 1, 2].flatMap((i) => [keyOn(panel.id, 0, i), keyOn(panel.id, TEST_SHARD, i)]);
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key }, listid: list })).status).toBe(200);
    const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true })).status).toBe(200);
    // Published a contact id a step, a batch a recipient on each shard; the home's are sent, the other shard's send nudges are lost (a crash).
    const { pageEnv, sends, imports } = pagingEnv();
    const stepEnv = withBindings(pageEnv, { FANOUT_CHUNK_IDS: "1" } as Partial<Env>);
    const publishedAt = Date.now();
    await publishDueBroadcasts(stepEnv, publishedAt);
    while (imports.bodies.length) await deliver(stepEnv, imports, "apiv2-imports-default");
    sends.bodies.splice(0, sends.bodies.length, ...sends.bodies.filter((b) => isSendNudge(b) && b.shard === undefined));
    await deliver(stepEnv, sends, "apiv2-sends-default");
    expect(await unsentBatches(panelData, id, undefined, -1, 10)).toEqual([]);
    expect(await unsentBatches(shard0, id, undefined, -1, 10)).toEqual([0, 1, 2]);

    const sweptAt = publishedAt + 2 * STALLED_AFTER_MS;
    await publishDueBroadcasts(stepEnv, sweptAt);
    const nudged = sends.bodies.filter((b) => isSendNudge(b) && b.campaignId === id).map((b) => b as { batch: number; shard?: number });
    expect(nudged.map((b) => [b.shard, b.batch])).toEqual([[0, 0], [0, 1]]);
    expect(imports.bodies.map(readUnsentNudge)).toEqual([{ type: "campaign_unsent", panelId: panel.id, campaignId: id, shard: 0, after: 1, dueBy: sweptAt }]);
    await drain(stepEnv, sends, imports);
    expect(await campaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: 6, sent: 6, queued: 0 } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual([...keys].sort());
  });

  it("an A/B test's last publish step nudges a page of its test recipients' batches, its decision a page of the rest's, each with a continuation", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
    const list = (await api("lists", "add", { listname: "All" })).body.listid as number;
    for (const email of EMAILS) await api("contact", "add", { data: { EMAIL: email }, listid: list });
    const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
    const test = { variants: [{ subject: "A" }, { subject: "B" }], test_share: 50, metric: "unique_opens", wait_minutes: 1 };
    const set = await admin("PUT", `/panels/${panel.id}/campaigns/${id}/ab-test`, test);
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const scheduledNow = await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true });
    expect(scheduledNow.status, JSON.stringify(scheduledNow.body)).toBe(200);
    // Published a contact id a step: a batch a recipient.
    const { pageEnv, sends, imports } = pagingEnv();
    const stepEnv = withBindings(pageEnv, { FANOUT_CHUNK_IDS: "1" } as Partial<Env>);
    await publishDueBroadcasts(stepEnv, Date.now());
    // The publish steps run; the continuations they send are kept aside.
    const continuations: unknown[] = [];
    while (imports.bodies.length) {
      continuations.push(...imports.bodies.filter((b) => readUnsentNudge(b) !== null));
      imports.bodies.splice(0, imports.bodies.length, ...imports.bodies.filter((b) => readUnsentNudge(b) === null));
      await deliver(stepEnv, imports, "apiv2-imports-default");
    }
    imports.bodies.push(...continuations);
    const groupBatches = async (group: string) =>
      (await panelData.prepare("SELECT DISTINCT batch FROM campaign_messages WHERE campaign_id = ? AND ab_group = ? ORDER BY batch").bind(id, group).all<{ batch: number }>()).results.map((r) => r.batch);
    const tested = await groupBatches("test");
    // Five recipients, half tested: each group has at least a page of batches.
    expect(tested.length).toBeGreaterThanOrEqual(PAGE);
    // After the last step, the first page of the test recipients' batches, none of the held rest's.
    expect(nudgedBatches(sends, id)).toEqual(tested.slice(0, PAGE));
    expect(imports.bodies.map(readUnsentNudge)).toEqual([{ type: "campaign_unsent", panelId: panel.id, campaignId: id, after: tested[PAGE - 1] }]);
    await drain(stepEnv, sends, imports);
    expect(await outbox(panel)).toHaveLength(tested.length);

    // The decision: a page of the rest's batches and a continuation.
    const rest = await groupBatches("rest");
    expect(rest.length).toBeGreaterThanOrEqual(PAGE);
    expect(await decideDueAbTests(stepEnv, panelData, Date.now() + 2 * 60_000)).toBe(1);
    expect(nudgedBatches(sends, id)).toEqual(rest.slice(0, PAGE));
    expect(imports.bodies.map(readUnsentNudge)).toEqual([{ type: "campaign_unsent", panelId: panel.id, campaignId: id, after: rest[PAGE - 1] }]);
    await drain(stepEnv, sends, imports);
    await sentOnce(panel, id);
  });

  it("a page is read on the primary key from the last batch, without sorting the campaign's rows", async () => {
    const { id, publishedAt } = await sendingCampaign();
    const { db, caught } = recording(panelData);
    expect(await unsentBatches(db, id, publishedAt, 1, PAGE)).toEqual([2, 3]);
    expect(await unsentBatches(db, id, undefined, 3, PAGE)).toEqual([4]);
    for (const statement of caught) {
      const plan = await planOf(panelData, statement);
      expect(plan).toContain("SEARCH campaign_messages USING PRIMARY KEY (campaign_id=? AND batch>?)");
      expect(plan).not.toContain("TEMP B-TREE");
    }
  });

  it("a continuation naming no campaign field right is not one", () => {
    expect(readUnsentNudge({ type: "campaign_unsent", panelId: "p", campaignId: "c", after: "1" })).toBeNull();
    expect(readUnsentNudge({ type: "campaign_unsent", panelId: "p", campaignId: "c", after: 1, shard: 1.5 })).toBeNull();
    expect(readUnsentNudge({ type: "campaign_unsent", panelId: "p", campaignId: "c", after: 1, shard: 2, dueBy: 5 })).toEqual({ type: "campaign_unsent", panelId: "p", campaignId: "c", after: 1, shard: 2, dueBy: 5 });
  });
});
