import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleQueue } from "../../src/jobs/queues";
import { setPartitionMap } from "../../src/services/access/partitions";
import { handlePublishNudge, publishDueBroadcasts, readPublishNudge, type PublishNudge } from "../../src/services/broadcasts/publish";
import { changeCampaignState } from "../../src/services/broadcasts/lifecycle";
import { getPanel } from "../../src/store/panels";
import { TrackingSigner } from "../../src/services/channels/email/tracking";
import { pruneShard } from "../../src/services/retention/housekeeping";
import { config } from "../../src/lib/config";
import type { ShardDb } from "../../src/store/shards";
import { admin, ADMIN_TOKEN, apiFor, call, createPanel, panelData, TEST_SHARD, type TestPanel } from "../support/helpers";
import { campaign, outbox, scheduled, waitForCampaign } from "../support/broadcasts";
import { collectingQueue, withBindings, type CollectingQueue } from "../support/cron";
import { overriding } from "../support/interleave";
import { keyOn, keysOn, listCampaign, membersOn, shard0, textsOn, TWO } from "../support/partitions";
import { evenPartitions } from "../../src/domain/partitions";

// Decision 0038 step 4: a campaign of a panel split over two partitions (TWO: SHARD_0 and
// SHARD_1, its home) publishes each shard's recipients there, in its own steps, and sends them
// from there; the campaign, its state and its recipient total stay on the home.

/** An env whose publish steps take `ids` contact ids each, its IMPORTS messages kept for the test. */
function steppingEnv(ids: number): { stepEnv: Env; imports: CollectingQueue } {
  const imports = collectingQueue();
  return { stepEnv: withBindings(env, { IMPORTS: imports, FANOUT_CHUNK_IDS: String(ids) } as Partial<Env>), imports };
}

/** Hands the kept IMPORTS messages to the consumer, each delivered twice in the same batch (a redelivery), until none is left; returns how many nudges (steps) there were, not counting the repeats. */
async function drainImports(stepEnv: Env, imports: CollectingQueue): Promise<number> {
  let steps = 0;
  for (let round = 0; imports.bodies.length; round++) {
    steps += imports.bodies.length;
    const bodies = imports.bodies.splice(0).flatMap((body) => [body, body]);
    const batch = createMessageBatch("apiv2-imports-default", bodies.map((body, i) => ({ id: `step-${round}-${i}`, timestamp: new Date(), attempts: 1, body })));
    const exec = createExecutionContext();
    await handleQueue(batch, stepEnv, exec);
    await getQueueResult(batch, exec);
  }
  return steps;
}

/** The keys of the campaign's recipient rows kept on `db`. */
const recipientsOn = (db: ShardDb, campaignId: string) => textsOn(db, "SELECT c.pk_value FROM campaign_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.campaign_id = ? ORDER BY c.pk_value", campaignId);

const contactId = async (db: ShardDb, panelId: string, key: string) => (await db.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panelId, key).first<number>("id"))!;

const sorted = (items: readonly string[]) => [...items].sort();

/** Three keys on each shard of TWO. */
function keysOfBoth(panel: TestPanel): { on0: string[]; on1: string[] } {
  return { on0: [0, 1, 2].map((i) => keyOn(panel.id, 0, i)), on1: [0, 1, 2].map((i) => keyOn(panel.id, TEST_SHARD, i)) };
}

/** A panel on TWO sending campaigns at once, with a list "Readers" of three contacts on each shard. */
async function readersOnBoth() {
  const panel = await createPanel();
  const api = apiFor(panel);
  expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
  expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
  const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
  const { on0, on1 } = keysOfBoth(panel);
  for (const key of [...on0, ...on1]) expect((await api("contact", "add", { data: { EMAIL: key }, listid: list })).status).toBe(200);
  return { panel, api, list, on0, on1 };
}

