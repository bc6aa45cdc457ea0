import { htmlOf } from "../../support/broadcasts";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { listOutbox } from "../../../src/store/outbox";
import { suppressAddress } from "../../../src/store/suppressions";
import { apiFor, call, createPanel, panelData } from "../../support/helpers";
import { act, cartPanel, cronAt, createWebhook, delivered, messagesOf, MINUTE, report, startJourney } from "../../support/journeys";

/** A journey: cart activity -> message on `channel` -> wait for `events` -> webhook on event (and one on timeout). */
async function messageJourney(channel: string, events: string[], version = "2.0") {
  const panel = await createPanel({ name: `Panel ${channel} ${version}` });
  const { cart } = await cartPanel(panel);
  const hook = await createWebhook(panel, { version });
  await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada", MOBILE: "+919800000001", CITY: "Pune" } });
  const message =
    channel === "email"
      ? { id: "send", type: "email", subject: "You left something", html: "<p>Hi {{NAME}}</p>", sender_name: "Shop", sender_email: "shop@example.com" }
      : { id: "send", type: channel, text: "Your cart misses you", title: "Cart" };
  const journey = await startJourney(panel, {
    name: "Cart reminder",
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: [
      message,
      { id: "wait", type: "wait_for_event", after: "send", events, within: "2d" },
      { id: "hook", type: "webhook", after: "wait", on: "event", webhook: hook.id, attributes: ["EMAIL", "CITY"], params: { Action: "reminded" } },
      { id: "late", type: "webhook", after: "wait", on: "timeout", webhook: hook.id, params: { Action: "silent" } },
    ],
  });
  await act(panel, cart, "ada@example.com");
  const [sent] = await messagesOf(panel, channel);
  return { panel, hook, journey, sent };
}

