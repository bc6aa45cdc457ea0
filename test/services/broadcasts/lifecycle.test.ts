import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { compileAudience } from "../../../src/services/broadcasts/audience";
import { publishDueBroadcasts } from "../../../src/services/broadcasts/publish";
import { sendCampaignBatch, type SendNudge } from "../../../src/services/broadcasts/send";
import { emailProvider } from "../../../src/services/channels/email/providers";
import { getCampaign } from "../../../src/store/campaigns/definitions";
import { publishCampaign } from "../../../src/store/campaigns/publish";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { broadcastData, campaign, outbox, publish, scheduled, scheduleIn, waitForCampaign } from "../../support/broadcasts";

const HTML = "<p>Hi {{NAME|there}}</p>";

/** A panel with a list of three contacts. */
async function panelWithList(): Promise<{ panel: TestPanel; list: number }> {
  const panel = await createPanel();
  const api = apiFor(panel);
  const list = (await api("lists", "add", { listname: "Customers" })).body.listid as number;
  for (const name of ["Ada", "Bob", "Cy"]) await api("contact", "add", { data: { EMAIL: `${name.toLowerCase()}@example.com`, NAME: name }, listid: list });
  return { panel, list };
}

function create(panel: TestPanel, list: number, body: Record<string, unknown> = {}) {
  return admin("POST", `/panels/${panel.id}/campaigns`, {
    name: "Spring",
    subject: "Hello {{NAME|friend}}",
    sender_name: "Shop",
    sender_email: "shop@example.com",
    reply_to: "help@example.com",
    tags: ["spring"],
    html: HTML,
    audience: { lists: [list] },
    ...body,
  });
}

const act = (panel: TestPanel, id: string, action: string, body: unknown = {}) => admin("POST", `/panels/${panel.id}/campaigns/${id}/${action}`, body);

/** Publishes the campaign now, `batchSize` recipients per batch, without nudging the sends queue: the test sends each batch itself. */
async function publishByHand(panel: TestPanel, id: string, batchSize: number): Promise<number | null> {
  const stored = (await getCampaign(panelData, panel.id, id))!;
  const now = Date.now();
  return publishCampaign(panelData, stored, batchSize, now, await compileAudience(panelData, panel.id, stored.audience!, now));
}

const sendBatch = (panel: TestPanel, id: string, batch: number) =>
  sendCampaignBatch(env, emailProvider(env), { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch } satisfies SendNudge);

