import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { publishDueBroadcasts } from "../../../src/services/broadcasts/publish";
import { sendCampaignBatch, type SendNudge } from "../../../src/services/broadcasts/send";
import { emailProvider } from "../../../src/services/channels/email/providers";
import { unsentBatches } from "../../../src/store/campaigns/sends";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { campaign, outbox } from "../../support/broadcasts";

/** A fixed clock: Tuesday 2026-11-24 12:00 UTC (17:30 in Kolkata, 07:00 in New York). */
const NOON = Date.UTC(2026, 10, 24, 12, 0);

/** The SENDS queue of a publish whose batches the test sends itself, at its own times. */
const quietSends = { ...env, SENDS: { send: async () => {}, sendBatch: async () => {} } as unknown as Queue } as Env;

async function shop(rules?: unknown): Promise<{ panel: TestPanel; list: number }> {
  const panel = await createPanel({ timezone: "Asia/Kolkata" });
  expect((await admin("PATCH", `/panels/${panel.id}`, { unknown_attributes: "create", ...(rules ? { message_rules: rules } : {}) })).status).toBe(200);
  const api = apiFor(panel);
  const list = (await api("lists", "add", { listname: "Readers" })).body.listid as number;
  await api("contact", "add", { data: { EMAIL: "ny@example.com", TIMEZONE: "America/New_York" }, listid: list });
  await api("contact", "add", { data: { EMAIL: "in@example.com" }, listid: list });
  return { panel, list };
}

/** A campaign to the list, published at `at` (its time rewound there) with its batches left to the test. */
async function published(panel: TestPanel, list: number, at: number, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await admin("POST", `/panels/${panel.id}/campaigns`, {
    name: "Morning news",
    subject: "Good morning",
    html: "<p>Hi</p>",
    sender_name: "Shop",
    sender_email: "shop@example.com",
    audience: { lists: [list] },
    ...extra,
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  await panelData.prepare("UPDATE campaigns SET send_at = ? WHERE id = ?").bind(at, created.body.id).run();
  await publishDueBroadcasts(quietSends, at);
  return created.body.id as string;
}

async function sendAt(panel: TestPanel, id: string, now: number) {
  const nudge: SendNudge = { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 };
  await sendCampaignBatch(env, emailProvider(env), nudge, now);
}

const sentTo = async (panel: TestPanel) => (await outbox(panel)).map((m) => m.to).sort();

describe("send at local time", () => {
  it("sends each recipient at 10:00 of the send date on its own clock (TIMEZONE, else the panel's zone), at once where it has passed, each once", async () => {
    const { panel, list } = await shop();
    await apiFor(panel)("contact", "add", { data: { EMAIL: "hnl@example.com", TIMEZONE: "Pacific/Honolulu" }, listid: list });
    const id = await published(panel, list, NOON, { local_time: "10:00" });
    expect((await campaign(panel, id)).local_time).toBe("10:00");

    // The send date is 2026-11-24 (Kolkata's): its 10:00 has passed in Kolkata (04:30Z), is 15:00Z
    // in New York and 20:00Z in Honolulu.
    await sendAt(panel, id, NOON);
    expect(await sentTo(panel)).toEqual(["in@example.com"]);
    expect(await unsentBatches(panelData, id, NOON + 60_000, -1, 1000)).toEqual([]);
    const nyTen = Date.UTC(2026, 10, 24, 15, 0);
    expect(await unsentBatches(panelData, id, nyTen, -1, 1000)).toEqual([0]);

    await sendAt(panel, id, nyTen - 60_000);
    expect(await sentTo(panel)).toEqual(["in@example.com"]);
    await Promise.all([sendAt(panel, id, nyTen), sendAt(panel, id, nyTen)]);
    expect(await sentTo(panel)).toEqual(["in@example.com", "ny@example.com"]);
    expect((await campaign(panel, id)).status).toBe("sending");

    const hnlTen = Date.UTC(2026, 10, 24, 20, 0);
    await sendAt(panel, id, hnlTen);
    await sendAt(panel, id, hnlTen + 60_000);
    expect(await sentTo(panel)).toEqual(["hnl@example.com", "in@example.com", "ny@example.com"]);
    expect(await campaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: 3, sent: 3 } });
  });

  it("refuses a local_time that is not HH:MM, naming it", async () => {
    const { panel, list } = await shop();
    const answer = await admin("POST", `/panels/${panel.id}/campaigns`, {
      name: "x",
      subject: "x",
      html: "<p>x</p>",
      sender_name: "Shop",
      sender_email: "shop@example.com",
      audience: { lists: [list] },
      local_time: "24:00",
    });
    expect(answer.status).toBe(400);
    expect(answer.body.errors).toEqual([{ field: "local_time", message: "must be a time of day, HH:MM (00:00 to 23:59)" }]);
  });
});

describe("quiet hours on campaigns", () => {
  it("defers a recipient in the channel's quiet hours on its clock to their end, not dropping it", async () => {
    const { panel, list } = await shop({ quiet_hours: [{ channel: "email", from: "21:00", to: "09:00" }] });
    // 18:00Z: 23:30 in Kolkata (quiet until 09:00 = 03:30Z), 13:00 in New York.
    const evening = Date.UTC(2026, 10, 24, 18, 0);
    const id = await published(panel, list, evening);
    await sendAt(panel, id, evening);
    expect(await sentTo(panel)).toEqual(["ny@example.com"]);
    const morning = Date.UTC(2026, 10, 25, 3, 30);
    expect(await unsentBatches(panelData, id, morning - 60_000, -1, 1000)).toEqual([]);
    await sendAt(panel, id, morning);
    expect(await sentTo(panel)).toEqual(["in@example.com", "ny@example.com"]);
    expect(await campaign(panel, id)).toMatchObject({ status: "sent", counters: { sent: 2, skipped: 0 } });
  });
});
