import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { publishDueBroadcasts } from "../../../src/services/broadcasts/publish";
import { sendCampaignBatch, type SendNudge } from "../../../src/services/broadcasts/send";
import { emailProvider } from "../../../src/services/channels/email/providers";
import { OutboxProvider } from "../../../src/services/channels/email/outbox";
import { TrackingSigner } from "../../../src/services/channels/email/tracking";
import { getCampaign } from "../../../src/store/campaigns/definitions";
import { publishCampaign } from "../../../src/store/campaigns/publish";
import { suppressAddress } from "../../../src/store/suppressions";
import { admin, call, countRows, createPanel, type TestPanel, panelData } from "../../support/helpers";
import { parseMessage, unsubscribeUris } from "../../support/mime";
import { campaign, fireCron, htmlOf, outbox, rawMessage, scheduled, toBase64, waitForCampaign } from "../../support/broadcasts";
import { pipelineSettled } from "../../support/activity";

const CSV = "EMAIL,NAME,CITY\nada@example.com,Ada,Pune\nbob@example.com,,\n";

describe("publishing and sending", () => {
  it("publishes at the scheduled time from the scheduled handler, not before, and sends each contact one personalised email", async () => {
    const panel = await createPanel();
    const { id, sendAt } = await scheduled(panel, CSV);
    await fireCron(sendAt - 60_000);
    expect((await campaign(panel, id)).status).toBe("scheduled");

    await fireCron(sendAt);
    const done = await waitForCampaign(panel, id);
    expect(done).toMatchObject({ status: "sent", counters: { recipients: 2, queued: 0, sent: 2, failed: 0, skipped: 0 } });

    const messages = await outbox(panel);
    expect(messages.map((m) => m.to).sort()).toEqual(["ada@example.com", "bob@example.com"]);
    const ada = messages.find((m) => m.to === "ada@example.com");
    expect(ada).toMatchObject({ channel: "email", from: "shop@example.com", subject: "Hello Ada", campaign_id: id });
    expect(messages.find((m) => m.to === "bob@example.com").subject).toBe("Hello friend");

    const raw = await rawMessage(panel, ada.id);
    expect(raw).toContain('From: "Shop" <shop@example.com>\r\n');
    expect(raw).toContain("To: ada@example.com\r\n");
    expect(unsubscribeUris(raw)).toEqual([expect.stringMatching(/^http:\/\/127\.0\.0\.1:8787\/t\/u\/[^\s<>]+$/)]);
    expect(raw).toContain("\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n");
    const html = htmlOf(raw);
    expect(html).toContain("Hello Ada, from Pune.");
    expect(htmlOf(await rawMessage(panel, messages.find((m) => m.to === "bob@example.com").id))).toContain("Hello there, from your city.");
    expect(html).not.toContain("shop.example.com");
    expect(html).toMatch(/<a href="http:\/\/127\.0\.0\.1:8787\/t\/c\/[^"]+">Sale<\/a>/);
    expect(html).toMatch(/<img src="http:\/\/127\.0\.0\.1:8787\/t\/o\/[^"]+" width="1" height="1"/);
    expect(html).toMatch(/<a href="http:\/\/127\.0\.0\.1:8787\/t\/u\/[^"]+"[^>]*>Unsubscribe<\/a>/);
    expect(html).toContain("This email was sent by Shop (shop@example.com) because your address is on the mailing list of");
    // The text alternative: merge tags filled, the link as it was written, the same unsubscribe URL as the header.
    const text = parseMessage(raw).text;
    const unsubscribe = unsubscribeUris(raw)[0]!;
    expect(text).toBe(
      "Hello Ada, from Pune.\r\n\r\nSale [https://shop.example.com/sale?x=1&y=2]\r\n\r\n--\r\n" +
        `This email was sent by Shop (shop@example.com) because your address is on the mailing list of ${panel.name}.\r\n` +
        `Don't want these emails? Unsubscribe: ${unsubscribe}\r\n` +
        `Choose what you receive: ${unsubscribe.replace("/t/u/", "/t/p/")}`,
    );
  });

  it("sends exactly once when a batch is redelivered or publish runs twice", async () => {
    const panel = await createPanel();
    const { id, sendAt } = await scheduled(panel, CSV, {}, 121);
    await Promise.all([publishDueBroadcasts(env, sendAt), publishDueBroadcasts(env, sendAt)]);
    await waitForCampaign(panel, id);
    // The same nudge delivered again, concurrently and after the fact: nothing is left to claim.
    const nudge: SendNudge = { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 };
    const provider = emailProvider(env);
    await Promise.all([sendCampaignBatch(env, provider, nudge), sendCampaignBatch(env, provider, nudge)]);
    await fireCron(sendAt + 3 * 60 * 60_000);
    expect(await outbox(panel)).toHaveLength(2);
    expect((await campaign(panel, id)).counters).toMatchObject({ recipients: 2, sent: 2 });
  });

  it("re-sends nothing when a claimed batch is retried after the consumer died, and finishes the rest", async () => {
    const panel = await createPanel();
    const { id, sendAt } = await scheduled(panel, CSV, {}, 122);
    // Publish without delivering: take the recipients as a dying consumer would (claimed, never sent).
    await panelData.prepare("UPDATE campaigns SET status = 'sending', recipients = 2, published_at = ?, updated_at = ? WHERE id = ?").bind(sendAt, sendAt, id).run();
    const members = await panelData.prepare("SELECT contact_id FROM list_members m JOIN campaigns c ON c.list_id = m.list_id WHERE c.id = ? ORDER BY contact_id").bind(id).all<{ contact_id: number }>();
    const [first, second] = members.results;
    await panelData.batch([
      panelData.prepare("INSERT INTO campaign_messages (campaign_id, contact_id, panel_id, batch, status, claim, claimed_at) VALUES (?, ?, ?, 0, 'sending', 'dead', ?)").bind(id, first!.contact_id, panel.id, sendAt),
      panelData.prepare("INSERT INTO campaign_messages (campaign_id, contact_id, panel_id, batch, status) VALUES (?, ?, ?, 0, 'queued')").bind(id, second!.contact_id, panel.id),
    ]);
    const nudge: SendNudge = { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 };
    // Within the claim's lifetime the dead claim is left alone; the queued recipient is sent.
    await sendCampaignBatch(env, emailProvider(env), nudge, sendAt + 60_000);
    expect(await outbox(panel)).toHaveLength(1);
    // Later the outbox (idempotent by message id) redoes the dead claim: still one message each.
    await sendCampaignBatch(env, emailProvider(env), nudge, sendAt + 60 * 60_000);
    await sendCampaignBatch(env, emailProvider(env), nudge, sendAt + 61 * 60_000);
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(["ada@example.com", "bob@example.com"]);
    expect((await campaign(panel, id))).toMatchObject({ status: "sent", counters: { sent: 2, queued: 0 } });
  });

  it("hands the batch back untouched when it fails before sending, and sends it on the retry", async () => {
    const panel = await createPanel();
    const { id, sendAt } = await scheduled(panel, CSV, {}, 127);
    const stored = (await getCampaign(panelData, panel.id, id))!;
    expect(await publishCampaign(panelData, stored, 100, sendAt)).toBe(2);
    const body = await env.FILES.get(stored.bodyKey);
    await env.FILES.delete(stored.bodyKey);
    const nudge: SendNudge = { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 };
    await expect(sendCampaignBatch(env, emailProvider(env), nudge)).rejects.toThrow(/missing from R2/);
    expect((await campaign(panel, id)).counters).toMatchObject({ queued: 2, sent: 0 });
    expect(await countRows("SELECT COUNT(*) AS n FROM campaign_messages WHERE campaign_id = ? AND status = 'queued' AND claim IS NULL", id)).toBe(2);
    await env.FILES.put(stored.bodyKey, await body!.text());
    await sendCampaignBatch(env, emailProvider(env), nudge);
    expect(await campaign(panel, id)).toMatchObject({ status: "sent", counters: { sent: 2, queued: 0 } });
  });

  it("skips unsubscribed and hard-bounced addresses and contacts without an email", async () => {
    const panel = await createPanel({ primary_key: "CUSTOMER_ID" });
    await suppressAddress(panelData, panel.id, "gone@example.com", "unsubscribe", null, 0);
    await suppressAddress(panelData, panel.id, "bounced@example.com", "hard_bounce", null, 0);
    const csv = "CUSTOMER_ID,EMAIL\nc1,ok@example.com\nc2,GONE@example.com\nc3,bounced@example.com\nc4,\n";
    const { id, sendAt } = await scheduled(panel, csv, {}, 123);
    await fireCron(sendAt);
    const done = await waitForCampaign(panel, id);
    expect(done.counters).toMatchObject({ recipients: 4, sent: 1, skipped: 3, queued: 0 });
    expect((await outbox(panel)).map((m) => m.to)).toEqual(["ok@example.com"]);
  });

  it("completes a campaign whose list ends up empty", async () => {
    const panel = await createPanel();
    const { id, sendAt } = await scheduled(panel, "EMAIL\nnot-an-address\n", {}, 124);
    await fireCron(sendAt);
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: 0 } });
  });
});

