import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { handleSendsQueue } from "../../../src/services/broadcasts/send";
import { sendFcm } from "../../../src/services/channels/push/fcm";
import { generateVapidKeys, sendWebPush } from "../../../src/services/channels/push/web-push";
import { redriveWaitingPush, sendQueuedPush } from "../../../src/services/journeys/push";
import { insertMessageStatement } from "../../../src/store/journeys/messages";
import { admin, apiFor, call, countRows, createPanel, panelData, receiver, type TestPanel } from "../../support/helpers";
import { eventually, pipelineSettled } from "../../support/activity";
import { act, cartPanel, countersOf, createWebhook, delivered, goalReachedWhilePaused, messagesOf, report, startJourney } from "../../support/journeys";
import { countPushSubscriptions } from "../../../src/store/push";
import { planOf, recording } from "../../support/plans";
import { browserKeys, pushFigures, decryptPush, fromB64url, serviceAccount, verifyRs256, verifyVapid, type BrowserKeys } from "../../support/push";

const hex = (bytes: number) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");

async function webPushPanel(): Promise<{ panel: TestPanel; publicKey: string }> {
  const panel = await createPanel();
  const put = await admin("PUT", `/panels/${panel.id}/push`, { web_push: { subject: "mailto:ops@shop.example" } });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  return { panel, publicKey: put.body.web_push.public_key };
}

async function fcmPanel(): Promise<{ panel: TestPanel; projectId: string; publicKey: CryptoKey; clientEmail: string }> {
  const panel = await createPanel();
  const projectId = `shop-${hex(4)}`;
  const clientEmail = `push-${hex(4)}@${projectId}.iam.gserviceaccount.com`;
  const account = await serviceAccount(projectId, clientEmail);
  const put = await admin("PUT", `/panels/${panel.id}/push`, { fcm: { service_account: account.json } });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  return { panel, projectId, publicKey: account.publicKey, clientEmail };
}

/** Posts to a push route of the panel, as a site's script or an app does. */
async function device(panel: TestPanel, kind: "web" | "app", method: string, body?: unknown, headers: Record<string, string> = {}) {
  const response = await call(`/v1/push/${kind}/${encodeURIComponent(panel.clientId)}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, headers: response.headers, body: response.status === 204 ? null : ((await response.json()) as any) };
}

async function subscribe(panel: TestPanel, endpoint: string, keys: BrowserKeys, owner: Record<string, unknown> = { identity: "ada@example.com" }) {
  return device(panel, "web", "POST", { subscription: { endpoint, expirationTime: null, keys: { p256dh: keys.p256dh, auth: keys.auth } }, ...owner });
}

async function waitingPush(panel: TestPanel, channel: "apn" | "bpn", contactId: number, content: Record<string, unknown> = { text: "Hello", title: "Shop" }) {
  const msgid = `jin_${hex(6)}.${channel}`;
  await insertMessageStatement(panelData, {
    msgid,
    panelId: panel.id,
    journeyId: "jrn_test",
    instanceId: msgid.split(".")[0]!,
    stepId: channel,
    channel,
    contactId,
    recipient: "ada@example.com",
    content,
    status: "sending",
    createdAt: Date.now(),
  }).run();
  return msgid;
}

const messageRow = (msgid: string) => panelData.prepare("SELECT status, error, provider_msg_id, claim FROM journey_messages WHERE msgid = ?").bind(msgid).first<any>();
const contactIdOf = async (panel: TestPanel, key: string) =>
  (await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, key).first<{ id: number }>())!.id;

describe("panel push settings", () => {
  it("validates each field by name, makes VAPID keys once and keeps them, and never shows a private key", async () => {
    const panel = await createPanel();
    expect((await admin("GET", `/panels/${panel.id}/push`)).body).toMatchObject({ web_push: { sends: false, subscriptions: 0 }, fcm: { sends: false, tokens: 0 } });
    const bad = await admin("PUT", `/panels/${panel.id}/push`, { web_push: { subject: "ops@shop.example" } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ field: "web_push.subject" })]);
    const badKey = await admin("PUT", `/panels/${panel.id}/push`, { fcm: { service_account: { project_id: "shop-1234", client_email: "a@b.iam.gserviceaccount.com", private_key: "nope" } } });
    expect(badKey.status).toBe(400);
    expect(badKey.body.errors).toEqual([expect.objectContaining({ field: "fcm.service_account.private_key" })]);
    expect((await admin("PUT", `/panels/${panel.id}/push`, {})).status).toBe(400);
    expect((await admin("GET", `/panels/${panel.id}/push`)).body.web_push.sends).toBe(false);

    const put = await admin("PUT", `/panels/${panel.id}/push`, { web_push: { subject: "mailto:ops@shop.example" } });
    const web = put.body.web_push;
    expect(web).toMatchObject({ sends: true, subject: "mailto:ops@shop.example", subscribe_url: `http://127.0.0.1:8787/v1/push/web/${encodeURIComponent(panel.clientId)}` });
    expect(fromB64url(web.public_key)).toHaveLength(65);
    // Off and on again: the same keys, so browsers subscribed with them stay reachable.
    expect((await admin("PUT", `/panels/${panel.id}/push`, { web_push: null })).body.web_push.sends).toBe(false);
    expect((await admin("PUT", `/panels/${panel.id}/push`, { web_push: { subject: "https://shop.example/contact" } })).body.web_push.public_key).toBe(web.public_key);

    const account = await serviceAccount("shop-12345", "push@shop-12345.iam.gserviceaccount.com");
    const withFcm = await admin("PUT", `/panels/${panel.id}/push`, { fcm: { service_account: account.json } });
    expect(withFcm.body.fcm).toMatchObject({ sends: true, project_id: "shop-12345", client_email: "push@shop-12345.iam.gserviceaccount.com", credential_set: true });
    expect(withFcm.body.web_push.sends).toBe(true);
    const shown = JSON.stringify((await admin("GET", `/panels/${panel.id}/push`)).body);
    expect(shown).not.toContain("PRIVATE KEY");
    const stored = await panelData.prepare("SELECT vapid_private_enc, fcm_private_key_enc FROM push_settings WHERE panel_id = ?").bind(panel.id).first<any>();
    expect(stored.fcm_private_key_enc).not.toContain("PRIVATE KEY");
    const audit = await admin("GET", `/panels/${panel.id}/audit`);
    expect(audit.body.entries.filter((e: any) => e.action === "push.settings_changed").length).toBeGreaterThanOrEqual(4);
  });
});

