import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createExecutionContext } from "cloudflare:test";
import { TrackingSigner } from "../../../src/services/channels/email/tracking";
import { routeRequest } from "../../../src/http/router";
import { enterListEntries } from "../../../src/services/journeys/list-entries";
import { isAddressSuppressed } from "../../../src/store/suppressions";
import { eventually, pipelineSettled } from "../../support/activity";
import { parseMessage, unsubscribeUris } from "../../support/mime";
import { verifiedSenderDomain } from "../../support/dns";
import { htmlOf } from "../../support/broadcasts";
import { apiFor, call, countRows, createPanel, receiver, type TestPanel, PUBLIC_HTTPS, panelData } from "../../support/helpers";
import { act, addMembersQuietly, cartPanel, createWebhook, delivered, messagesOf, startJourney } from "../../support/journeys";
import { signedSns } from "../../support/sns";

/** A journey: cart activity -> tracked email -> wait for `events` -> webhook on event. */
async function emailJourney(events: string[], html = '<p>Hi {{NAME}}, <a href="https://shop.example.com/cart?id=7&amp;ref=mail">your cart</a></p>') {
  const panel = await createPanel();
  const { cart } = await cartPanel(panel);
  const hook = await createWebhook(panel);
  await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada", CITY: "Pune" } });
  await startJourney(panel, {
    name: "Cart reminder",
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: [
      { id: "mail", type: "email", subject: "You left something", html, sender_name: "Shop", sender_email: "shop@example.com" },
      { id: "wait", type: "wait_for_event", after: "mail", events, within: "2d" },
      { id: "hook", type: "webhook", after: "wait", on: "event", webhook: hook.id, attributes: ["EMAIL", "CITY"], params: { Action: "reminded" } },
    ],
  });
  await act(panel, cart, "ada@example.com");
  const [sent] = await messagesOf(panel, "email");
  return { panel, cart, hook, sent, email: await sentEmail(panel, sent.msgid) };
}

/** The tracking paths found in the email as the provider (the outbox) keeps it. */
async function sentEmail(panel: TestPanel, msgid: string) {
  const raw = await (await env.FILES.get(`outbox/${panel.id}/${msgid}.eml`))!.text();
  const body = htmlOf(raw);
  const paths = (kind: string) => [...body.matchAll(new RegExp(`http://127\\.0\\.0\\.1:8787(/t/${kind}/[^"]+)`, "g"))].map((m) => m[1]!);
  const unsubscribe = /^http:\/\/127\.0\.0\.1:8787(\/t\/u\/.+)$/.exec(unsubscribeUris(raw)[0] ?? "")?.[1];
  return { raw, body, open: paths("o")[0]!, clicks: paths("c"), unsubscribe: unsubscribe! };
}

/** Waits until the pipeline is done with every email event of the message (at least `count`). */
async function processed(panel: TestPanel, msgid: string, count = 1) {
  await eventually(async () => {
    await pipelineSettled(panel.id);
    const { results } = await panelData.prepare("SELECT id FROM events WHERE panel_id = ? AND channel = 'email' AND msgid = ?").bind(panel.id, msgid).all();
    return results.length >= count ? true : undefined;
  });
}

async function emailEvents(panel: TestPanel) {
  const { results } = await panelData.prepare("SELECT name, msgid, journey_id, campaign_id, source, params FROM events WHERE panel_id = ? AND channel = 'email' ORDER BY id")
    .bind(panel.id)
    .all<{ name: string; msgid: string; journey_id: string; campaign_id: string | null; source: string; params: string }>();
  return results.map((r) => ({ ...r, params: JSON.parse(r.params) as Record<string, unknown> }));
}

/**
 * A token with one bit of its sealed payload flipped (`at` counts from the end when negative):
 * under AES-CTR the flip lands on the same bit of the payload, exactly the edit an attacker
 * who guessed the payload would make, so only the SIV check can refuse it.
 */
function tampered(token: string, at: number): string {
  const bytes = Uint8Array.from(atob(token.replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(token.length / 4) * 4, "=")), (c) => c.charCodeAt(0));
  bytes[at < 0 ? bytes.length + at : at]! ^= 0x04;
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const reader = { "user-agent": "Mail/2.1", "cf-connecting-ip": "198.51.100.7" };

