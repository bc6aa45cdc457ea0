import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { admin, createPanel, receiver } from "../../support/helpers";
import { advance, createWebhook, deliveries, drive, eventObject, eventsOf, numbersOf, payloadOf, queue, range } from "../../support/webhooks";

describe("webhook delivery", () => {
  it("posts form-encoded data keyed by the panel name, with Basic auth and a batch id", async () => {
    const panel = await createPanel({ name: "Acme Shop", timezone: "Asia/Kolkata" });
    const hook = await createWebhook(panel, { username: "crm", password: "s3cret:pa ss" });
    await queue(hook, range(0, 100).map((n) => eventObject(n, { event_params: { foreignkey: `user${n}@example.com`, ts: 261122093000 } })));
    await drive(hook.id);

    const [request, ...more] = await deliveries(hook.bucket);
    expect(more).toEqual([]);
    expect(request!.method).toBe("POST");
    expect(request!.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(request!.headers.authorization).toBe(`Basic ${btoa("crm:s3cret:pa ss")}`);
    expect(request!.headers["x-webhook-batch-id"]).toMatch(/^bat_/);
    expect(request!.headers["webhook-signature"]).toBeUndefined();
    expect([...new URLSearchParams(request!.body).keys()]).toEqual(["data"]);
    const payload = payloadOf(request!);
    expect(Object.keys(payload)).toEqual(["Acme Shop"]);
    expect(payload["Acme Shop"]).toHaveLength(100);
    expect(payload["Acme Shop"]![7]).toEqual({
      channel: "email",
      event: "open",
      webhook_name: "CRM sync",
      msgid: "m-7",
      journey_name: "Cart reminder",
      custom_params: { n: 7 },
      att_params: { EMAIL: "user7@example.com", CITY: "Pune" },
      udt_params: {},
      event_params: {
        foreignkey: "user7@example.com",
        timestamp: "2026-11-22T09:30:00",
        ts: 261122093000,
        guid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      },
    });
    const guids = new Set(payload["Acme Shop"]!.map((e) => e.event_params.guid));
    expect(guids.size).toBe(100);

    const webhook = await admin("GET", hook.path);
    expect(webhook.body).toMatchObject({ state: "operational", backlog: 0, in_flight: null });
    const log = await admin("GET", `${hook.path}/deliveries`);
    expect(log.body.deliveries[0]).toMatchObject({ kind: "delivery", batch_id: request!.headers["x-webhook-batch-id"], events: 100, status: 200, outcome: "delivered", response: "ok" });
  });

  it("cuts batches at 100 events and sends a partial batch when the 5 s window closes", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    await queue(hook, range(0, 150).map((n) => eventObject(n)));
    await queue(hook, range(150, 250).map((n) => eventObject(n)));
    await drive(hook.id);
    let received = await deliveries(hook.bucket);
    expect(received.map((r) => eventsOf(r).length)).toEqual([100, 100]);
    expect((await admin("GET", hook.path)).body.backlog).toBe(50);

    await advance(hook.id, 5_000);
    await drive(hook.id);
    received = await deliveries(hook.bucket);
    expect(received.map((r) => eventsOf(r).length)).toEqual([100, 100, 50]);
    expect(numbersOf(received)).toEqual(range(0, 250));
    expect((await admin("GET", hook.path)).body.backlog).toBe(0);
  });

  it("cuts batches at 256 KB of body and keeps the order across them", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    const bulky = (n: number) => eventObject(n, { att_params: { EMAIL: `user${n}@example.com`, NOTES: "x".repeat(20_000 + n * 37) } });
    await queue(hook, range(0, 40).map(bulky));
    await advance(hook.id, 5_000);
    await drive(hook.id);
    const received = await deliveries(hook.bucket);
    expect(received.length).toBeGreaterThan(2);
    for (const request of received) expect(new TextEncoder().encode(request.body).byteLength).toBeLessThanOrEqual(256 * 1024);
    // Each batch but the last is full: one more event would not have fit.
    for (const request of received.slice(0, -1)) expect(request.body.length).toBeGreaterThan(256 * 1024 - 25_000);
    expect(numbersOf(received)).toEqual(range(0, 40));
  });

  it("signs with Standard Webhooks headers that a receiver's library verifies", async () => {
    const secret = `whsec_${btoa("0123456789abcdef0123456789abcdef")}`;
    const panel = await createPanel();
    const hook = await createWebhook(panel, { signing_secret: secret });
    await queue(hook, range(0, 100).map((n) => eventObject(n)));
    await drive(hook.id);
    const [request] = await deliveries(hook.bucket);
    const headers = request!.headers as Record<string, string>;
    expect(headers["webhook-id"]).toBe(headers["x-webhook-batch-id"]);
    expect(headers["webhook-timestamp"]).toMatch(/^\d{10}$/);
    expect(() => new Webhook(secret).verify(request!.body, headers, { jsonParse: false })).not.toThrow();
    expect(() => new Webhook(`whsec_${btoa("another-secret-another-secret!!")}`).verify(request!.body, headers)).toThrow();
    expect(() => new Webhook(secret).verify(`${request!.body}x`, headers)).toThrow();
  });

  it("renders 1.0 payloads: view for bpn/apn, linkid on clicks, no msgid, udt_params or timestamp", async () => {
    const panel = await createPanel({ name: "Old" });
    const hook = await createWebhook(panel, { version: "1.0" });
    await queue(hook, [
      { channel: "bpn", event: "delivered", msgid: "p1", journey_name: "J", udt_params: { TIER: "gold" }, event_params: { foreignkey: "a@x.io", token: ["t1"], token_id: null, ts: 261122100000 } },
      { channel: "sms", event: "click", msgid: "s1", journey_name: "J", event_params: { foreignkey: "a@x.io", linkid: 42, ts: 261122100000 } },
      { channel: "email", event: "click", msgid: "e1", journey_name: "J", event_params: { foreignkey: "a@x.io", ts: 261122100000 } },
    ]);
    await advance(hook.id, 5_000);
    await drive(hook.id);
    const events = eventsOf((await deliveries(hook.bucket))[0]!);
    expect(events).toEqual([
      { channel: "bpn", event: "view", webhook_name: "CRM sync", journey_name: "J", custom_params: {}, att_params: {}, event_params: { foreignkey: "a@x.io", token: ["t1"], token_id: null, ts: 261122100000, guid: expect.any(String) } },
      { channel: "sms", event: "click", webhook_name: "CRM sync", journey_name: "J", custom_params: {}, att_params: {}, event_params: { foreignkey: "a@x.io", ts: 261122100000, guid: expect.any(String), linkid: 42 } },
      { channel: "email", event: "click", webhook_name: "CRM sync", journey_name: "J", custom_params: {}, att_params: {}, event_params: { foreignkey: "a@x.io", ts: 261122100000, guid: expect.any(String), linkid: -1 } },
    ]);
  });

  it("queues an event handed over twice with the same guid once", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    const first = await queue(hook, [eventObject(1, { event_params: { guid: "step-42" } }), eventObject(2)]);
    const again = await queue(hook, [eventObject(1, { event_params: { guid: "step-42" } })]);
    expect(first).toEqual({ accepted: 2, duplicates: 0 });
    expect(again).toEqual({ accepted: 0, duplicates: 1 });
    await advance(hook.id, 5_000);
    await drive(hook.id);
    expect(numbersOf(await deliveries(hook.bucket))).toEqual([1, 2]);
  });

  it("does not send before the endpoint passes its test", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, {}, false);
    await queue(hook, range(0, 100).map((n) => eventObject(n)));
    await drive(hook.id);
    expect(await receiver.requests(hook.bucket)).toEqual([]);
    expect((await admin("GET", hook.path)).body).toMatchObject({ state: "configured", backlog: 100 });

    expect((await admin("POST", `${hook.path}/test`)).body.state).toBe("operational");
    await drive(hook.id);
    expect(numbersOf(await deliveries(hook.bucket))).toEqual(range(0, 100));
  });

  it("reaches the webhook through enqueueWebhookEvents, scoped by panel", async () => {
    const { enqueueWebhookEvents } = await import("../../../src/services/webhooks/enqueue");
    const panel = await createPanel();
    const other = await createPanel();
    const hook = await createWebhook(panel);
    const event = { channel: "custom_activity" as const, journeyName: "J", occurredAt: Date.now(), details: { activity_name: "add_to_cart" } };
    expect(await enqueueWebhookEvents(env, other.id, hook.id, [event])).toEqual({ ok: false, problem: { kind: "not_found", fields: [], message: `No webhook with id "${hook.id}" in this panel` } });
    expect(await enqueueWebhookEvents(env, panel.id, hook.id, [event])).toEqual({ ok: true, value: { accepted: 1, duplicates: 0 } });
  });
});