describe("devices register through /v1/push", () => {
  it("takes a browser's subscription for a contact or a visitor, validates it, answers CORS for listed origins, and forgets it on DELETE", async () => {
    const off = await createPanel();
    const keys = await browserKeys();
    expect((await subscribe(off, "https://push.example.net/a", keys)).status).toBe(409);
    expect((await device(off, "web", "GET")).status).toBe(404);

    const { panel, publicKey } = await webPushPanel();
    expect((await device(panel, "web", "GET")).body).toMatchObject({ result: "Success", public_key: publicKey });
    const bad = await device(panel, "web", "POST", { subscription: { endpoint: "https://push.example.net/a", keys: { p256dh: "abc", auth: keys.auth } }, identity: "ada@example.com" });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ field: "subscription.keys.p256dh", message: expect.stringContaining("65 bytes") }]);
    const unowned = await device(panel, "web", "POST", { subscription: { endpoint: "ftp://push.example.net/a", keys: { p256dh: keys.p256dh, auth: keys.auth } } });
    expect(unowned.body.errors.map((e: any) => e.field).sort()).toEqual(["identity", "subscription.endpoint"]);
    expect((await call(`/v1/push/web/nope`, { method: "POST", body: "{}" })).status).toBe(404);

    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    expect((await admin("POST", `/panels/${panel.id}/segments/count`, { match: { all: [{ reachable: "push" }] } })).body.count).toBe(0);
    expect((await subscribe(panel, "https://push.example.net/a", keys)).body).toMatchObject({ result: "Success", subscribed: true });
    // A visitor's browser, joined to Ada when the visitor becomes known.
    expect((await subscribe(panel, "https://push.example.net/b", await browserKeys(), { uniqueid: "visitor-7" })).status).toBe(200);
    expect((await admin("GET", `/panels/${panel.id}/push`)).body.web_push.subscriptions).toBe(2);
    expect((await admin("POST", `/panels/${panel.id}/segments/count`, { match: { all: [{ reachable: "push" }] } })).body.count).toBe(1);

    // A browser page of a listed origin may call it; others are refused at the preflight.
    await admin("PATCH", `/panels/${panel.id}`, { cors_origins: ["https://shop.example"] });
    const preflight = await call(`/v1/push/web/${encodeURIComponent(panel.clientId)}`, {
      method: "OPTIONS",
      headers: { origin: "https://shop.example", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-methods")).toBe("GET, POST, DELETE, OPTIONS");
    const fromSite = await subscribe(panel, "https://push.example.net/a", keys);
    expect(fromSite.status).toBe(200);
    const cross = await device(panel, "web", "GET", undefined, { origin: "https://shop.example" });
    expect(cross.headers.get("access-control-allow-origin")).toBe("https://shop.example");
    const elsewhere = await call(`/v1/push/web/${encodeURIComponent(panel.clientId)}`, { method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "POST" } });
    expect(elsewhere.status).toBe(403);

    expect((await device(panel, "web", "DELETE", { endpoint: "https://push.example.net/a" })).body.removed).toBe(true);
    expect((await device(panel, "web", "DELETE", { endpoint: "https://push.example.net/a" })).body.removed).toBe(false);
    expect((await device(panel, "web", "PUT", {})).status).toBe(405);
    // A key, when given, must be the panel's.
    const other = await createPanel();
    const wrongKey = await call(`/v1/push/web/${encodeURIComponent(panel.clientId)}?apikey=${other.apiKey}`, { method: "GET" });
    expect(wrongKey.status).toBe(401);
  });

  it("takes an app's FCM token, validated, and removes it on DELETE", async () => {
    const { panel } = await fcmPanel();
    const token = `f${hex(20)}:APA91b${hex(40)}`;
    const bad = await device(panel, "app", "POST", { token: "short", platform: "watch" });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: any) => e.field).sort()).toEqual(["platform", "token"]);
    expect((await device(panel, "app", "POST", { token, platform: "ios", identity: "ada@example.com" })).body).toMatchObject({ registered: true });
    expect((await admin("GET", `/panels/${panel.id}/push`)).body.fcm.tokens).toBe(1);
    expect((await device(panel, "app", "DELETE", { token })).body.removed).toBe(true);
    expect((await admin("GET", `/panels/${panel.id}/push`)).body.fcm.tokens).toBe(0);
  });
});