/** The campaign is sent, each of the six keys got one message, and each recipient row is on its contact's shard. */
async function sentOnceOnBoth(panel: TestPanel, id: string, on0: readonly string[], on1: readonly string[]): Promise<void> {
  const done = await waitForCampaign(panel, id);
  expect(done).toMatchObject({ status: "sent", counters: { recipients: 6, sent: 6, queued: 0, failed: 0, skipped: 0 } });
  expect(sorted((await outbox(panel)).map((m) => m.to))).toEqual(sorted([...on0, ...on1]));
  expect(await recipientsOn(shard0, id)).toEqual(sorted(on0));
  expect(await recipientsOn(panelData, id)).toEqual(sorted(on1));
}

describe("campaigns of a panel on two partitions (decision 0038 step 4)", () => {
  it("email_broadcast: each shard publishes its own members once, through lost and repeated steps; every recipient gets one message; the report sums both shards", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const { on0, on1 } = keysOfBoth(panel);
    const all = sorted([...on0, ...on1]);
    const csv = `EMAIL,NAME\n${all.map((key, i) => `${key},N${i}`).join("\n")}\n`;
    const { id, sendAt } = await scheduled(panel, csv, {}, 137);
    // The import put each member on its key's shard, in the campaign's list mirrored there.
    expect((await membersOn(shard0, panel.id)).map((m) => m.split(" in ")[0])).toEqual(sorted(on0));
    expect((await membersOn(panelData, panel.id)).map((m) => m.split(" in ")[0])).toEqual(sorted(on1));

    const { stepEnv, imports } = steppingEnv(1);
    await publishDueBroadcasts(stepEnv, sendAt);
    expect((await campaign(panel, id)).status).toBe("sending");
    const nudges = imports.bodies.splice(0).map(readPublishNudge) as PublishNudge[];
    // The home's next step (no shard named, as before) and the other shard's first.
    expect(nudges).toEqual(expect.arrayContaining([{ type: "campaign_publish", panelId: panel.id, campaignId: id }, { type: "campaign_publish", panelId: panel.id, campaignId: id, shard: 0 }]));
    // The other shard's nudge is lost (a crash); the home's is taken by two consumers at once.
    const home = nudges.filter((n) => n.shard === undefined);
    await Promise.all(home.flatMap((n) => [handlePublishNudge(stepEnv, n), handlePublishNudge(stepEnv, n)]));
    await drainImports(stepEnv, imports);
    expect(await recipientsOn(panelData, id)).toEqual(sorted(on1));
    expect(await recipientsOn(shard0, id)).toEqual([]);
    // The home is done, the other shard has not begun: the campaign is not sent.
    expect((await campaign(panel, id)).status).toBe("sending");

    // The cron's re-drive of a stalled campaign nudges that shard again.
    await publishDueBroadcasts(stepEnv, sendAt + 2 * 60_000);
    const again = imports.bodies.map(readPublishNudge);
    expect(again).toContainEqual({ type: "campaign_publish", panelId: panel.id, campaignId: id, shard: 0 });
    await drainImports(stepEnv, imports);

    const done = await waitForCampaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 6, sent: 6, queued: 0, failed: 0, skipped: 0 } });
    // Every recipient got exactly one message; each recipient row sits on its contact's shard.
    expect(sorted((await outbox(panel)).map((m) => m.to))).toEqual(all);
    expect(await recipientsOn(shard0, id)).toEqual(sorted(on0));
    expect(await recipientsOn(panelData, id)).toEqual(sorted(on1));
    expect(await shard0.prepare("SELECT COUNT(*) AS n FROM campaigns WHERE id = ?").bind(id).first("n")).toBe(0);
    expect(await panelData.prepare("SELECT shard, recipients, finished_at IS NOT NULL AS finished FROM campaign_shards WHERE campaign_id = ?").bind(id).all()).toMatchObject({
      results: [{ shard: 0, recipients: 3, finished: 1 }],
    });

    // An open of a message kept on SHARD_0 counts there, and in the report.
    const reader = await contactId(shard0, panel.id, on0[0]!);
    const pixel = await call(`/t/o/${await new TrackingSigner(env.SECRETS_KEY).sign({ kind: "open", panelId: panel.id, campaignId: id, contactId: reader })}`);
    expect(pixel.status).toBe(200);
    expect(await shard0.prepare("SELECT opens FROM campaign_messages WHERE campaign_id = ? AND contact_id = ?").bind(id, reader).first("opens")).toBe(1);
    const report = await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`);
    expect(report.body.counters).toMatchObject({ recipients: 6, sent: 6, opens: 1, unique_opens: 1 });
    expect(report.body.hours.reduce((sum: number, h: { sent: number }) => sum + h.sent, 0)).toBe(6);
    expect((await admin("GET", `/panels/${panel.id}/campaigns`)).body.campaigns.find((c: { id: string }) => c.id === id).counters).toMatchObject({ recipients: 6, sent: 6 });

    // The recipients behind a number: pages merged over both shards by contact id, and the CSV.
    const first = await admin("GET", `/panels/${panel.id}/campaigns/${id}/recipients?filter=sent&limit=4`);
    const rest = await admin("GET", `/panels/${panel.id}/campaigns/${id}/recipients?filter=sent&limit=4&after=${first.body.next}`);
    const paged = [...first.body.recipients, ...rest.body.recipients];
    expect(sorted(paged.map((r: { key: string }) => r.key))).toEqual(all);
    expect(paged.map((r: { contact_id: number }) => r.contact_id)).toEqual([...paged.map((r: { contact_id: number }) => r.contact_id)].sort((a, b) => a - b));
    expect(paged.every((r: { subject: string }) => r.subject.startsWith("Hello "))).toBe(true);
    const csv2 = await call(`/admin/v1/panels/${panel.id}/campaigns/${id}/recipients?filter=opened&format=csv`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    const lines = (await csv2.text()).trim().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(on0[0]!);

    // The contact page of a recipient on SHARD_0 lists the campaign's message, named from the home.
    const page = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent(on0[1]!)}`);
    expect(page.status).toBe(200);
    expect(JSON.stringify(page.body)).toContain(`${id}.${await contactId(shard0, panel.id, on0[1]!)}`);
    expect(JSON.stringify(page.body)).toContain("Spring sale");

    // Past the retention window, housekeeping prunes the recipient rows on the shard that is not
    // the campaign's home too; the report keeps its sums.
    const later = Date.now() + 5 * 365 * 86_400_000;
    await pruneShard(shard0, config(env).retentionDays, later);
    expect(await recipientsOn(shard0, id)).toEqual([]);
    expect(await shard0.prepare("SELECT messages_pruned_at FROM campaign_parts WHERE campaign_id = ?").bind(id).first("messages_pruned_at")).toBe(later);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.counters).toMatchObject({ recipients: 6, sent: 6, unique_opens: 1 });
  });

  it("an admin campaign to a list, scheduled to send now, reaches the members on both shards once; cancel and delete on such a panel (A/B tests: partitioned-ab-tests.test.ts)", async () => {
    const { panel, api, list, on0, on1 } = await readersOnBoth();
    // Not a member: not a recipient.
    await api("contact", "add", { data: { EMAIL: keyOn(panel.id, 0, 5) } });
    const create = (draft: boolean) => listCampaign(panel, list, { draft });
    const draft = (await create(true)).body.id as string;

    const now = await admin("POST", `/panels/${panel.id}/campaigns/${draft}/schedule`, { send_now: true });
    expect(now.status, JSON.stringify(now.body)).toBe(200);
    await publishDueBroadcasts(env, Date.now());
    const done = await waitForCampaign(panel, draft);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 6, sent: 6, queued: 0 } });
    expect(await recipientsOn(shard0, draft)).toEqual(sorted(on0));
    expect(await recipientsOn(panelData, draft)).toEqual(sorted(on1));
    expect(sorted((await outbox(panel)).map((m) => m.to))).toEqual(sorted([...on0, ...on1]));

    // A campaign cancelled before it is published, then deleted: nothing of it is left on either shard.
    const other = (await create(true)).body.id as string;
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${other}/schedule`, { send_now: true })).status).toBe(200);
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${other}/cancel`, {})).body.status).toBe("cancelled");
    expect((await admin("DELETE", `/panels/${panel.id}/campaigns/${other}`)).body).toEqual({ id: other, outcome: "deleted" });
    for (const db of [shard0, panelData]) expect(await recipientsOn(db, other)).toEqual([]);
  });

  it("an admin campaign steps through the panel's own contacts on each shard: a home holding none of its partitions reads none, another panel's contacts there add no step", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 })).status).toBe(200);
    // Every bucket on SHARD_0: the home (SHARD_1) keeps the campaign and none of the contacts.
    expect((await setPartitionMap(env, panel.id, evenPartitions([0]))).ok).toBe(true);
    const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
    const keys = [0, 1, 2].map((i) => `reader${i}@example.com`);
    for (const key of keys) expect((await api("contact", "add", { data: { EMAIL: key }, listid: list })).status).toBe(200);
    expect(await keysOn(shard0, panel.id)).toEqual(keys);
    // A bigger panel on SHARD_0, its contacts made after these: their ids are within the publish's range there.
    const big = await createPanel({ shard: 0 });
    for (let i = 0; i < 12; i++) expect((await apiFor(big)("contact", "add", { data: { EMAIL: `big${i}@example.com` } })).status).toBe(200);
    const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true })).status).toBe(200);

    const { stepEnv, imports } = steppingEnv(1);
    await publishDueBroadcasts(stepEnv, Date.now());
    // The home's step found no range of the panel there: done at once, no next step of its own
    // (it walked the shard's contact ids, every other panel's, one per step).
    expect(imports.bodies.map(readPublishNudge)).toEqual([{ type: "campaign_publish", panelId: panel.id, campaignId: id, shard: 0 }]);
    expect(await panelData.prepare("SELECT publish_after, recipients FROM campaigns WHERE id = ?").bind(id).first()).toEqual({ publish_after: null, recipients: 0 });
    // SHARD_0: one step per contact of the panel, one to find none left; the other panel's twelve add none.
    expect(await drainImports(stepEnv, imports)).toBe(4);
    const done = await waitForCampaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 3, sent: 3, queued: 0 } });
    expect(await recipientsOn(shard0, id)).toEqual(keys);
    expect(sorted((await outbox(panel)).map((m) => m.to))).toEqual(keys);
  });

  it("the stalled-campaign re-drive nudges another shard's publish again only once its steps stopped: a live chain is not doubled, a lost one is taken up, each recipient once", async () => {
    const panel = await createPanel();
    expect((await setPartitionMap(env, panel.id, TWO)).ok).toBe(true);
    const { on0, on1 } = keysOfBoth(panel);
    const all = sorted([...on0, ...on1]);
    const { id, sendAt } = await scheduled(panel, `EMAIL,NAME\n${all.map((key, i) => `${key},N${i}`).join("\n")}\n`, {}, 139);
    const { stepEnv, imports } = steppingEnv(1);
    const onShard0 = () => imports.bodies.map(readPublishNudge).filter((n) => n?.shard === 0);

    await publishDueBroadcasts(stepEnv, sendAt);
    const nudges = imports.bodies.splice(0).map(readPublishNudge) as PublishNudge[];
    // SHARD_0's first step runs 90 s later and nudges its next; the home's next nudge is lost, so its campaign row stalls.
    await handlePublishNudge(stepEnv, nudges.find((n) => n.shard === 0)!, sendAt + 90_000);
    expect(onShard0()).toHaveLength(1);
    // A minute and more after the home's last step, 10 s after SHARD_0's: the home is re-driven, SHARD_0's live chain is left alone.
    await publishDueBroadcasts(stepEnv, sendAt + 100_000);
    expect(onShard0()).toHaveLength(1);
    expect(imports.bodies.map(readPublishNudge)).toContainEqual({ type: "campaign_publish", panelId: panel.id, campaignId: id });
    // SHARD_0's nudge is lost too: once its last step is over a minute old, the re-drive nudges it again.
    imports.bodies.splice(0, imports.bodies.length, ...imports.bodies.filter((body) => readPublishNudge(body)?.shard !== 0));
    await publishDueBroadcasts(stepEnv, sendAt + 200_000);
    expect(onShard0()).toEqual([{ type: "campaign_publish", panelId: panel.id, campaignId: id, shard: 0 }]);

    await drainImports(stepEnv, imports);
    await sentOnceOnBoth(panel, id, on0, on1);
  });

  it("a cancel while another shard's publish step runs leaves nothing queued there: that step inserts no recipient, the report counts none queued, none is sent", async () => {
    const { panel, list } = await readersOnBoth();
    const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true })).status).toBe(200);
    const { stepEnv, imports } = steppingEnv(10);
    await publishDueBroadcasts(stepEnv, Date.now());
    const first = imports.bodies.splice(imports.bodies.findIndex((body) => readPublishNudge(body)?.shard === 0), 1)[0];
    // SHARD_0's step read the campaign as sending on the home; the operator cancels before its insert lands.
    let cancelled = false;
    const racingShard0 = overriding(shard0, {
      batch: async (statements: D1PreparedStatement[]) => {
        if (!cancelled) {
          cancelled = true;
          expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/cancel`, {})).body.status).toBe("cancelled");
        }
        return shard0.batch(statements);
      },
    });
    await handlePublishNudge(withBindings(stepEnv, { SHARD_0: racingShard0 } as Partial<Env>), readPublishNudge(first)!);
    expect(cancelled).toBe(true);
    await drainImports(stepEnv, imports);
    expect((await campaign(panel, id)).counters).toMatchObject({ queued: 0, sent: 0 });
    expect(await shard0.prepare("SELECT COUNT(*) AS n FROM campaign_messages WHERE campaign_id = ? AND status = 'queued'").bind(id).first<number>("n")).toBe(0);
    expect(await outbox(panel)).toEqual([]);
  });

  it("a resume nudges the shards the campaign has not finished on as the re-drive does: a live publish chain there is not doubled, each recipient once", async () => {
    const { panel, list, on0, on1 } = await readersOnBoth();
    const id = (await listCampaign(panel, list, { draft: true })).body.id as string;
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/schedule`, { send_now: true })).status).toBe(200);
    const { stepEnv, imports } = steppingEnv(1);
    await publishDueBroadcasts(stepEnv, Date.now());
    expect((await admin("POST", `/panels/${panel.id}/campaigns/${id}/pause`, {})).body.status).toBe("paused");
    // While paused, SHARD_0's first step runs (its audience is fixed all the same) and nudges its next.
    const first = imports.bodies.splice(imports.bodies.findIndex((body) => readPublishNudge(body)?.shard === 0), 1)[0];
    await handlePublishNudge(stepEnv, readPublishNudge(first)!);
    const onShard0 = () => imports.bodies.map(readPublishNudge).filter((n) => n?.shard === 0);
    expect(onShard0()).toHaveLength(1);

    // The resume (as the admin route runs it, its nudges kept) leaves that live chain alone.
    const ctx = { env: stepEnv, db: panelData, panel: (await getPanel(env.DB, panel.id))!, now: Date.now() };
    const resumed = await changeCampaignState(ctx, id, "resume", { operator: null });
    expect(resumed.ok && resumed.value.campaign.status).toBe("sending");
    expect(onShard0()).toHaveLength(1);

    await drainImports(stepEnv, imports);
    await sentOnceOnBoth(panel, id, on0, on1);
  });
});