describe("the campaign lifecycle through the admin API", () => {
  it("a draft is edited freely, scheduled, rescheduled, moved back to draft and deleted; a refused action is a 409 naming the state", async () => {
    const { panel, list } = await panelWithList();
    const created = await create(panel, list, { draft: true });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    expect(created.body).toMatchObject({ status: "draft", actions: ["edit", "schedule", "clone", "delete"] });

    const edited = await admin("PATCH", `/panels/${panel.id}/campaigns/${id}`, { subject: "Hi {{NAME|you}}", html: "<p>New body</p>", reply_to: null });
    expect(edited.status, JSON.stringify(edited.body)).toBe(200);
    expect(edited.body).toMatchObject({ status: "draft", subject: "Hi {{NAME|you}}", reply_to: null, name: "Spring" });
    const stored = (await getCampaign(panelData, panel.id, id))!;
    expect(await (await env.FILES.get(stored.bodyKey))!.text()).toBe("<p>New body</p>");
    // Bad input names the field and changes nothing.
    const bad = await admin("PATCH", `/panels/${panel.id}/campaigns/${id}`, { audience: { lists: [999999] } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ field: "audience.lists.0", message: "no list with id 999999 in this panel" }]);

    const paused = await act(panel, id, "pause");
    expect(paused.status).toBe(409);
    expect(paused.body.errors).toEqual([{ field: "status", message: "the campaign is draft, so it cannot be paused; a draft campaign allows edit, schedule, send_now, clone, delete" }]);

    // The panel's lead time (90 minutes until set) holds for a schedule; send now is not offered.
    const early = await act(panel, id, "schedule", { schedule_date: scheduleIn(30) });
    expect(early.status).toBe(400);
    expect(early.body.errors[0]).toMatchObject({ field: "schedule_date", message: expect.stringContaining("at least 90 minutes ahead") });
    const now = await act(panel, id, "schedule", { send_now: true });
    expect(now.status).toBe(400);
    expect(now.body.errors).toEqual([{ field: "send_now", message: "is offered only where the panel's campaign lead time is 0; it is 90 minutes" }]);

    const when = scheduleIn(60 * 24 * 40);
    const scheduledOne = await act(panel, id, "schedule", { schedule_date: when });
    expect(scheduledOne.status, JSON.stringify(scheduledOne.body)).toBe(200);
    expect(scheduledOne.body).toMatchObject({ status: "scheduled", schedule_date: when, actions: ["edit", "reschedule", "unschedule", "cancel", "clone"] });
    expect((await act(panel, id, "schedule", { schedule_date: scheduleIn(60 * 24 * 41) })).body.status).toBe("scheduled");
    expect((await admin("PATCH", `/panels/${panel.id}/campaigns/${id}`, { name: "Spring, edited" })).body).toMatchObject({ status: "scheduled", name: "Spring, edited" });
    // A scheduled campaign is not deleted: moved back to draft first.
    expect((await admin("DELETE", `/panels/${panel.id}/campaigns/${id}`)).status).toBe(409);
    expect((await act(panel, id, "unschedule")).body.status).toBe("draft");

    const deleted = await admin("DELETE", `/panels/${panel.id}/campaigns/${id}`);
    expect(deleted).toEqual({ status: 200, body: { id, outcome: "deleted" } });
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}`)).status).toBe(404);
    expect(await env.FILES.get(stored.bodyKey)).toBeNull();
    const log = (await admin("GET", `/panels/${panel.id}/audit`)).body.entries.map((e: any) => e.action);
    expect(log).toEqual(expect.arrayContaining(["campaign.drafted", "campaign.edited", "campaign.scheduled", "campaign.unscheduled", "campaign.deleted"]));
  });

  it("cancel during sending stops further messages; what went out is reported, and a delete then archives it", async () => {
    const { panel, list } = await panelWithList();
    const id = (await create(panel, list, { schedule_date: scheduleIn(60 * 24 * 42) })).body.id as string;
    expect(await publishByHand(panel, id, 1)).toBe(3);
    await sendBatch(panel, id, 0);
    expect(await outbox(panel)).toHaveLength(1);
    expect((await campaign(panel, id)).actions).toEqual(["pause", "cancel", "clone"]);

    const cancelled = await act(panel, id, "cancel");
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ status: "cancelled", counters: { recipients: 3, sent: 1, skipped: 2, queued: 0 } });
    // The batches still on the queue find nothing to send.
    await sendBatch(panel, id, 1);
    await sendBatch(panel, id, 2);
    expect(await outbox(panel)).toHaveLength(1);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body.counters).toMatchObject({ sent: 1, skipped: 2 });
    expect((await act(panel, id, "resume")).status).toBe(409);

    // It reached someone: deleting it archives it, the report kept.
    expect((await admin("DELETE", `/panels/${panel.id}/campaigns/${id}`)).body).toEqual({ id, outcome: "archived" });
    expect((await campaign(panel, id))).toMatchObject({ status: "archived", counters: { sent: 1 } });
  });

  it("pause stops a sending campaign between batches; resume sends the rest", async () => {
    const { panel, list } = await panelWithList();
    const id = (await create(panel, list, { schedule_date: scheduleIn(60 * 24 * 43) })).body.id as string;
    expect(await publishByHand(panel, id, 1)).toBe(3);
    await sendBatch(panel, id, 0);
    expect((await act(panel, id, "pause")).body).toMatchObject({ status: "paused", actions: ["resume", "cancel", "clone"] });
    await sendBatch(panel, id, 1);
    expect(await outbox(panel)).toHaveLength(1);
    expect((await act(panel, id, "pause")).body.errors[0].message).toContain("the campaign is paused");

    expect((await act(panel, id, "resume")).body.status).toBe("sending");
    const done = await waitForCampaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 3, sent: 3, skipped: 0 } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(["ada@example.com", "bob@example.com", "cy@example.com"]);
  });

  it("clone copies the content and audience as a new draft, of an audience campaign and of a contacts-file one", async () => {
    const { panel, list } = await panelWithList();
    const source = (await create(panel, list, { schedule_date: scheduleIn(60 * 24 * 44) })).body;
    const cloned = await act(panel, source.id, "clone");
    expect(cloned.status).toBe(201);
    expect(cloned.body.id).not.toBe(source.id);
    expect(cloned.body).toMatchObject({
      status: "draft",
      name: "Spring (copy)",
      subject: source.subject,
      sender_name: "Shop",
      sender_email: "shop@example.com",
      reply_to: "help@example.com",
      tags: ["spring"],
      audience: source.audience,
      counters: { recipients: 0, sent: 0 },
    });
    const [a, b] = await Promise.all([getCampaign(panelData, panel.id, source.id), getCampaign(panelData, panel.id, cloned.body.id)]);
    expect(b!.bodyKey).not.toBe(a!.bodyKey);
    expect(await (await env.FILES.get(b!.bodyKey))!.text()).toBe(HTML);
    // Editing the clone leaves the original as it was.
    await admin("PATCH", `/panels/${panel.id}/campaigns/${cloned.body.id}`, { html: "<p>Other</p>" });
    expect(await (await env.FILES.get(a!.bodyKey))!.text()).toBe(HTML);
    expect((await campaign(panel, source.id)).status).toBe("scheduled");

    const fromFile = await scheduled(panel, "EMAIL,NAME\nzed@example.com,Zed\n");
    const listId = (await campaign(panel, fromFile.id)).list_id as number;
    const clonedFile = await act(panel, fromFile.id, "clone");
    expect(clonedFile.body).toMatchObject({ status: "draft", list_id: null, audience: { lists: [listId], segments: [], exclude_lists: [], exclude_segments: [] } });
  });

  it("the panel's lead time at 0 enables send now; a sent campaign deleted is archived with its report; 4.10 keeps the deployment's 90 minutes", async () => {
    const { panel, list } = await panelWithList();
    expect((await admin("GET", `/panels/${panel.id}`)).body.campaign_lead_minutes).toBe(90);
    expect((await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: -1 })).status).toBe(400);
    const patched = await admin("PATCH", `/panels/${panel.id}`, { campaign_lead_minutes: 0 });
    expect(patched.body.campaign_lead_minutes).toBe(0);
    expect((await admin("GET", `/panels/${panel.id}/campaigns`)).body.lead_minutes).toBe(0);

    const draft = (await create(panel, list, { draft: true })).body;
    expect(draft.actions).toEqual(["edit", "schedule", "send_now", "clone", "delete"]);
    const sendNow = await act(panel, draft.id, "schedule", { send_now: true });
    expect(sendNow.status, JSON.stringify(sendNow.body)).toBe(200);
    expect(sendNow.body.status).toBe("scheduled");
    expect(Date.parse(sendNow.body.send_at)).toBeLessThanOrEqual(Date.now());
    await publishDueBroadcasts(env, Date.now());
    const sent = await waitForCampaign(panel, draft.id);
    expect(sent).toMatchObject({ status: "sent", counters: { sent: 3 } });
    expect(sent.actions).toEqual(["clone", "delete"]);

    expect((await admin("DELETE", `/panels/${panel.id}/campaigns/${draft.id}`)).body).toEqual({ id: draft.id, outcome: "archived" });
    expect((await campaign(panel, draft.id))).toMatchObject({ status: "archived", counters: { sent: 3 }, actions: ["clone"] });
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${draft.id}/report`)).body.counters).toMatchObject({ sent: 3 });
    expect((await admin("GET", `/panels/${panel.id}/campaigns`)).body.campaigns.map((c: any) => c.id)).not.toContain(draft.id);
    expect((await admin("GET", `/panels/${panel.id}/campaigns?archived=1`)).body.campaigns.map((c: any) => c.id)).toContain(draft.id);
    const again = await admin("DELETE", `/panels/${panel.id}/campaigns/${draft.id}`);
    expect(again.status).toBe(409);
    expect(again.body.errors[0].message).toContain("the campaign is archived");

    // upload_contact_and_publish is not the panel's: the seed's 90-minute rule still holds there.
    const early = await publish(panel, await broadcastData({ schedule_date: scheduleIn(10) }));
    expect(early.body.success).toBe(false);
    expect(JSON.stringify(early.body)).toContain("at least 90 minutes ahead");
  });
});