describe("the push screen's figures (issue 42: kept, never a count of the panel's devices in a request)", () => {
  it("keeps the browsers and installs counted through subscribe, re-subscribe, leave, a push service's gone and erasure, and reads them without reading a device", async () => {
    const { panel } = await webPushPanel();
    const account = await serviceAccount(`shop-${hex(4)}`, `push-${hex(4)}@shop.iam.gserviceaccount.com`);
    expect((await admin("PUT", `/panels/${panel.id}/push`, { fcm: { service_account: account.json } })).status).toBe(200);
    const figures = () => pushFigures(panel);
    const bucket = receiver.bucket("push-counts");
    const [ada, bob] = [await browserKeys(), await browserKeys()];
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    await apiFor(panel)("contact", "add", { data: { EMAIL: "bob@example.com" } });
    expect((await subscribe(panel, `${receiver.hookUrl(bucket)}/ada`, ada)).status).toBe(200);
    expect((await subscribe(panel, `${receiver.hookUrl(bucket)}/bob`, bob, { identity: "bob@example.com" })).status).toBe(200);
    expect((await subscribe(panel, "https://push.example.net/visitor", await browserKeys(), { uniqueid: "visitor-9" })).status).toBe(200);
    // The same browser again (new keys): one device still.
    expect((await subscribe(panel, `${receiver.hookUrl(bucket)}/ada`, await browserKeys())).status).toBe(200);
    const token = `f${hex(20)}:APA91b${hex(40)}`;
    for (let i = 0; i < 2; i++) expect((await device(panel, "app", "POST", { token, platform: "ios", identity: "ada@example.com" })).status).toBe(200);
    expect(await figures()).toEqual([3, 1]);

    // The screen's read is the panel's two counters: no push_subscriptions row is read.
    const { db, caught } = recording(panelData);
    expect(await countPushSubscriptions(db, panel.id)).toEqual({ web: 3, app: 1 });
    expect(caught).toHaveLength(1);
    expect(await planOf(panelData, caught[0]!)).not.toContain("push_subscriptions");

    // A device leaving, twice: counted once.
    for (let i = 0; i < 2; i++) await device(panel, "web", "DELETE", { endpoint: "https://push.example.net/visitor" });
    expect(await figures()).toEqual([2, 1]);
    // The push service says Bob's browser is gone.
    await receiver.script(bucket, [{ status: 410, body: "push subscription has unsubscribed or expired" }]);
    const gone = await waitingPush(panel, "bpn", await contactIdOf(panel, "bob@example.com"));
    expect(await sendQueuedPush(env, panel.id, gone, 1)).toBeNull();
    expect(await figures()).toEqual([1, 1]);
    // Ada's erasure takes her browser and her install.
    expect((await admin("DELETE", `/panels/${panel.id}/contacts/ada%40example.com`)).body).toMatchObject({ state: "done" });
    expect(await figures()).toEqual([0, 0]);
    expect(await countRows("SELECT COUNT(*) AS n FROM push_subscriptions WHERE panel_id = ?", panel.id)).toBe(0);
  });
});