describe("recovery after lost nudges and crashes", () => {
  const THREE = "EMAIL,NAME\nada@example.com,Ada\nbob@example.com,Bob\ncy@example.com,Cy\n";

  it("a campaign whose nudges failed to send at publish is re-nudged by the first cron tick a minute later, and sent once", async () => {
    const panel = await createPanel();
    const { id, sendAt } = await scheduled(panel, THREE, {}, 128);
    const failing = { sendBatch: () => Promise.reject(new Error("queue down")), send: () => Promise.reject(new Error("queue down")) } as unknown as Queue;
    await expect(publishDueBroadcasts({ ...env, SENDS: failing }, sendAt)).rejects.toThrow(/queue down/);
    expect((await campaign(panel, id)).counters).toMatchObject({ recipients: 3, queued: 3 });
    await fireCron(sendAt + 30_000);
    expect((await campaign(panel, id)).counters).toMatchObject({ queued: 3 });
    await fireCron(sendAt + 61_000);
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { sent: 3, queued: 0 } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(["ada@example.com", "bob@example.com", "cy@example.com"]);
  });

  it("a batch whose consumer died mid-send (its message gone) is taken again at the first cron tick after its claim ran out, each recipient once", async () => {
    const panel = await createPanel();
    const { id } = await scheduled(panel, THREE, {}, 129);
    const stored = (await getCampaign(panelData, panel.id, id))!;
    // Published two minutes ago; the consumer claimed the batch, wrote Ada's message, and died.
    const crash = Date.now() - 2 * 60_000;
    expect(await publishCampaign(panelData, stored, 100, crash - 1000)).toBe(3);
    await panelData.prepare("UPDATE campaign_messages SET status = 'sending', claim = 'dead', claimed_at = ? WHERE campaign_id = ?").bind(crash, id).run();
    const ada = await panelData.prepare("SELECT contact_id FROM campaign_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.campaign_id = ? AND c.pk_value = 'ada@example.com'").bind(id).first<{ contact_id: number }>();
    await new OutboxProvider(async () => panelData, env.FILES).send([{ id: `${id}.${ada!.contact_id}`, panelId: panel.id, campaignId: id, from: "shop@example.com", to: "ada@example.com", subject: "Hello Ada", raw: "Subject: Hello Ada\r\n\r\nx\r\n" }], crash);
    await fireCron(Date.now());
    expect(await waitForCampaign(panel, id)).toMatchObject({ status: "sent", counters: { sent: 3, queued: 0, failed: 0 } });
    expect((await outbox(panel)).map((m) => m.to).sort()).toEqual(["ada@example.com", "bob@example.com", "cy@example.com"]);
  });
});

