import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleQueue } from "../../../src/jobs/queues";
import { handlePublishNudge, publishDueBroadcasts, readPublishNudge } from "../../../src/services/broadcasts/publish";
import { getCampaign } from "../../../src/store/campaigns/definitions";
import { admin, apiFor, countRows, createPanel, panelData } from "../../support/helpers";
import { campaign, outbox, scheduled, waitForCampaign } from "../../support/broadcasts";
import { collectingQueue, withBindings, type CollectingQueue } from "../../support/cron";
import { listCampaign } from "../../support/partitions";

/** An env whose fan-outs step over `ids` contact ids, its IMPORTS messages kept for the test. */
function steppingEnv(ids: number): { stepEnv: Env; imports: CollectingQueue } {
  const imports = collectingQueue();
  return { stepEnv: withBindings(env, { IMPORTS: imports, FANOUT_CHUNK_IDS: String(ids) } as Partial<Env>), imports };
}

/**
 * Hands the kept IMPORTS messages to the consumer (through handleQueue, as the queue does), a
 * message whose step was taken already delivered again beside it, until none is left; returns
 * how many steps ran.
 */
async function drainImports(stepEnv: Env, imports: CollectingQueue): Promise<number> {
  let steps = 0;
  while (imports.bodies.length) {
    const bodies = imports.bodies.splice(0);
    const batch = createMessageBatch("apiv2-imports-default", bodies.map((body, i) => ({ id: `step-${steps + i}`, timestamp: new Date(), attempts: 1, body })));
    const exec = createExecutionContext();
    await handleQueue(batch, stepEnv, exec);
    await getQueueResult(batch, exec);
    steps += bodies.length;
  }
  return steps;
}

const contactsCsv = (n: number) => `EMAIL,NAME\n${Array.from({ length: n }, (_, i) => `c${i}@example.com,C${i}`).join("\n")}\n`;