describe("the journey of the issue, web push: activity -> bpn -> push service -> the service worker reports delivered -> webhook", () => {
  it("encrypts the payload for the browser's keys under the panel's VAPID key; delivered ends the wait and fires the webhook once", async () => {
    const { panel, publicKey } = await webPushPanel();
    const { cart } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada" } });
    const keys = await browserKeys();
    const bucket = receiver.bucket("push-service");
    await receiver.script(bucket, [{ status: 201, headers: { location: `${receiver.hookUrl(bucket)}/m/1` } }]);
    expect((await subscribe(panel, `${receiver.hookUrl(bucket)}/sub/ada`, keys)).status).toBe(200);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        // Merge tags are filled as in email and SMS (issue 43: they went out unfilled).
        { id: "push", type: "bpn", title: "Your cart, {{ name }}", text: "Still thinking it over, {{NAME|friend}}?", url: "https://shop.example/cart" },
        { id: "wait", type: "wait_for_event", after: "push", events: ["delivered"], within: "1d" },
        { id: "hook", type: "webhook", after: "wait", on: "event", webhook: hook.id, params: { Action: "pushed" } },
      ],
    });
    await act(panel, cart, "ada@example.com");

    const [request] = await eventually(async () => {
      const got = await receiver.requests(bucket);
      return got.length ? got : undefined;
    });
    expect(request!.path).toBe(`/hooks/${bucket}/sub/ada`);
    expect(request!.headers).toMatchObject({ "content-encoding": "aes128gcm", "content-type": "application/octet-stream", ttl: String(4 * 24 * 3600) });
    const claims = await verifyVapid(request!.headers.authorization!, publicKey);
    expect(claims).toMatchObject({ aud: new URL(receiver.hookUrl(bucket)).origin, sub: "mailto:ops@shop.example" });
    expect(claims.exp as number).toBeGreaterThan(Date.now() / 1000);
    // Padded to the smallest size bucket, 1 KiB: the length tells little of the message.
    expect(atob(request!.bodyBase64).length).toBe(1024);
    const payload = JSON.parse(await decryptPush(request!.bodyBase64, keys));
    const sent = await eventually(async () => {
      const [m] = await messagesOf(panel, "bpn");
      return m?.status === "sent" ? m : undefined;
    });
    expect(payload).toEqual({
      msgid: sent.msgid,
      title: "Your cart, Ada",
      body: "Still thinking it over, Ada?",
      url: "https://shop.example/cart",
      report: `http://127.0.0.1:8787/v1/events/bpn/${encodeURIComponent(panel.clientId)}`,
    });

    // The service worker's report, as the docs' snippet sends it.
    const reported = await report(panel, "bpn", { msgid: payload.msgid, event: "delivered" });
    expect(reported.status).toBe(200);
    expect(await report(panel, "bpn", { msgid: payload.msgid, event: "delivered" })).toMatchObject({ status: 200, body: { duplicate: true } });
    const events = await delivered(hook);
    expect(events).toEqual([expect.objectContaining({ channel: "bpn", event: "delivered", msgid: sent.msgid, custom_params: { Action: "pushed" } })]);
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });
});