/** Sends a one-recipient campaign and returns the tracking URLs of its email. */
async function sentEmail(panel: TestPanel, html: string) {
  const { id, sendAt } = await scheduled(panel, "EMAIL,NAME\nada@example.com,Ada\n", { source_code: toBase64(html) }, 125);
  await fireCron(sendAt);
  await waitForCampaign(panel, id);
  const [message] = await outbox(panel);
  const raw = await rawMessage(panel, message.id);
  const body = htmlOf(raw);
  const paths = (kind: string) => [...body.matchAll(new RegExp(`http://127\\.0\\.0\\.1:8787(/t/${kind}/[^"]+)`, "g"))].map((m) => m[1]!.replace(/&amp;/g, "&"));
  const unsubscribe = /^http:\/\/127\.0\.0\.1:8787(\/t\/u\/.+)$/.exec(unsubscribeUris(raw)[0]!)![1]!;
  return { id, raw, body, open: paths("o")[0]!, clicks: paths("c"), unsubscribe };
}

describe("tracking", () => {
  it("counts opens (and unique opens) behind a 1x1 GIF", async () => {
    const panel = await createPanel();
    const email = await sentEmail(panel, "<p>Hi</p>");
    for (let i = 0; i < 2; i++) {
      const pixel = await call(email.open);
      expect(pixel.status).toBe(200);
      expect(pixel.headers.get("content-type")).toBe("image/gif");
      expect(new Uint8Array(await pixel.arrayBuffer()).slice(0, 6)).toEqual(new TextEncoder().encode("GIF89a"));
    }
    expect((await campaign(panel, email.id)).counters).toMatchObject({ opens: 2, unique_opens: 1 });
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'email' AND name = 'open'", panel.id)).toBe(2);
  });

  it("redirects a click to the link that was in the email, and counts it", async () => {
    const panel = await createPanel();
    const email = await sentEmail(panel, `<a href="https://shop.example.com/a?x=1&amp;y=2">A</a> <a href='https://shop.example.com/b'>B</a> <a href="mailto:x@example.com">mail</a>`);
    expect(email.clicks).toHaveLength(2);
    expect(email.body).toContain('href="mailto:x@example.com"');
    const first = await call(email.clicks[0]!, { redirect: "manual" });
    expect(first.status).toBe(302);
    expect(first.headers.get("location")).toBe("https://shop.example.com/a?x=1&y=2");
    expect((await call(email.clicks[1]!, { redirect: "manual" })).headers.get("location")).toBe("https://shop.example.com/b");
    expect((await campaign(panel, email.id)).counters).toMatchObject({ clicks: 2, unique_clicks: 1 });
    await pipelineSettled(panel.id);
    const event = await panelData.prepare("SELECT params AS detail FROM events WHERE panel_id = ? AND channel = 'email' AND name = 'click' ORDER BY id LIMIT 1").bind(panel.id).first<{ detail: string }>();
    expect(JSON.parse(event!.detail).url).toMatch(/^https:\/\/shop\.example\.com\//);
  });

  it("answers HEAD on the pixel, a link and the unsubscribe link as GET would, recording nothing", async () => {
    const panel = await createPanel();
    const email = await sentEmail(panel, `<a href="https://shop.example.com/a">A</a>`);
    const pixel = await call(email.open, { method: "HEAD" });
    expect([pixel.status, pixel.headers.get("content-type"), await pixel.text()]).toEqual([200, "image/gif", ""]);
    const click = await call(email.clicks[0]!, { method: "HEAD", redirect: "manual" });
    expect([click.status, click.headers.get("location")]).toEqual([302, "https://shop.example.com/a"]);
    const unsubscribe = await call(email.unsubscribe, { method: "HEAD" });
    expect([unsubscribe.status, unsubscribe.headers.get("content-type"), await unsubscribe.text()]).toEqual([200, "text/html; charset=utf-8", ""]);
    expect((await call("/t/c/nonsense", { method: "HEAD" })).status).toBe(404);
    expect((await campaign(panel, email.id)).counters).toMatchObject({ opens: 0, clicks: 0, unsubscribes: 0 });
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'email'", panel.id)).toBe(0);
  });

  it("is no open redirect: a forged or altered token is refused and counts nothing", async () => {
    const panel = await createPanel();
    const email = await sentEmail(panel, `<a href="https://shop.example.com/a">A</a>`);
    const token = email.clicks[0]!.split("/").pop()!;
    const flipped = (at: number) => token.slice(0, at) + (token[at] === "A" ? "B" : "A") + token.slice(at + 1);
    const evil = flipped(token.length - 3);
    for (const forged of [evil, flipped(2), `${token}.${token}`, "nonsense", token.slice(0, 22)]) {
      const response = await call(`/t/c/${forged}`, { redirect: "manual" });
      expect(response.status).toBe(404);
      expect(response.headers.get("location")).toBeNull();
    }
    // An open token is not a click token.
    expect((await call(`/t/c/${email.open.split("/").pop()}`, { redirect: "manual" })).status).toBe(404);
    await call(`/t/o/${evil}`);
    expect((await campaign(panel, email.id)).counters).toMatchObject({ clicks: 0, opens: 0 });
  });

  it("keeps tokens, campaigns and the outbox to their panel", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const email = await sentEmail(panel, "<p>Hi</p>");
    const [message] = await outbox(panel);
    const contactId = Number(message.id.split(".")[1]);
    // A genuine signature naming another panel finds no message there, and counts nothing.
    const signer = new TrackingSigner(env.SECRETS_KEY);
    await call(`/t/o/${await signer.sign({ kind: "open", panelId: other.id, campaignId: email.id, contactId })}`);
    const redirect = await call(`/t/c/${await signer.sign({ kind: "click", panelId: other.id, campaignId: email.id, contactId, url: "https://x.example/" })}`, { redirect: "manual" });
    expect(redirect.status).toBe(302); // the link was signed by us, so following it is safe
    expect((await campaign(panel, email.id)).counters).toMatchObject({ opens: 0, clicks: 0 });
    await pipelineSettled(panel.id);
    await pipelineSettled(other.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE channel = 'email' AND panel_id IN (?, ?)", panel.id, other.id)).toBe(0);
    // The admin routes see the campaign and its messages only under their own panel.
    expect((await admin("GET", `/panels/${other.id}/campaigns/${email.id}`)).status).toBe(404);
    expect(await outbox(other)).toEqual([]);
    expect((await admin("GET", `/panels/${other.id}/outbox/${encodeURIComponent(message.id)}`)).status).toBe(404);
  });
});

describe("unsubscribe", () => {
  it("shows a confirmation page on GET, unsubscribes on POST, and suppresses later campaigns", async () => {
    const panel = await createPanel();
    const email = await sentEmail(panel, "<p>Hi {{UNSUBSCRIBE}}</p>");
    expect(email.body).toContain(`<p>Hi http://127.0.0.1:8787${email.unsubscribe}</p>`);
    const page = await call(email.unsubscribe);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post">');
    expect((await campaign(panel, email.id)).counters.unsubscribes).toBe(0);

    // The RFC 8058 one-click POST a mail client sends.
    const oneClick = await call(email.unsubscribe, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    expect(oneClick.status).toBe(200);
    await call(email.unsubscribe, { method: "POST" });
    expect((await campaign(panel, email.id)).counters.unsubscribes).toBe(1);
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'email' AND name = 'unsubscribe'", panel.id)).toBe(1);

    const { id, sendAt } = await scheduled(panel, "EMAIL\nada@example.com\nnew@example.com\n", {}, 126);
    await fireCron(sendAt);
    expect((await waitForCampaign(panel, id)).counters).toMatchObject({ sent: 1, skipped: 1 });
  });

  it("names the sender on every state of the page: asked, done, already done, subscribed again; a bounced address is only told why", async () => {
    const panel = await createPanel({ name: "Fern & Co" });
    const email = await sentEmail(panel, "<p>Hi</p>");
    const page = async (init?: RequestInit) => {
      const response = await call(email.unsubscribe, init);
      expect([response.status, response.headers.get("content-type"), response.headers.get("cache-control")]).toEqual([200, "text/html; charset=utf-8", "no-store, private"]);
      const html = await response.text();
      return { html, h1: /<h1>([^<]*)<\/h1>/.exec(html)![1]!, text: html.replace(/<style>[^]*?<\/style>/, "").replace(/<[^>]+>/g, " ").replace(/\s+/g, " ") };
    };
    const post = (body: string) => page({ method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body });

    const asked = await page();
    expect(asked.html).toMatch(/^<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">/);
    expect(asked.h1).toBe("Stop emails from Fern &amp; Co?");
    expect(asked.text).toContain("These emails come from Shop (shop@example.com), sent to ad•@example.com because the address is on the mailing list of Fern &amp; Co.");
    expect(asked.html).not.toContain("ada@example.com");
    expect(asked.html).toContain('<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>');
    expect(asked.html).not.toContain("<script");

    const done = await post("List-Unsubscribe=One-Click");
    expect(done.h1).toBe("You are unsubscribed");
    expect(done.text).toContain("Done: Fern &amp; Co will not send marketing email to ad•@example.com any more.");
    expect(done.html).toContain('<input type="hidden" name="action" value="resubscribe">');
    expect((await page()).text).toContain("This address was already unsubscribed");
    expect((await post("List-Unsubscribe=One-Click")).text).toContain("This address was already unsubscribed");
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ?", panel.id)).toBe(1);

    const back = await post("action=resubscribe");
    expect(back.h1).toBe("You are subscribed again");
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ?", panel.id)).toBe(0);
    expect((await page()).h1).toBe("Stop emails from Fern &amp; Co?");

    // A bounce is not the recipient's choice: the page says why and offers nothing to undo.
    await suppressAddress(panelData, panel.id, "ada@example.com", "hard_bounce", null, Date.now());
    const bounced = await page();
    expect(bounced.h1).toBe("No email goes to this address");
    expect(bounced.html).not.toContain("<form");
    await post("action=resubscribe");
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ? AND reason = 'hard_bounce'", panel.id)).toBe(1);
  });

  it("refuses a forged unsubscribe token", async () => {
    const response = await call("/t/u/abc.def", { method: "POST" });
    expect(response.status).toBe(404);
  });
});
