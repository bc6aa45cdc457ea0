import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sendCampaignBatch, type SendNudge } from "../../../src/services/broadcasts/send";
import { emailProvider } from "../../../src/services/channels/email/providers";
import { ADMIN_TOKEN, admin, call, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { fireCron, htmlOf, outbox, rawMessage, scheduled, toBase64, waitForCampaign } from "../../support/broadcasts";
import { unsubscribeUris } from "../../support/mime";

const HTML = `<p>Hi {{NAME}}</p><a href="https://shop.example.com/a">A</a> <a href="https://shop.example.com/b">B</a>`;
const CSV = "EMAIL,NAME\nada@example.com,Ada\nbob@example.com,Bob\ncy@example.com,Cy\n";

/** Sends a three-recipient campaign; returns its id and each recipient's tracking paths. */
async function sentCampaign(panel: TestPanel) {
  const { id, sendAt } = await scheduled(panel, CSV, { source_code: toBase64(HTML) }, 125);
  await fireCron(sendAt);
  await waitForCampaign(panel, id);
  const links = new Map<string, { open: string; clicks: string[]; unsubscribe: string }>();
  for (const message of await outbox(panel)) {
    const raw = await rawMessage(panel, message.id);
    const body = htmlOf(raw);
    const paths = (kind: string) => [...body.matchAll(new RegExp(`http://127\\.0\\.0\\.1:8787(/t/${kind}/[^"]+)`, "g"))].map((m) => m[1]!.replace(/&amp;/g, "&"));
    links.set(message.to, { open: paths("o")[0]!, clicks: paths("c"), unsubscribe: /^http:\/\/127\.0\.0\.1:8787(\/t\/u\/.+)$/.exec(unsubscribeUris(raw)[0]!)![1]! });
  }
  return { id, links: (to: string) => links.get(to)! };
}

/** The counters as a scan of the campaign's messages gives them: what the aggregates must equal. */
async function scannedCounters(campaignId: string) {
  return panelData
    .prepare(
      `SELECT SUM(status = 'sent') AS sent, SUM(status = 'failed') AS failed, SUM(status = 'skipped') AS skipped, SUM(opens) AS opens,
         SUM(first_open_at IS NOT NULL) AS unique_opens, SUM(clicks) AS clicks, SUM(first_click_at IS NOT NULL) AS unique_clicks,
         SUM(bounced_at IS NOT NULL) AS bounces, SUM(unsubscribed_at IS NOT NULL) AS unsubscribes
       FROM campaign_messages WHERE campaign_id = ?`,
    )
    .bind(campaignId)
    .first();
}

const report = async (panel: TestPanel, id: string) => (await admin("GET", `/panels/${panel.id}/campaigns/${id}/report`)).body;
const recipients = async (panel: TestPanel, id: string, query: string) => (await admin("GET", `/panels/${panel.id}/campaigns/${id}/recipients?${query}`)).body;

describe("campaign report", () => {
  it("counts sends, opens, clicks, links and unsubscribes made through the tracking links, exactly, however often a send is redelivered", async () => {
    const panel = await createPanel();
    const { id, links } = await sentCampaign(panel);
    const ada = links("ada@example.com");
    const bob = links("bob@example.com");
    await call(ada.open);
    await call(ada.open);
    await call(bob.open);
    await call(ada.clicks[0]!, { redirect: "manual" });
    await call(ada.clicks[0]!, { redirect: "manual" });
    await call(ada.clicks[1]!, { redirect: "manual" });
    await call(bob.clicks[0]!, { redirect: "manual" });
    await call(links("cy@example.com").unsubscribe, { method: "POST" });
    await call(links("cy@example.com").unsubscribe, { method: "POST" });
    // The send nudge delivered again after the fact: nothing is sent or counted twice.
    const nudge: SendNudge = { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 };
    await sendCampaignBatch(env, emailProvider(env), nudge);

    const body = await report(panel, id);
    const counters = { recipients: 3, queued: 0, sent: 3, failed: 0, skipped: 0, opens: 3, unique_opens: 2, clicks: 4, unique_clicks: 2, bounces: 0, unsubscribes: 1 };
    expect(body.counters).toEqual(counters);
    const { recipients: _recipients, queued: _queued, ...scanned } = counters;
    expect(await scannedCounters(id)).toEqual(scanned);
    expect(body.rates).toEqual({ delivered: 1, unique_open: 0.6667, click_through: 0.6667, click_to_open: 1, bounce: 0, unsubscribe: 0.3333 });
    expect(body.top_links).toEqual([
      { url: "https://shop.example.com/a", clicks: 3 },
      { url: "https://shop.example.com/b", clicks: 1 },
    ]);
    // Every change is in an hour of the send; the hours add up to the counters.
    expect(body.hours.length).toBeGreaterThanOrEqual(1);
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    for (const h of body.hours) expect(h.hour % 3_600_000 === 0 && h.hour <= hour && h.hour >= hour - 3_600_000).toBe(true);
    const sum = (key: string) => body.hours.reduce((total: number, h: Record<string, number>) => total + h[key]!, 0);
    for (const key of ["sent", "opens", "unique_opens", "clicks", "unique_clicks", "unsubscribes"] as const) expect(sum(key)).toBe(counters[key]);
    // The campaign and the campaign list read the same aggregates.
    expect((await admin("GET", `/panels/${panel.id}/campaigns/${id}`)).body.counters).toEqual(counters);
    expect((await admin("GET", `/panels/${panel.id}/campaigns`)).body.campaigns[0].counters).toEqual(counters);
  });

  it("lists the recipients behind each number, a page at a time, and exports them as CSV", async () => {
    const panel = await createPanel();
    const { id, links } = await sentCampaign(panel);
    await call(links("ada@example.com").open);
    await call(links("bob@example.com").open);
    await call(links("bob@example.com").clicks[1]!, { redirect: "manual" });

    const opened = await recipients(panel, id, "filter=opened");
    expect(opened.recipients.map((r: { key: string }) => r.key)).toEqual(["ada@example.com", "bob@example.com"]);
    expect(opened.recipients[1]).toMatchObject({ address: "bob@example.com", status: "sent", opens: 1, clicks: 1 });
    expect(opened.recipients[1].first_click_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect((await recipients(panel, id, "filter=clicked")).recipients.map((r: { key: string }) => r.key)).toEqual(["bob@example.com"]);
    expect((await recipients(panel, id, "filter=unsubscribed")).recipients).toEqual([]);

    const first = await recipients(panel, id, "limit=2");
    expect(first.recipients).toHaveLength(2);
    expect(first.next).toBe(first.recipients[1].contact_id);
    const second = await recipients(panel, id, `limit=2&after=${first.next}`);
    expect(second).toMatchObject({ recipients: [{ key: "cy@example.com" }], next: null });

    const csv = await call(`/admin/v1/panels/${panel.id}/campaigns/${id}/recipients?filter=opened&format=csv`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    const lines = (await csv.text()).trim().split("\r\n");
    expect(lines[0]).toBe("contact_id,key,address,status,sent_at,opens,clicks,first_open_at,first_click_at,bounced_at,unsubscribed_at");
    expect(lines.slice(1).map((line) => line.split(",")[1])).toEqual(["ada@example.com", "bob@example.com"]);
  });

  it("names a wrong filter or page in a 400, and shows no other panel's campaign", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const { id } = await sentCampaign(panel);
    const bad = await admin("GET", `/panels/${panel.id}/campaigns/${id}/recipients?filter=liked&limit=0`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(["filter", "limit"]);
    expect((await admin("GET", `/panels/${other.id}/campaigns/${id}/report`)).status).toBe(404);
    expect((await admin("GET", `/panels/${other.id}/campaigns/${id}/recipients`)).status).toBe(404);
    expect((await admin("GET", `/panels/${panel.id}/campaigns/nope/report`)).status).toBe(404);
  });
});