describe("queued push: retried, sent once, gone devices removed", () => {
  it("retries 429 and 5xx with backoff, sends once under redelivery, and removes a subscription the push service says is gone", async () => {
    const { panel } = await webPushPanel();
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    const contactId = await contactIdOf(panel, "ada@example.com");
    const bucket = receiver.bucket("push-service");
    await receiver.script(bucket, [{ status: 429 }, { status: 503 }, { status: 201 }]);
    await subscribe(panel, `${receiver.hookUrl(bucket)}/sub/1`, await browserKeys());
    const msgid = await waitingPush(panel, "bpn", contactId);
    expect(await sendQueuedPush(env, panel.id, msgid, 1)).toBe(5);
    expect(await messageRow(msgid)).toMatchObject({ status: "sending", claim: null });
    expect(await sendQueuedPush(env, panel.id, msgid, 2)).toBe(10);
    expect(await sendQueuedPush(env, panel.id, msgid, 3)).toBeNull();
    expect(await messageRow(msgid)).toMatchObject({ status: "sent", error: null });
    expect(await sendQueuedPush(env, panel.id, msgid, 4)).toBeNull();
    expect(await receiver.requests(bucket)).toHaveLength(3);

    // 410: the browser unsubscribed; the subscription goes, the message fails, the next is skipped.
    await receiver.script(bucket, [{ status: 410, body: "push subscription has unsubscribed or expired" }]);
    const gone = await waitingPush(panel, "bpn", contactId);
    expect(await sendQueuedPush(env, panel.id, gone, 1)).toBeNull();
    expect(await messageRow(gone)).toMatchObject({ status: "failed", error: expect.stringContaining("410") });
    expect(await countRows("SELECT COUNT(*) AS n FROM push_subscriptions WHERE panel_id = ?", panel.id)).toBe(0);
    const next = await waitingPush(panel, "bpn", contactId);
    await sendQueuedPush(env, panel.id, next, 1);
    expect(await messageRow(next)).toMatchObject({ status: "skipped", error: "the contact has no web push subscription" });
    expect(await receiver.requests(bucket)).toHaveLength(4);
  });

  it("a journey's push the push service refuses is recorded as failed with a failed event, as SMS refusals are, once", async () => {
    const { panel } = await webPushPanel();
    const { cart } = await cartPanel(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    const bucket = receiver.bucket("push-service");
    await receiver.script(bucket, [{ status: 400, body: "bad request: the payload was refused" }]);
    await subscribe(panel, `${receiver.hookUrl(bucket)}/sub/ada`, await browserKeys());
    await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "push", type: "bpn", text: "Hi" }] });
    await act(panel, cart, "ada@example.com");
    const refused = await eventually(async () => {
      const [m] = await messagesOf(panel, "bpn");
      return m?.status === "failed" ? m : undefined;
    });
    expect(refused.error).toContain("400");

    await pipelineSettled(panel.id);
    const { events } = (await admin("GET", `/panels/${panel.id}/contacts/ada%40example.com/events`)).body;
    expect(events.filter((e: any) => e.channel === "bpn")).toEqual([
      expect.objectContaining({ name: "failed", msgid: refused.msgid, source: "provider", params: { provider: "web_push", error: expect.stringContaining("400") } }),
    ]);
    // A redelivered nudge finds the message done with: nothing is sent or recorded again.
    expect(await sendQueuedPush(env, panel.id, refused.msgid, 2)).toBeNull();
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'bpn' AND name = 'failed'", panel.id)).toBe(1);
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });

  it("the SENDS consumer takes push nudges beside SMS ones, and the cron nudges push whose nudge was lost", async () => {
    const { panel } = await webPushPanel();
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    const contactId = await contactIdOf(panel, "ada@example.com");
    const bucket = receiver.bucket("push-service");
    await subscribe(panel, `${receiver.hookUrl(bucket)}/sub/1`, await browserKeys());
    const first = await waitingPush(panel, "bpn", contactId);
    const batch = createMessageBatch("apiv2-sends-default", [{ id: "nudge-1", timestamp: new Date(), attempts: 1, body: { kind: "push", panelId: panel.id, msgids: [first] } }]);
    await handleSendsQueue(batch, env);
    expect(await getQueueResult(batch, createExecutionContext())).toMatchObject({ explicitAcks: ["nudge-1"], retryMessages: [] });
    expect((await messageRow(first)).status).toBe("sent");

    const lost = await waitingPush(panel, "bpn", contactId);
    await panelData.prepare("UPDATE journey_messages SET created_at = ? WHERE msgid = ?").bind(Date.now() - 10 * 60_000, lost).run();
    await redriveWaitingPush.run(env, Date.now());
    await eventually(async () => ((await messageRow(lost)).status === "sent" ? true : undefined));
    expect(await receiver.requests(bucket)).toHaveLength(2);
  });

  it("a paused journey's push waits unsent, and goes when the journey runs again", async () => {
    const { panel } = await webPushPanel();
    await cartPanel(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    const bucket = receiver.bucket("push-service");
    await subscribe(panel, `${receiver.hookUrl(bucket)}/sub/1`, await browserKeys());
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "push", type: "bpn", text: "Back in stock" }] });
    const held = await waitingPush(panel, "bpn", await contactIdOf(panel, "ada@example.com"));
    await panelData.prepare("UPDATE journey_messages SET journey_id = ? WHERE msgid = ?").bind(journey.id, held).run();
    expect((await admin("POST", `${journey.path}/status`, { status: "paused" })).status).toBe(200);
    expect(await sendQueuedPush(env, panel.id, held, 1)).toBeNull();
    expect(await messageRow(held)).toMatchObject({ status: "sending", claim: null, error: null });
    expect(await receiver.requests(bucket)).toHaveLength(0);
    expect((await admin("POST", `${journey.path}/status`, { status: "running" })).status).toBe(200);
    await eventually(async () => ((await messageRow(held)).status === "sent" ? true : undefined));
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });

  it("of an instance its last step completed, whose contact reaches the goal while a pause holds it: skipped at the goal, not sent when the journey runs again; the instance stays completed, not converted", async () => {
    const { panel } = await webPushPanel();
    const { cart, buy } = await cartPanel(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    const bucket = receiver.bucket("push-service");
    await subscribe(panel, `${receiver.hookUrl(bucket)}/sub/1`, await browserKeys());
    const steps = [
      { id: "later", type: "delay", for: "1h" },
      { id: "push", type: "bpn", text: "Still thinking it over?", after: "later" },
    ];
    // The push is its last step: the instance completes with it waiting for its nudge.
    const { journey, msgid } = await goalReachedWhilePaused(panel, { cart, buy }, steps);
    expect(await messageRow(msgid)).toMatchObject({ status: "skipped", error: "not sent: the contact reached the journey's goal", provider_msg_id: null });

    // Its nudge finds it done with; the resume sends nothing.
    expect(await sendQueuedPush(env, panel.id, msgid, 1)).toBeNull();
    expect((await admin("POST", `${journey.path}/status`, { status: "running" })).status).toBe(200);
    await eventually(async () => ((await messageRow(msgid)).status !== "sending" ? true : undefined));
    expect(await messageRow(msgid)).toMatchObject({ status: "skipped", provider_msg_id: null });
    expect(await receiver.requests(bucket)).toHaveLength(0);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, completed: 1, converted: 0 });
  });

  it("leaves bpn and apn in the outbox while the channel is not set up", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "web", type: "bpn", text: "Hi" },
        { id: "app", type: "apn", after: "web", text: "Hi" },
      ],
    });
    await act(panel, cart, "ada@example.com");
    expect((await messagesOf(panel)).map((m: any) => [m.channel, m.status]).sort()).toEqual([
      ["apn", "recorded"],
      ["bpn", "recorded"],
    ]);
  });
});