describe("journey email tracking", () => {
  it("is sent with the open pixel, rewritten links and a one-click unsubscribe link", async () => {
    const { email } = await emailJourney(["open"]);
    expect(email.body).toContain("<p>Hi Ada, <a href=\"http://127.0.0.1:8787/t/c/");
    expect(email.body).not.toContain("https://shop.example.com");
    expect(email.clicks).toHaveLength(1);
    expect(email.body).toContain(`<img src="http://127.0.0.1:8787${email.open}" width="1" height="1"`);
    expect(email.body).toContain(`<a href="http://127.0.0.1:8787${email.unsubscribe}" style="color:#1a56b8;text-decoration:underline">Unsubscribe</a>`);
    // The text alternative, made from the step's HTML: the link as written, the footer naming the sender.
    const text = parseMessage(email.raw).text;
    expect(text).toContain("Hi Ada, your cart [https://shop.example.com/cart?id=7&ref=mail]");
    expect(text).toContain(`This email was sent by Shop (shop@example.com) because your address is on the mailing list of`);
    expect(text).toContain(`Unsubscribe: http://127.0.0.1:8787${email.unsubscribe}`);
    expect(email.raw).toContain("\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n");
    expect(email.raw).not.toContain("mailto:");
  });

  it("an open of the pixel ends the wait and fires the webhook with the email fields and the msgid", async () => {
    const { panel, hook, sent, email } = await emailJourney(["open"]);
    expect(await delivered(hook)).toEqual([]);
    const pixel = await call(email.open, { headers: reader });
    expect(pixel.status).toBe(200);
    expect(pixel.headers.get("content-type")).toBe("image/gif");
    await processed(panel, sent.msgid);
    const events = await delivered(hook);
    expect(events).toEqual([
      {
        channel: "email",
        event: "open",
        webhook_name: "CRM sync",
        msgid: sent.msgid,
        journey_name: "Cart reminder",
        custom_params: { Action: "reminded" },
        att_params: { EMAIL: "ada@example.com", CITY: "Pune" },
        udt_params: {},
        event_params: {
          foreignkey: "ada@example.com",
          ip_addr: "198.51.100.7",
          email: "ada@example.com",
          subject: "You left something",
          fromfield: "Shop <shop@example.com>",
          camp_name: "Cart reminder",
          tags: "",
          useragent: "Mail/2.1",
          timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d$/),
          ts: expect.any(Number),
          guid: expect.any(String),
        },
      },
    ]);
    // The stored event is the one `POST /v1/events/email` would record: channel, name, msgid, journey.
    const [stored] = await emailEvents(panel);
    expect(stored).toMatchObject({ name: "open", msgid: sent.msgid, journey_id: sent.journey_id, campaign_id: null, source: "tracking" });

    // Every open is recorded, as campaign opens are; the wait already ended, so no second webhook.
    await call(email.open);
    await processed(panel, sent.msgid, 2);
    expect((await emailEvents(panel)).map((e) => e.name)).toEqual(["open", "open"]);
    expect(await delivered(hook)).toHaveLength(1);
  });

  it("a click redirects to the link in the email and fires the webhook with the clicked url; an open does not end a click wait", async () => {
    const { panel, hook, sent, email } = await emailJourney(["click"]);
    await call(email.open);
    await processed(panel, sent.msgid);
    expect(await delivered(hook)).toEqual([]);

    const click = await call(email.clicks[0]!, { redirect: "manual", headers: reader });
    expect(click.status).toBe(302);
    expect(click.headers.get("location")).toBe("https://shop.example.com/cart?id=7&ref=mail");
    await processed(panel, sent.msgid, 2);
    const [event] = await delivered(hook);
    expect(event).toMatchObject({
      channel: "email",
      event: "click",
      msgid: sent.msgid,
      journey_name: "Cart reminder",
      event_params: { email: "ada@example.com", url: "https://shop.example.com/cart?id=7&ref=mail", useragent: "Mail/2.1", ip_addr: "198.51.100.7" },
    });
  });

  it("a forged or tampered token records nothing: the pixel is still served, a click is a 404", async () => {
    const { panel, hook, sent, email } = await emailJourney(["open", "click"]);
    const openToken = email.open.split("/").pop()!;
    const clickToken = email.clicks[0]!.split("/").pop()!;
    // Another message of the panel, another link, a mangled signature, an open token used as a click.
    const otherMessage = tampered(openToken, -2);
    const evilLink = tampered(clickToken, -6);
    for (const token of [otherMessage, tampered(openToken, 3), "nonsense"]) {
      const pixel = await call(`/t/o/${token}`);
      expect(pixel.status).toBe(200);
      expect(pixel.headers.get("content-type")).toBe("image/gif");
    }
    for (const token of [evilLink, openToken, `${clickToken}x`]) {
      const response = await call(`/t/c/${token}`, { redirect: "manual" });
      expect(response.status).toBe(404);
      expect(response.headers.get("location")).toBeNull();
    }
    expect((await call(`/t/u/${tampered(email.unsubscribe.split("/").pop()!, -1)}`, { method: "POST" })).status).toBe(404);
    // A genuine signature naming the message under another panel finds nothing there.
    const other = await createPanel();
    const signer = new TrackingSigner(env.SECRETS_KEY);
    await call(`/t/o/${await signer.sign({ kind: "open", panelId: other.id, msgid: sent.msgid })}`);
    expect((await call(`/t/u/${await signer.sign({ kind: "unsubscribe", panelId: other.id, msgid: sent.msgid })}`, { method: "POST" })).status).toBe(404);

    expect(await emailEvents(panel)).toEqual([]);
    expect(await emailEvents(other)).toEqual([]);
    expect(await delivered(hook)).toEqual([]);
    const { n } = (await panelData.prepare("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id IN (?, ?)").bind(panel.id, other.id).first<{ n: number }>())!;
    expect(n).toBe(0);
  });

  it("unsubscribing through the email suppresses the address in the panel; a later journey email to it is skipped", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "mail", type: "email", subject: "Hi", html: "<p>Hi {{UNSUBSCRIBE}}</p>", text: "Hello {{EMAIL}}, leave at {{UNSUBSCRIBE}}", sender_name: "Shop", sender_email: "shop@example.com" },
      ],
    });
    await act(panel, cart, "Ada@Example.com");
    const [first] = await messagesOf(panel, "email");
    const email = await sentEmail(panel, first.msgid);
    expect(email.body).toContain(`<p>Hi http://127.0.0.1:8787${email.unsubscribe}</p>`);
    // The step's own text part, as given, with its {{UNSUBSCRIBE}} filled (so no footer is added).
    expect(parseMessage(email.raw).text).toBe(`Hello ada@example.com, leave at http://127.0.0.1:8787${email.unsubscribe}`);

    // GET shows the confirmation page only (link scanners follow GETs).
    const page = await call(email.unsubscribe);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post">');
    expect(await isAddressSuppressed(panelData, panel.id, "ada@example.com")).toBe(false);

    // The RFC 8058 one-click POST of a mail client, then the page's button.
    const oneClick = await call(email.unsubscribe, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "List-Unsubscribe=One-Click" });
    expect(oneClick.status).toBe(200);
    expect((await call(email.unsubscribe, { method: "POST" })).status).toBe(200);
    const suppressed = await panelData.prepare("SELECT address, reason, campaign_id FROM email_suppressions WHERE panel_id = ?").bind(panel.id).all();
    expect(suppressed.results).toEqual([{ address: "ada@example.com", reason: "unsubscribe", campaign_id: null }]);
    await processed(panel, first.msgid);
    expect((await emailEvents(panel)).map((e) => [e.name, e.msgid, e.journey_id])).toEqual([["unsubscribe", first.msgid, first.journey_id]]);

    // The instance has ended (its only step ran): the next activity enters it again, and the mail is skipped.
    await act(panel, cart, "ada@example.com");
    const messages = await messagesOf(panel, "email");
    expect(messages).toHaveLength(2);
    expect(messages.find((m) => m.msgid !== first.msgid)).toMatchObject({ status: "skipped", error: "the address is suppressed (unsubscribed)" });
  });
});

