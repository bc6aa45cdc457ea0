import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { publishDueBroadcasts } from "../../../src/services/broadcasts/publish";
import { suppressAddress } from "../../../src/store/suppressions";
import { pipelineSettled } from "../../support/activity";
import { admin, apiFor, call, createPanel, panelData, panelSnapshot, type TestPanel } from "../../support/helpers";
import { campaign, htmlOf, outbox, rawMessage, waitForCampaign } from "../../support/broadcasts";

const HTML = "<p>Hi {{NAME|there}}</p><a href=\"https://shop.example.com/sale\">Sale</a>";

async function audiencePanel() {
  const panel = await createPanel();
  const api = apiFor(panel);
  const vip = (await api("lists", "add", { listname: "VIP" })).body.listid as number;
  const staff = (await api("lists", "add", { listname: "Staff" })).body.listid as number;
  const add = (data: Record<string, unknown>, listid?: number) => api("contact", "add", { data, ...(listid ? { listid } : {}) });
  await add({ EMAIL: "ada@example.com", NAME: "Ada", CITY: "Pune" });
  await add({ EMAIL: "bob@example.com", NAME: "Bob", CITY: "Pune" }, staff);
  await add({ EMAIL: "cy@example.com", NAME: "Cy", CITY: "Pune" });
  await add({ EMAIL: "dee@example.com", NAME: "Dee", CITY: "Delhi" }, vip);
  await add({ EMAIL: "eve@example.com", NAME: "Eve", CITY: "Delhi" });
  await add({ MOBILE: "+15550001", EMAIL: "fay@example.com", CITY: "Goa" }, staff);
  await suppressAddress(panelData, panel.id, "cy@example.com", "unsubscribe", null, 0);
  const segment = await admin("POST", `/panels/${panel.id}/segments`, { name: "Pune", match: { all: [{ attribute: "CITY", op: "eq", value: "Pune" }] } });
  expect(segment.status).toBe(201);
  return { panel, vip, staff, pune: segment.body.id as string };
}

function createCampaign(panel: TestPanel, body: Record<string, unknown>) {
  return admin("POST", `/panels/${panel.id}/campaigns`, { name: "Spring", subject: "Hello {{NAME|friend}}", sender_name: "Shop", sender_email: "shop@example.com", html: HTML, ...body });
}