/** The RFC 8188 header of a body as the receiver kept it: the record size announced, and the one record's length. */
function recordOf(bodyBase64: string): { rs: number; record: number } {
  const body = Uint8Array.from(atob(bodyBase64), (c) => c.charCodeAt(0));
  return { rs: new DataView(body.buffer).getUint32(16), record: body.length - 21 - body[20]! };
}

describe("web push sizes: padded to a bucket that fits, sent once more unpadded after a 413", () => {
  it("pads each body to the smallest of 1024, 2048, 3070 and 4096 bytes that holds it, which the browser decrypts to the message; a longer one is failed unsent", async () => {
    const keys = await browserKeys();
    const vapid = { subject: "mailto:ops@shop.example", ...(await generateVapidKeys()) };
    const bucket = receiver.bucket("push-service");
    await receiver.script(bucket, [{ status: 201 }, { status: 201 }, { status: 201 }, { status: 201 }]);
    const subscription = { endpoint: `${receiver.hookUrl(bucket)}/sub/sizes`, p256dh: keys.p256dh, auth: keys.auth };
    const payload = (text: string) => ({ msgid: "jin_sizes.bpn", title: "Shop", body: text, url: null, report: "https://api.example/v1/events/bpn/c1" });
    // About 90 bytes of JSON around the text, and 103 of header, delimiter and tag.
    const texts = ["a".repeat(100), "b".repeat(1000), "c".repeat(2000), "d".repeat(3500)];
    for (const text of texts) expect(await sendWebPush(subscription, payload(text), vapid, Date.now())).toMatchObject({ ok: true });
    const sent = await receiver.requests(bucket);
    expect(sent.map((r) => atob(r.bodyBase64).length)).toEqual([1024, 2048, 3070, 4096]);
    // One record (header of 21 + 65 bytes before it), under the record size announced.
    expect(sent.map((r) => recordOf(r.bodyBase64))).toEqual([1024, 2048, 3070, 4096].map((size) => ({ rs: 4096, record: size - 86 })));
    for (const [i, request] of sent.entries()) expect(JSON.parse(await decryptPush(request.bodyBase64, keys))).toEqual(payload(texts[i]!));

    const tooLong = await sendWebPush(subscription, payload("e".repeat(4000)), vapid, Date.now());
    expect(tooLong).toEqual({ ok: false, gone: false, retryable: false, error: expect.stringMatching(/more than the 4096 every push service takes/) });
    expect(await receiver.requests(bucket)).toHaveLength(4);
  });

  it("a push service that answers 413 gets the message once more unpadded, which it takes: sent", async () => {
    const { panel } = await webPushPanel();
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    const keys = await browserKeys();
    const bucket = receiver.bucket("push-service");
    await receiver.script(bucket, [{ status: 413, body: "Payload Too Large" }, { status: 201, headers: { location: `${receiver.hookUrl(bucket)}/m/2` } }]);
    await subscribe(panel, `${receiver.hookUrl(bucket)}/sub/ada`, keys);
    const msgid = await waitingPush(panel, "bpn", await contactIdOf(panel, "ada@example.com"), { title: "Shop", text: "Your cart misses you" });
    expect(await sendQueuedPush(env, panel.id, msgid, 1)).toBeNull();
    expect(await messageRow(msgid)).toMatchObject({ status: "sent", error: null, provider_msg_id: `${receiver.hookUrl(bucket)}/m/2` });
    const [padded, unpadded] = await receiver.requests(bucket);
    expect(atob(padded!.bodyBase64).length).toBe(1024);
    const plaintext = await decryptPush(unpadded!.bodyBase64, keys);
    // Unpadded: the plaintext, the delimiter, the tag and the header, nothing more.
    expect(atob(unpadded!.bodyBase64).length).toBe(new TextEncoder().encode(plaintext).length + 1 + 16 + 86);
    expect(JSON.parse(plaintext)).toMatchObject({ msgid, title: "Shop", body: "Your cart misses you" });
    expect(await decryptPush(padded!.bodyBase64, keys)).toBe(plaintext);
  });

  it("413 again unpadded fails the message for good, saying so, with no further attempt", async () => {
    const { panel } = await webPushPanel();
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    const bucket = receiver.bucket("push-service");
    await receiver.script(bucket, [{ status: 413 }, { status: 413, body: "Payload Too Large" }]);
    await subscribe(panel, `${receiver.hookUrl(bucket)}/sub/ada`, await browserKeys());
    const msgid = await waitingPush(panel, "bpn", await contactIdOf(panel, "ada@example.com"));
    expect(await sendQueuedPush(env, panel.id, msgid, 1)).toBeNull();
    const row = await messageRow(msgid);
    expect(row.status).toBe("failed");
    expect(row.error).toMatch(/^the push service refused the message as too large \(413\) at 1024 bytes padded and at \d+ bytes unpadded; shorten its title or text: Payload Too Large$/);
    expect(await sendQueuedPush(env, panel.id, msgid, 2)).toBeNull();
    expect(await receiver.requests(bucket)).toHaveLength(2);
  });
});

