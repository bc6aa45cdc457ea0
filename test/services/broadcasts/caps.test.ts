import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { publishDueBroadcasts } from "../../../src/services/broadcasts/publish";
import { sendCampaignBatch, type SendNudge } from "../../../src/services/broadcasts/send";
import { emailProvider } from "../../../src/services/channels/email/providers";
import { enterJourneys } from "../../../src/services/journeys/engine";
import { admin, apiFor, contactsOf, countRows, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { campaign, fireCron, outbox, scheduled, waitForCampaign } from "../../support/broadcasts";
import { cartPanel, startJourney } from "../../support/journeys";
import { countSendsIfAllowed } from "../../../src/store/contact-sends";

const CSV = "EMAIL,NAME,CITY\nada@example.com,Ada,Pune\nbob@example.com,Bob,\n";

async function cappedPanel(): Promise<TestPanel> {
  const panel = await createPanel();
  const answer = await admin("PATCH", `/panels/${panel.id}`, { message_rules: { caps: [{ channel: "email", max: 1, days: 7 }] } });
  expect(answer.status).toBe(200);
  return panel;
}

async function recipients(panel: TestPanel, id: string) {
  const answer = await admin("GET", `/panels/${panel.id}/campaigns/${id}/recipients`);
  expect(answer.status).toBe(200);
  return Object.fromEntries(answer.body.recipients.map((r: any) => [r.address, { status: r.status, error: r.error }]));
}

describe("frequency caps on campaigns", () => {
  it("counts journey and campaign email against one cap: a contact the journey mailed is skipped: cap, the others are sent", async () => {
    const panel = await cappedPanel();
    await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "mail", type: "email", subject: "Your cart", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
    });
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    const ada = (await contactsOf(panel.id)).find((c) => c.attributes.EMAIL === "ada@example.com")!;
    await enterJourneys(env, panelData, [{ panelId: panel.id, journeyId: journey.id, contactId: ada.id, entryKey: "t", eventId: null, version: 1 }], Date.now());

    const { id, sendAt } = await scheduled(panel, CSV, {}, 131);
    await fireCron(sendAt);
    const done = await waitForCampaign(panel, id);
    expect(done.counters).toMatchObject({ recipients: 2, sent: 1, skipped: 1 });
    expect(await recipients(panel, id)).toEqual({
      "ada@example.com": { status: "skipped", error: "cap: at most 1 email per 7 days" },
      "bob@example.com": { status: "sent", error: null },
    });
    const mails = await outbox(panel);
    expect(mails.map((m) => `${m.to} ${m.campaign_id ? "campaign" : "journey"}`).sort()).toEqual(["ada@example.com journey", "bob@example.com campaign"]);
  });

  it("a batch redelivered and run twice at once counts each recipient once, and a second campaign within the window sends nothing", async () => {
    const panel = await cappedPanel();
    const first = await scheduled(panel, CSV, {}, 132);
    await Promise.all([publishDueBroadcasts(env, first.sendAt), publishDueBroadcasts(env, first.sendAt)]);
    await waitForCampaign(panel, first.id);
    const nudge: SendNudge = { kind: "campaign_batch", panelId: panel.id, campaignId: first.id, batch: 0 };
    const provider = emailProvider(env);
    await Promise.all([sendCampaignBatch(env, provider, nudge), sendCampaignBatch(env, provider, nudge)]);
    expect((await campaign(panel, first.id)).counters).toMatchObject({ sent: 2, skipped: 0 });
    expect(await countRows("SELECT COUNT(*) AS n FROM contact_sends WHERE panel_id = ?", panel.id)).toBe(2);

    const second = await scheduled(panel, CSV, {}, 133);
    await fireCron(second.sendAt);
    const done = await waitForCampaign(panel, second.id);
    expect(done.counters).toMatchObject({ recipients: 2, sent: 0, skipped: 2 });
    expect(await outbox(panel)).toHaveLength(2);
  });

  it("counts a batch of messages in order in one call: each sees the ones before it, a key counted before is allowed again", async () => {
    const panel = await createPanel();
    const caps = [{ channel: "email" as const, max: 2, days: 7 }];
    const now = Date.now();
    const of = { panelId: panel.id, channel: "email" as const };
    const first = await countSendsIfAllowed(panelData, of, [{ contactId: 1, key: "a" }, { contactId: 2, key: "b" }, { contactId: 1, key: "c" }, { contactId: 1, key: "d" }], caps, now);
    expect(first).toEqual([
      { allowed: true },
      { allowed: true },
      { allowed: true },
      { allowed: false, cap: caps[0], allowsAt: now + 7 * 86_400_000 },
    ]);
    // Run again (a redelivered batch): the counted keys go, the refused one stays refused, no row is added.
    expect((await countSendsIfAllowed(panelData, of, [{ contactId: 1, key: "a" }, { contactId: 1, key: "d" }, { contactId: 1, key: "c" }], caps, now + 1)).map((a) => a.allowed)).toEqual([true, false, true]);
    expect(await countRows("SELECT COUNT(*) AS n FROM contact_sends WHERE panel_id = ?", panel.id)).toBe(3);
  });
});