describe("campaigns to an audience of lists and segments", () => {
  it("a segment plus a list minus a list reaches exactly the right addresses, once each, frozen at publish", async () => {
    const { panel, vip, staff, pune } = await audiencePanel();
    const created = await createCampaign(panel, { reply_to: "help@example.com", tags: ["spring"], audience: { segments: [pune], lists: [vip], exclude_lists: [staff] } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ status: "scheduled", list_id: null, reply_to: "help@example.com", audience: { segments: [pune], lists: [vip], exclude_lists: [staff], exclude_segments: [] } });
    expect(created.body.CampaignID).toBe(created.body.id);

    await publishDueBroadcasts(env, Date.now());
    // A contact who comes to match after publishing is not a recipient.
    await apiFor(panel)("contact", "add", { data: { EMAIL: "late@example.com", CITY: "Pune" } });
    const done = await waitForCampaign(panel, created.body.id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 2, sent: 2, skipped: 0 } });
    const messages = await outbox(panel);
    expect(messages.map((m) => m.to).sort()).toEqual(["ada@example.com", "dee@example.com"]);
    const raw = await rawMessage(panel, messages.find((m) => m.to === "ada@example.com").id);
    expect(raw).toContain("Reply-To: help@example.com\r\n");
    expect(raw).toContain("Subject: Hello Ada\r\n");
    // Publishing again (a second cron run) sends nothing more.
    await publishDueBroadcasts(env, Date.now() + 60_000);
    expect((await outbox(panel)).length).toBe(2);
  });

  it("excluded segments, and engagement with the campaign feeding segments", async () => {
    const { panel, vip, pune } = await audiencePanel();
    const delhi = (await admin("POST", `/panels/${panel.id}/segments`, { name: "Delhi", match: { all: [{ attribute: "CITY", op: "eq", value: "Delhi" }] } })).body.id;
    const created = await createCampaign(panel, { audience: { segments: [pune, delhi], lists: [vip], exclude_segments: [pune] } });
    expect(created.status).toBe(201);
    await publishDueBroadcasts(env, Date.now());
    await waitForCampaign(panel, created.body.id);
    const messages = await outbox(panel);
    expect(messages.map((m) => m.to).sort()).toEqual(["dee@example.com", "eve@example.com"]);

    const opened = await admin("POST", `/panels/${panel.id}/segments`, { name: "Opened", match: { all: [{ engagement: "opened", campaign: created.body.id, within_days: 7 }] } });
    const received = await admin("POST", `/panels/${panel.id}/segments/count`, { match: { all: [{ engagement: "received", campaign: created.body.id }] } });
    expect(received.body.count).toBe(2);
    expect(opened.body.count).toBe(0);
    const html = htmlOf(await rawMessage(panel, messages.find((m) => m.to === "eve@example.com").id));
    const pixel = /http:\/\/127\.0\.0\.1:8787(\/t\/o\/[^"]+)/.exec(html)![1]!;
    expect((await call(pixel)).status).toBe(200);
    await pipelineSettled(panel.id);
    const path = `/panels/${panel.id}/segments/${opened.body.id}`;
    const members = async () => ((await admin("GET", `${path}/contacts`)).body.contacts as any[]).map((c) => c.EMAIL);
    for (let i = 0; i < 100 && (await members()).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await members()).toEqual(["eve@example.com"]);
    expect((await admin("GET", path)).body.count).toBe(1);
    expect((await admin("POST", `/panels/${panel.id}/segments/count`, { match: { all: [{ engagement: "opened", campaign: "any" }, { reachable: "email" }] } })).body.count).toBe(1);

    // A segment a scheduled campaign names cannot be deleted.
    const later = await createCampaign(panel, { schedule_date: "2099-01-01 10:00:00", audience: { segments: [delhi] } });
    expect(later.status).toBe(201);
    expect((await admin("DELETE", `/panels/${panel.id}/segments/${delhi}`)).status).toBe(409);
  });

  it("a saved segment on `received` follows the campaign's sends at once (no cron, no rebuild)", async () => {
    const { panel, vip } = await audiencePanel();
    const created = await createCampaign(panel, { audience: { lists: [vip] } });
    expect(created.status).toBe(201);
    const save = (name: string, match: unknown) => admin("POST", `/panels/${panel.id}/segments`, { name, match });
    const got = await save("Got it", { all: [{ engagement: "received", campaign: created.body.id }] });
    const gotAny = await save("Got any", { all: [{ engagement: "received", campaign: "any" }, { attribute: "CITY", op: "eq", value: "Delhi" }] });
    const missed = await save("Missed it", { all: [{ not: { engagement: "received", campaign: created.body.id } }, { attribute: "CITY", op: "eq", value: "Delhi" }] });
    expect([got.body.count, gotAny.body.count, missed.body.count]).toEqual([0, 0, 2]);
    const members = async (id: string) => ((await admin("GET", `/panels/${panel.id}/segments/${id}/contacts`)).body.contacts as any[]).map((c) => c.EMAIL).sort();
    // Built (the save builds small panels at once): nobody has received it yet.
    expect(await members(missed.body.id)).toEqual(["dee@example.com", "eve@example.com"]);

    await publishDueBroadcasts(env, Date.now());
    expect(await waitForCampaign(panel, created.body.id)).toMatchObject({ status: "sent", counters: { sent: 1 } });
    expect(await members(got.body.id)).toEqual(["dee@example.com"]);
    expect(await members(gotAny.body.id)).toEqual(["dee@example.com"]);
    expect(await members(missed.body.id)).toEqual(["eve@example.com"]);
    const history = (await admin("GET", `/panels/${panel.id}/segments/${got.body.id}/history`)).body;
    expect(history.members).toBe(1);
    expect(history.days.at(-1)).toMatchObject({ entered: 1, exited: 0 });
  });

  it("refuses unknown lists and segments, another panel's, and bodies that break the 4.10 rules; writes nothing", async () => {
    const { panel, pune } = await audiencePanel();
    const other = await createPanel();
    // Lists are numbered per panel (CONTRACT 10): an id above this panel's is one only the other has.
    for (let i = 0; i < 9; i++) await apiFor(other)("lists", "add", { listname: `Theirs ${i}` });
    const foreignList = (await apiFor(other)("lists", "add", { listname: "Theirs" })).body.listid;
    const before = await panelSnapshot(panel.id);
    const refused = async (body: Record<string, unknown>, field: string, message: RegExp) => {
      const answer = await createCampaign(panel, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.errors).toContainEqual({ field, message: expect.stringMatching(message) });
    };
    await refused({ audience: { lists: [foreignList] } }, "audience.lists.0", /no list with id/);
    await refused({ audience: { segments: [pune], exclude_segments: ["seg_nope"] } }, "audience.exclude_segments.0", /no segment with id "seg_nope"/);
    await refused({ audience: {} }, "audience", /at least one list or segment/);
    await refused({ audience: { segments: [pune] }, html: undefined }, "html", /one of html, html_url and email_template is required/);
    await refused({ audience: { segments: [pune] }, html_url: "https://example.com/x.html" }, "html_url", /not be combined with html/);
    await refused({ audience: { segments: [pune] }, sender_email: "not-an-address" }, "sender_email", /./);
    await refused({ audience: { segments: [pune] }, schedule_date: "2020-01-01 10:00:00" }, "schedule_date", /at least \d+ minutes ahead/);
    await refused({ audience: { segments: [pune] }, tags: ["a", "b", "c", "d", "e", "f"] }, "tags", /at most 5 tags/);
    await refused({ audience: { segments: [pune], colour: 1 } }, "audience.colour", /not an accepted member/);
    expect(await panelSnapshot(panel.id)).toBe(before);
    expect((await admin("GET", `/panels/${panel.id}/campaigns`)).body.campaigns).toEqual([]);
    // The campaign of another panel is not this panel's.
    const theirs = await createCampaign(other, { audience: { lists: [foreignList] } });
    expect(theirs.status).toBe(201);
    expect((await campaign(panel, theirs.body.id)).error).toMatch(/No campaign/);
  });
});