describe("message steps and their events", () => {
  it("records an sms on the outbox with its msgid; a delivered report fires the webhook with the sms fields (2.0)", async () => {
    const { panel, hook, sent } = await messageJourney("sms", ["delivered"]);
    expect(sent).toMatchObject({ channel: "sms", recipient: "+919800000001", content: { text: "Your cart misses you", title: "Cart" } });
    expect(sent.msgid).toMatch(/\.send$/);
    expect(await delivered(hook)).toEqual([]);
    const answer = await report(panel, "sms", { msgid: sent.msgid, event: "delivered", ts: "261122101500", ip_addr: "203.0.113.5", user_agent: "Gateway/1" });
    expect(answer).toMatchObject({ status: 200, body: { result: "Success" } });
    expect(await delivered(hook)).toEqual([
      {
        channel: "sms",
        event: "delivered",
        webhook_name: "CRM sync",
        msgid: sent.msgid,
        journey_name: "Cart reminder",
        custom_params: { Action: "reminded" },
        att_params: { EMAIL: "ada@example.com", CITY: "Pune" },
        udt_params: {},
        event_params: {
          foreignkey: "ada@example.com",
          ip_addr: "203.0.113.5",
          name: "Ada",
          user_agent: "Gateway/1",
          mobile: "+919800000001",
          timestamp: "2026-11-22T10:15:00",
          ts: 261122101500,
          guid: expect.any(String),
        },
      },
    ]);
    // The wait ended with the event: its timeout never fires.
    await cronAt(Date.now() + 3 * 24 * 60 * MINUTE);
    expect(await delivered(hook)).toHaveLength(1);
  });

  it("a gateway's relayed report: ts as epoch seconds, and members the route does not name (its own status) dropped", async () => {
    const { panel, hook, sent } = await messageJourney("sms", ["delivered"]);
    const zone = (await call(`/admin/v1/panels/${panel.id}`, { headers: { authorization: "Bearer test-admin-token" } }).then((r) => r.json())) as { timezone: string };
    const at = Date.UTC(2026, 10, 22, 4, 45, 0);
    const answer = await report(panel, "sms", { msgid: sent.msgid, event: "delivered", ts: at / 1000, status: "DELIVRD", operator: "Jio" });
    expect(answer).toMatchObject({ status: 200, body: { result: "Success" } });
    const [event] = await delivered(hook);
    const wall = new Intl.DateTimeFormat("en-CA", { timeZone: zone.timezone, year: "2-digit", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" })
      .formatToParts(new Date(at))
      .filter((p) => p.type !== "literal")
      .map((p) => p.value)
      .join("");
    expect(event!.event_params.ts).toBe(Number(wall));
    expect(event!.event_params).not.toHaveProperty("status");
    expect(event!.event_params).not.toHaveProperty("operator");
    // Still refused: a ts that is none of the forms.
    expect((await report(panel, "sms", { msgid: sent.msgid, event: "delivered", ts: "yesterday" })).status).toBe(400);
  });

  it("email to a suppressed or missing address is skipped, and sent once whatever the retries", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "gone@example.com" } });
    await suppressAddress(panelData, panel.id, "gone@example.com", "unsubscribe", null, 0);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "mail", type: "email", subject: "Hi {{NAME|there}}", html: "<p>x</p>", sender_name: "Shop", sender_email: "shop@example.com" }],
    });
    await act(panel, cart, "gone@example.com");
    await act(panel, cart, "fresh@example.com");
    const messages = await messagesOf(panel, "email");
    expect(messages.map((m) => [m.recipient, m.status, m.error]).sort()).toEqual([
      ["fresh@example.com", "sent", null],
      ["gone@example.com", "skipped", "the address is suppressed (unsubscribed)"],
    ]);
    const { sendJourneyEmail } = await import("../../../src/services/journeys/messages");
    const fresh = messages.find((m) => m.recipient === "fresh@example.com")!;
    const again = { msgid: fresh.msgid, panelId: panel.id, journeyId: fresh.journey_id, instanceId: "x", stepId: "mail", channel: "email" as const, contactId: 1, recipient: "fresh@example.com", content: {}, createdAt: Date.now() };
    await sendJourneyEmail(env, again, { id: "mail", type: "email", subject: "Changed", html: "<p>changed</p>", sender_name: "S", sender_email: "s@example.com" }, {}, Date.now());
    expect(await listOutbox(panelData, panel.id, 10)).toHaveLength(1);
    const eml = await (await env.FILES.get(`outbox/${panel.id}/${fresh.msgid}.eml`))!.text();
    expect(eml).toContain("Subject: Hi there");
  });

  it("a click on an sms is not what a delivered-wait waits for", async () => {
    const { panel, hook, sent } = await messageJourney("sms", ["delivered"]);
    expect((await report(panel, "sms", { msgid: sent.msgid, event: "click" })).status).toBe(200);
    expect(await delivered(hook)).toEqual([]);
  });

  it("apn in a 1.0 webhook: delivered is sent as view, without msgid, udt_params or timestamp", async () => {
    const { panel, hook, sent } = await messageJourney("apn", ["delivered", "click"], "1.0");
    expect((await report(panel, "apn", { msgid: sent.msgid, event: "view", token: "apns-token-1", ts: "261122101500" })).status).toBe(200);
    const [event] = await delivered(hook);
    expect(event).toEqual({
      channel: "apn",
      event: "view",
      webhook_name: "CRM sync",
      journey_name: "Cart reminder",
      custom_params: { Action: "reminded" },
      att_params: { EMAIL: "ada@example.com", CITY: "Pune" },
      event_params: { foreignkey: "ada@example.com", name: "Ada", token: ["apns-token-1"], token_id: null, ts: 261122101500, guid: expect.any(String) },
    });
  });

  it("bpn click in a 1.0 webhook carries linkid", async () => {
    const { panel, hook, sent } = await messageJourney("bpn", ["click"], "1.0");
    expect((await report(panel, "bpn", { msgid: sent.msgid, event: "click", linkid: 3 })).status).toBe(200);
    const [event] = await delivered(hook);
    expect(event).toMatchObject({ channel: "bpn", event: "click", event_params: { linkid: 3, token: [sent.recipient], token_id: null } });
    expect(event).not.toHaveProperty("msgid");
  });

  it("email: sent through the email provider with its msgid; an open fires the webhook with the email fields", async () => {
    const { panel, hook, sent } = await messageJourney("email", ["open", "click"]);
    expect(sent).toMatchObject({ channel: "email", status: "sent", recipient: "ada@example.com", content: { subject: "You left something", sender_email: "shop@example.com" } });
    // The default provider (outbox) keeps exactly what was sent, under the msgid.
    const eml = await env.FILES.get(`outbox/${panel.id}/${sent.msgid}.eml`);
    const raw = await eml!.text();
    expect(raw).toContain("To: ada@example.com");
    expect(raw).toContain('From: "Shop" <shop@example.com>');
    const body = htmlOf(raw);
    // Tracked as campaign mail is (test/services/journeys/engagement.test.ts): the footer naming the sender, then the pixel.
    expect(body).toMatch(/^<p>Hi Ada<\/p><div role="contentinfo"[^>]*><p[^>]*>This email was sent by Shop \(shop@example\.com\) because your address is on the mailing list of [^<]+\.<\/p><p[^>]*>Don't want these emails\? <a href="http:\/\/127\.0\.0\.1:8787\/t\/u\/[^"]+"[^>]*>Unsubscribe<\/a> with one click, or <a href="http:\/\/127\.0\.0\.1:8787\/t\/p\/[^"]+"[^>]*>choose what you receive<\/a>\.<\/p><\/div><img src="http:\/\/127\.0\.0\.1:8787\/t\/o\//);
    expect((await report(panel, "email", { msgid: sent.msgid, event: "open", user_agent: "Mail/1", ip_addr: "198.51.100.2" })).status).toBe(200);
    const [event] = await delivered(hook);
    expect(event).toMatchObject({
      channel: "email",
      event: "open",
      msgid: sent.msgid,
      event_params: { foreignkey: "ada@example.com", email: "ada@example.com", subject: "You left something", fromfield: "Shop <shop@example.com>", camp_name: "Cart reminder", tags: "", useragent: "Mail/1", ip_addr: "198.51.100.2" },
    });
  });

  it("no event within the wait: the timeout webhook fires once, whatever the cron repeats", async () => {
    const { hook } = await messageJourney("sms", ["delivered"]);
    const later = Date.now() + 2 * 24 * 60 * MINUTE + MINUTE;
    await cronAt(later);
    await cronAt(later);
    await cronAt(later + MINUTE);
    const events = await delivered(hook);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ channel: "custom_activity", custom_params: { Action: "silent" }, event_params: { activity_name: "add_to_cart" } });
  });

  it("refuses reports it cannot place", async () => {
    const { panel, sent } = await messageJourney("sms", ["delivered"]);
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
      call(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    expect((await report(panel, "sms", { msgid: "nope", event: "delivered" })).status).toBe(404);
    expect((await report(panel, "apn", { msgid: sent.msgid, event: "delivered" })).status).toBe(404);
    expect((await report(panel, "sms", { msgid: sent.msgid, event: "open" })).body.errors).toEqual([{ field: "event", message: "must be one of delivered, click for sms" }]);
    expect((await report(panel, "fax", { msgid: sent.msgid, event: "delivered" })).status).toBe(404);
    expect((await post("/v1/events/sms", { msgid: sent.msgid, event: "delivered" })).status).toBe(401);
    expect((await post("/v1/events/sms", { msgid: sent.msgid, event: "delivered" }, { authorization: `Bearer ${panel.apiKey}` })).status).toBe(200);
    const other = await createPanel();
    expect((await post(`/v1/events/sms/${panel.clientId}`, { msgid: sent.msgid, event: "delivered" }, { authorization: `Bearer ${other.apiKey}` })).status).toBe(401);
    expect((await post(`/v1/events/sms`, { msgid: sent.msgid, event: "delivered" }, { authorization: `Bearer ${other.apiKey}` })).status).toBe(404);
  });
});