describe("FCM HTTP v1, against loopback stand-ins of FCM and Google's token endpoint", () => {
  it("exchanges a signed service-account JWT for an access token once, sends notification and data, refreshes on 401, and tells gone tokens from retryable errors", async () => {
    const projectId = `shop-${hex(4)}`;
    const clientEmail = `push-${hex(4)}@${projectId}.iam.gserviceaccount.com`;
    const account = await serviceAccount(projectId, clientEmail);
    const [api, tokens] = [receiver.bucket("fcm"), receiver.bucket("google")];
    const urls = { api: receiver.hookUrl(api), token: receiver.hookUrl(tokens) };
    await receiver.script(tokens, [{ status: 200, body: '{"access_token":"ya29.first","expires_in":3599,"token_type":"Bearer"}' }, { status: 200, body: '{"access_token":"ya29.second","expires_in":3599}' }]);
    const unregistered = JSON.stringify({ error: { code: 404, message: "Requested entity was not found.", status: "NOT_FOUND", details: [{ "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode: "UNREGISTERED" }] } });
    await receiver.script(api, [
      { status: 200, body: `{"name":"projects/${projectId}/messages/1"}` },
      { status: 401, body: '{"error":{"code":401,"status":"UNAUTHENTICATED"}}' },
      { status: 200, body: `{"name":"projects/${projectId}/messages/2"}` },
      { status: 404, body: unregistered },
      { status: 503, body: '{"error":{"code":503,"status":"UNAVAILABLE"}}' },
    ]);
    const fcm = { projectId, clientEmail, privateKey: account.json.private_key! };
    const payload = { msgid: "jin_1.app", title: "Shop", body: "Hello Ada", url: "https://shop.example/cart", report: "https://api.example/v1/events/apn/c1" };
    const now = Date.now();
    expect(await sendFcm(fcm, urls, "token-1", payload, now)).toEqual({ ok: true, id: `projects/${projectId}/messages/1` });
    expect(await sendFcm(fcm, urls, "token-1", payload, now)).toEqual({ ok: true, id: `projects/${projectId}/messages/2` });
    expect(await sendFcm(fcm, urls, "token-2", payload, now)).toMatchObject({ ok: false, gone: true, retryable: false, error: expect.stringContaining("UNREGISTERED") });
    expect(await sendFcm(fcm, urls, "token-3", payload, now)).toMatchObject({ ok: false, gone: false, retryable: true });

    const exchanges = await receiver.requests(tokens);
    // One exchange, then one more after FCM refused the first token.
    expect(exchanges).toHaveLength(2);
    const form = new URLSearchParams(exchanges[0]!.body);
    expect(form.get("grant_type")).toBe("urn:ietf:params:oauth:grant-type:jwt-bearer");
    const claims = await verifyRs256(form.get("assertion")!, account.publicKey);
    expect(claims).toMatchObject({ iss: clientEmail, aud: urls.token, scope: "https://www.googleapis.com/auth/firebase.messaging" });
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);

    const sends = await receiver.requests(api);
    expect(sends).toHaveLength(5);
    expect(sends[0]!.path).toBe(`/hooks/${api}/v1/projects/${projectId}/messages:send`);
    expect(sends.map((s) => s.headers.authorization)).toEqual(["Bearer ya29.first", "Bearer ya29.first", "Bearer ya29.second", "Bearer ya29.second", "Bearer ya29.second"]);
    expect(JSON.parse(sends[0]!.body)).toEqual({
      message: {
        token: "token-1",
        notification: { title: "Shop", body: "Hello Ada" },
        data: { msgid: "jin_1.app", report: "https://api.example/v1/events/apn/c1", url: "https://shop.example/cart" },
        android: { priority: "high" },
        apns: { payload: { aps: { "mutable-content": 1 } } },
      },
    });
  });

  it("journey apn: sent to the registered install and the PUSH_TOKEN attribute; an UNREGISTERED token is removed; the app's delivered report fires the webhook", async () => {
    const { panel, projectId } = await fcmPanel();
    const { cart } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    const attributeToken = `attr${hex(20)}`;
    expect((await admin("PUT", `/panels/${panel.id}/attributes/PUSH_TOKEN`, { type: "string" })).status).toBe(200);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", PUSH_TOKEN: attributeToken } });
    const installToken = `inst${hex(20)}`;
    expect((await device(panel, "app", "POST", { token: installToken, platform: "android", identity: "ada@example.com" })).status).toBe(200);
    await receiver.script("google-token", [{ status: 200, body: '{"access_token":"ya29.journey","expires_in":3599}' }]);
    const unregistered = JSON.stringify({ error: { code: 404, status: "NOT_FOUND", message: "not found", details: [{ "@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode: "UNREGISTERED" }] } });
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        // Ada has no NAME: the tag's fallback is sent.
        { id: "app", type: "apn", title: "Cart", text: "Still thinking it over, {{NAME|friend}}?" },
        { id: "wait", type: "wait_for_event", after: "app", events: ["delivered"], within: "1d" },
        { id: "hook", type: "webhook", after: "wait", on: "event", webhook: hook.id },
      ],
    });
    // Answers go in arrival order: whichever token's request comes first is gone, the other takes the message.
    await receiver.script("fcm-api", [{ status: 404, body: unregistered }, { status: 200, body: `{"name":"projects/${projectId}/messages/9"}` }]);
    await act(panel, cart, "ada@example.com");
    const sent = await eventually(async () => {
      const [m] = await messagesOf(panel, "apn");
      return m?.status === "sent" ? m : undefined;
    });
    expect((await messageRow(sent.msgid)).provider_msg_id).toBe(`projects/${projectId}/messages/9`);
    const mine = (await receiver.requests("fcm-api")).filter((r) => r.path.includes(projectId));
    expect(mine.map((r) => JSON.parse(r.body).message.token).sort()).toEqual([attributeToken, installToken].sort());
    expect(mine.every((r) => r.headers.authorization === "Bearer ya29.journey")).toBe(true);
    expect(mine.map((r) => JSON.parse(r.body).message.notification)).toEqual([
      { title: "Cart", body: "Still thinking it over, friend?" },
      { title: "Cart", body: "Still thinking it over, friend?" },
    ]);
    // The message log and the contact page show what was sent.
    expect(sent.content).toMatchObject({ title: "Cart", text: "Still thinking it over, friend?" });
    const page = await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent("ada@example.com")}`);
    expect(page.body.messages).toEqual([expect.objectContaining({ channel: "apn", subject: "Cart", has_copy: false, message_id: sent.msgid })]);
    const goneToken = JSON.parse(mine[0]!.body).message.token;
    const left = await panelData.prepare("SELECT address FROM push_subscriptions WHERE panel_id = ?").bind(panel.id).all<{ address: string }>();
    // The install's token is removed when it was the gone one; the attribute's is not a registration.
    expect(left.results.map((r) => r.address)).toEqual(goneToken === installToken ? [] : [installToken]);

    expect((await report(panel, "apn", { msgid: sent.msgid, event: "delivered" })).status).toBe(200);
    expect(await delivered(hook)).toEqual([expect.objectContaining({ channel: "apn", event: "delivered", msgid: sent.msgid })]);
  });
});