/** A journey email to ada@example.com sent through SES (a local stand-in), which names it `sesMessageId`. */
async function sentThroughSes(sesMessageId: string) {
  const bucket = receiver.bucket("ses");
  await receiver.script(bucket, [{ status: 200, body: JSON.stringify({ MessageId: sesMessageId }) }]);
  const sesEnv = { ...env, EMAIL_PROVIDER: "ses", PUBLIC_BASE_URL: PUBLIC_HTTPS, SES_ENDPOINT: receiver.hookUrl(bucket), SES_ACCESS_KEY_ID: "a", SES_SECRET_ACCESS_KEY: "b", SES_SNS_TOKEN: "sns-secret-token" };
  const panel = await createPanel();
  await verifiedSenderDomain(panel.id);
  const vip = (await apiFor(panel)("lists", "add", { listname: "VIP" })).body.listid;
  await startJourney(panel, {
    trigger: { type: "list", listid: vip },
    steps: [{ id: "mail", type: "email", subject: "Welcome", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
  });
  await addMembersQuietly(panel, vip, ["ada@example.com"]);
  // Entered with the SES provider (the queue's consumer would use the test env's outbox).
  expect(await enterListEntries(sesEnv, panel.id, Date.now())).toBe(1);
  expect(await receiver.requests(bucket)).toHaveLength(1);
  const [sent] = await messagesOf(panel, "email");
  expect(sent).toMatchObject({ status: "sent", recipient: "ada@example.com" });
  return { panel, sesEnv, sent };
}

describe("journey email bounces and complaints reported by SES", () => {
  it("a bounce finds the journey email by SES's message id: a hard one suppresses the address; each kind records one event with the msgid", async () => {
    const { panel, sesEnv, sent } = await sentThroughSes("ses-journey-1");

    const notify = async (messageId: string, bounceType = "Permanent") =>
      routeRequest(
        new Request("https://api.test/hooks/email/ses/sns-secret-token", {
          method: "POST",
          body: JSON.stringify(
            await signedSns({
              Type: "Notification",
              Message: JSON.stringify({ notificationType: "Bounce", mail: { messageId }, bounce: { bounceType, bounceSubType: "General", bouncedRecipients: [{ emailAddress: "Ada@Example.com" }] } }),
            }),
          ),
        }),
        sesEnv,
        createExecutionContext(),
      );
    expect((await notify("ses-unknown")).status).toBe(200);
    expect(await isAddressSuppressed(panelData, panel.id, "ada@example.com")).toBe(false);
    // A transient bounce records its event and suppresses nothing.
    expect((await notify("ses-journey-1", "Transient")).status).toBe(200);
    expect(await isAddressSuppressed(panelData, panel.id, "ada@example.com")).toBe(false);
    expect((await notify("ses-journey-1")).status).toBe(200);
    expect((await notify("ses-journey-1")).status).toBe(200);
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ? AND address = 'ada@example.com' AND reason = 'hard_bounce'", panel.id)).toBe(1);
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'email' AND name = 'bounce' AND msgid = ?", panel.id, sent.msgid)).toBe(2);
  });

  it("a complaint (marked as spam) finds the journey email by SES's message id, suppresses the address and records one complaint event with the msgid", async () => {
    const { panel, sesEnv, sent } = await sentThroughSes("ses-journey-complaint");

    // The shape SNS posts for an SES complaint notification.
    const complaint = {
      Type: "Notification",
      MessageId: "5d6e7f80-1a2b-5c3d-8e9f-0a1b2c3d4e5f",
      TopicArn: "arn:aws:sns:eu-west-1:123456789012:ses-feedback",
      Message: JSON.stringify({
        notificationType: "Complaint",
        complaint: { feedbackId: "0102017c-complaint", complainedRecipients: [{ emailAddress: "Ada@Example.com" }], timestamp: "2026-01-02T03:04:05.000Z", complaintFeedbackType: "abuse" },
        mail: { timestamp: "2026-01-02T03:00:00.000Z", source: "shop@example.com", messageId: "ses-journey-complaint", destination: ["ada@example.com"] },
      }),
    };
    // Signed once: SNS repeats the same message, signature and all.
    const signed = JSON.stringify(await signedSns(complaint, { version: "2" }));
    const notify = () => routeRequest(new Request("https://api.test/hooks/email/ses/sns-secret-token", { method: "POST", body: signed }), sesEnv, createExecutionContext());
    expect((await notify()).status).toBe(200);
    expect((await notify()).status).toBe(200);
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ? AND address = 'ada@example.com' AND reason = 'complaint'", panel.id)).toBe(1);
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'email' AND name = 'complaint' AND msgid = ?", panel.id, sent.msgid)).toBe(1);
  });
});