describe("publishing a campaign in bounded steps", () => {
  it("inserts a list campaign's recipients a few contact ids per step through the queue, each recipient once, sending as steps finish", async () => {
    const panel = await createPanel();
    const { id, sendAt } = await scheduled(panel, contactsCsv(7), {}, 131);
    const { stepEnv, imports } = steppingEnv(2);

    await publishDueBroadcasts(stepEnv, sendAt);
    // One step ran in the cron's task: two of seven ids in, the campaign sending, the next step queued.
    const first = (await getCampaign(panelData, panel.id, id))!;
    expect(first).toMatchObject({ status: "sending", publishing: true, recipients: 2 });
    expect(imports.bodies.map(readPublishNudge)).toEqual([{ type: "campaign_publish", panelId: panel.id, campaignId: id }]);
    // A second cron run publishes nothing again.
    await publishDueBroadcasts(stepEnv, sendAt + 1000);
    expect(imports.bodies).toHaveLength(1);

    const steps = await drainImports(stepEnv, imports);
    expect(steps).toBeGreaterThanOrEqual(3);
    const done = await waitForCampaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 7, sent: 7, queued: 0, failed: 0, skipped: 0 } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(Array.from({ length: 7 }, (_, i) => `c${i}@example.com`).sort());
    expect(await countRows("SELECT COUNT(DISTINCT contact_id) AS n FROM campaign_messages WHERE campaign_id = ?", id)).toBe(7);
    expect((await getCampaign(panelData, panel.id, id))!.publishing).toBe(false);
    // Home's sends today is the outbox's count kept per slot (panel_sent), not a count of its rows.
    expect((await admin("GET", `/panels/${panel.id}/overview`)).body.sends_today).toBe(7);
    expect(await countRows("SELECT COALESCE(SUM(n), 0) AS n FROM panel_sent WHERE panel_id = ?", panel.id)).toBe(7);
  });

  it("an audience campaign resumes after a crash between steps and a step run twice at once, without duplicates, and is not done before its last step", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const vip = (await api("lists", "add", { listname: "VIP" })).body.listid as number;
    for (let i = 0; i < 6; i++) await api("contact", "add", { data: { EMAIL: `v${i}@example.com`, CITY: i % 2 ? "Pune" : "Goa" }, listid: vip });
    await api("contact", "add", { data: { EMAIL: "other@example.com", CITY: "Pune" } });
    const pune = (await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } })).body.id as string;
    const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
      name: "Steps",
      subject: "Hi",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      html: "<p>Hi</p>",
      audience: { lists: [vip], exclude_segments: [pune] },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const { stepEnv, imports } = steppingEnv(1);

    await publishDueBroadcasts(stepEnv, Date.now());
    // The consumer died with the next nudge taken: the nudge is lost; the cron's re-drive finds the stalled publish.
    imports.bodies.splice(0);
    expect((await getCampaign(panelData, panel.id, id))!.publishing).toBe(true);
    await publishDueBroadcasts(stepEnv, Date.now() + 2 * 60_000);
    expect(imports.bodies.map(readPublishNudge)).toEqual([{ type: "campaign_publish", panelId: panel.id, campaignId: id }]);
    // The same step taken by two consumers at once: one inserts, the other does nothing.
    const nudge = readPublishNudge(imports.bodies.splice(0)[0])!;
    await Promise.all([handlePublishNudge(stepEnv, nudge), handlePublishNudge(stepEnv, nudge)]);
    expect(imports.bodies).toHaveLength(1);
    expect((await campaign(panel, id)).status).toBe("sending");

    await drainImports(stepEnv, imports);
    const done = await waitForCampaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 3, sent: 3 } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(["v0@example.com", "v2@example.com", "v4@example.com"]);
  });

  it("an audience campaign steps through its own panel's contacts: another panel's contacts on the shard add no step", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const readers = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
    for (let i = 0; i < 5; i++) await api("contact", "add", { data: { EMAIL: `r${i}@example.com` }, listid: readers });
    // A bigger panel on the same shard, its 40 contacts made after these: their ids are within the publish's range.
    const big = await createPanel();
    await scheduled(big, contactsCsv(40));
    const created = await listCampaign(panel, readers);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const { stepEnv, imports } = steppingEnv(2);

    await publishDueBroadcasts(stepEnv, Date.now());
    // The cron's step went through two of the panel's contacts: its cursor is the second of them.
    const cursor = await panelData.prepare("SELECT publish_after AS id FROM campaigns WHERE id = ?").bind(id).first<number>("id");
    const second = await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? ORDER BY id LIMIT 1 OFFSET 1").bind(panel.id).first<number>("id");
    expect(cursor).toBe(second);
    // Five contacts two at a time: the cron's step and two more (the last finds the rest), whatever the other panel holds.
    expect(await drainImports(stepEnv, imports)).toBe(2);
    const done = await waitForCampaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 5, sent: 5 } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(Array.from({ length: 5 }, (_, i) => `r${i}@example.com`));
    expect(await countRows("SELECT COUNT(DISTINCT contact_id) AS n FROM campaign_messages WHERE campaign_id = ?", id)).toBe(5);
  });

  it("an audience list deleted while the campaign publishes keeps its number: a new list gets the next, and its members nothing", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const vip = (await api("lists", "add", { listname: "VIP" })).body.listid as number;
    for (let i = 0; i < 6; i++) await api("contact", "add", { data: { EMAIL: `v${i}@example.com` }, listid: vip });
    for (let i = 0; i < 3; i++) await api("contact", "add", { data: { EMAIL: `stranger${i}@example.com` } });
    const created = await listCampaign(panel, vip);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const { stepEnv, imports } = steppingEnv(2);

    await publishDueBroadcasts(stepEnv, Date.now());
    expect(await getCampaign(panelData, panel.id, id)).toMatchObject({ status: "sending", publishing: true });
    // Meanwhile the client deletes the list (small: cleared before the answer) and makes another,
    // which would have taken its number (the newest list's), and so the campaign's audience.
    expect((await api("lists", "delete", { listname: "VIP" })).status).toBe(200);
    const other = (await api("lists", "add", { listname: "Strangers" })).body.listid as number;
    expect(other).toBe(vip + 1);
    for (let i = 0; i < 3; i++) await api("contact", "add", { data: { EMAIL: `stranger${i}@example.com` }, listid: other });

    await drainImports(stepEnv, imports);
    await waitForCampaign(panel, id);
    // The first step's two VIP members were mailed; no stranger is.
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(["v0@example.com", "v1@example.com"]);
  });
});
