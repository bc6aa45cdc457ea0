import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { handleSendsQueue } from "../../../src/services/broadcasts/send";
import { routeRequest } from "../../../src/http/router";
import { Msg91Provider } from "../../../src/services/channels/sms/msg91";
import { TwilioProvider, twilioSignature } from "../../../src/services/channels/sms/twilio";
import { redriveWaitingSms, sendQueuedSms } from "../../../src/services/journeys/sms";
import { journeyTimers } from "../../../src/services/journeys/timers";
import { insertMessageStatement } from "../../../src/store/journeys/messages";
import { admin, apiFor, call, countRows, createPanel, panelData, receiver, type TestPanel } from "../../support/helpers";
import { eventually, pipelineSettled } from "../../support/activity";
import { collectingQueue, withBindings } from "../../support/cron";
import { act, cartPanel, cartSmsGoalJourney, countersOf, createWebhook, delivered, goalReachedWhilePaused, messagesOf, MINUTE, startJourney } from "../../support/journeys";

const hex = (bytes: number) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
const MOBILE = "+14155550100";

/** The signature Twilio computes, written out here from Twilio's description rather than taken from the Worker. */
async function twilioSign(token: string, url: string, params: Record<string, string>): Promise<string> {
  const data = url + Object.keys(params).sort().map((k) => k + params[k]).join("");
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(token), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
  return btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(data)))));
}

async function twilioPanel(): Promise<{ panel: TestPanel; accountSid: string; token: string; settings: any }> {
  const panel = await createPanel();
  const accountSid = `AC${hex(16)}`;
  const token = `tok-${hex(8)}`;
  const put = await admin("PUT", `/panels/${panel.id}/sms`, { provider: "twilio", account_sid: accountSid, auth_token: token, from: "+15005550006" });
  expect(put.status).toBe(200);
  return { panel, accountSid, token, settings: put.body };
}

/** Posts a form to a hook URL of the Worker, signed as Twilio signs it (or with `signature`). */
async function postTwilio(hookUrl: string, token: string, params: Record<string, string>, signature?: string) {
  const url = `https://api.test${new URL(hookUrl).pathname}`;
  const response = await call(new URL(url).pathname, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": signature ?? (await twilioSign(token, url, params)) },
    body: new URLSearchParams(params),
  });
  return { status: response.status, text: await response.text() };
}

async function waitingSms(panel: TestPanel, recipient = MOBILE, content: Record<string, unknown> = { body: "Hello" }) {
  const msgid = `jin_${hex(6)}.sms`;
  // A journey message is recorded only while its contact is there (an erasure may have run).
  const email = `${msgid.slice(0, 10)}@example.com`;
  await apiFor(panel)("contact", "add", { data: { EMAIL: email } });
  const contact = await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, email).first<{ id: number }>();
  await insertMessageStatement(panelData, {
    msgid,
    panelId: panel.id,
    journeyId: "jrn_test",
    instanceId: msgid.split(".")[0]!,
    stepId: "sms",
    channel: "sms",
    contactId: contact!.id,
    recipient,
    content,
    status: "sending",
    createdAt: Date.now(),
  }).run();
  return msgid;
}

const messageRow = (msgid: string) => panelData.prepare("SELECT status, error, provider_msg_id, claim, delivery FROM journey_messages WHERE msgid = ?").bind(msgid).first<any>();

describe("panel SMS settings", () => {
  it("signs as Twilio's documented example does", async () => {
    // https://www.twilio.com/docs/usage/security#validating-requests
    const params = { CallSid: "CA1234567890ABCDE", Caller: "+12349013030", Digits: "1234", From: "+12349013030", To: "+18005551212" };
    const url = "https://mycompany.com/myapp.php?foo=1&bar=2";
    expect(await twilioSignature("12345", url, new URLSearchParams(params))).toBe(await twilioSign("12345", url, params));
    expect(await twilioSign("12345", url, params)).toBe("0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
  });

  it("validates the provider's fields by name, stores the credential encrypted and never shows it", async () => {
    const panel = await createPanel();
    const bad = await admin("PUT", `/panels/${panel.id}/sms`, { provider: "twilio", account_sid: "AC123", auth_token: "x", from: "+15005550006" });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain("account_sid");
    expect((await admin("PUT", `/panels/${panel.id}/sms`, { provider: "pigeon" })).status).toBe(400);
    expect((await admin("GET", `/panels/${panel.id}/sms`)).body).toEqual({ provider: "outbox", sends: false });
    const { panel: configured, token, settings } = await twilioPanel();
    expect(settings).toMatchObject({ provider: "twilio", sends: true, from: "+15005550006", credential_set: true });
    expect(settings.delivery_report_url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:8787/hooks/sms/twilio/${configured.id}/[A-Za-z0-9_-]{32}$`));
    expect(settings.replies_url).toBe(`${settings.delivery_report_url}/replies`);
    expect(JSON.stringify((await admin("GET", `/panels/${configured.id}/sms`)).body)).not.toContain(token);
    const stored = await panelData.prepare("SELECT credential_enc FROM sms_settings WHERE panel_id = ?").bind(configured.id).first<{ credential_enc: string }>();
    expect(stored!.credential_enc).not.toContain(token);
    // An update keeps the hook token, so the URLs the provider was given keep working.
    await admin("PUT", `/panels/${configured.id}/sms`, { provider: "twilio", account_sid: settings.account_sid, auth_token: "other", from: "+15005550007" });
    expect((await admin("GET", `/panels/${configured.id}/sms`)).body.delivery_report_url).toBe(settings.delivery_report_url);
    expect((await admin("PUT", `/panels/${configured.id}/sms`, { provider: "outbox" })).body).toEqual({ provider: "outbox", sends: false });
  });
});

describe("Twilio Messages API, against a loopback stand-in", () => {
  const config = (bucket: string) => ({ accountSid: `AC${"0".repeat(32)}`, authToken: "secret", from: "+15005550006", apiUrl: receiver.hookUrl(bucket), statusCallback: () => "https://links.example.com/cb" });
  const sms = { id: "m.1", panelId: "pnl_x", to: "14155550100", text: "Hi Ada", dltTemplateId: null, providerTemplateId: null };

  it("posts the form with Basic auth and StatusCallback, and returns the message sid", async () => {
    const bucket = receiver.bucket("twilio");
    await receiver.script(bucket, [{ status: 201, body: '{"sid":"SM123","status":"queued"}' }]);
    expect(await new TwilioProvider(config(bucket)).send(sms)).toEqual({ ok: true, providerMessageId: "SM123" });
    const [request] = await receiver.requests(bucket);
    expect(request!.path).toBe(`/hooks/${bucket}/2010-04-01/Accounts/AC${"0".repeat(32)}/Messages.json`);
    expect(request!.headers.authorization).toBe(`Basic ${btoa(`AC${"0".repeat(32)}:secret`)}`);
    expect(Object.fromEntries(new URLSearchParams(request!.body))).toEqual({ To: "+14155550100", Body: "Hi Ada", StatusCallback: "https://links.example.com/cb", From: "+15005550006" });
  });

  it("tells throttling and server errors (retried) from refusals (recorded); 21610 is an opt-out", async () => {
    const bucket = receiver.bucket("twilio");
    await receiver.script(bucket, [
      { status: 429, body: '{"code":20429,"message":"Too Many Requests"}' },
      { status: 503, body: "unavailable" },
      { status: 400, body: '{"code":21211,"message":"The To number is not valid"}' },
      { status: 400, body: '{"code":21610,"message":"Attempt to send to unsubscribed recipient"}' },
    ]);
    const twilio = new TwilioProvider(config(bucket));
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await twilio.send(sms));
    expect(results.map((r) => (r.ok ? "ok" : r.retryable))).toEqual([true, true, false, false]);
    expect(results[2]).toMatchObject({ error: "Twilio answered 400 (code 21211): The To number is not valid" });
    expect(results[3]).toMatchObject({ optedOut: true });
  });
});

describe("MSG91 flow API, against a loopback stand-in", () => {
  const config = (bucket: string) => ({ authkey: "key-1", senderId: "SHOPIN", templateId: "flow-1", dltTemplateId: "1107160000000000001", apiUrl: receiver.hookUrl(bucket) });
  const sms = { id: "m.1", panelId: "pnl_x", to: "919800000001", text: "Namaste Ada", dltTemplateId: null, providerTemplateId: null };

  it("posts the flow with the authkey header, sender id and DLT template id", async () => {
    const bucket = receiver.bucket("msg91");
    await receiver.script(bucket, [{ status: 200, body: '{"type":"success","message":"3763646c3058373530393938"}' }]);
    expect(await new Msg91Provider(config(bucket)).send({ ...sms, dltTemplateId: "1107160000000000009", providerTemplateId: "flow-9" })).toEqual({ ok: true, providerMessageId: "3763646c3058373530393938" });
    const [request] = await receiver.requests(bucket);
    expect(request!.path).toBe(`/hooks/${bucket}/api/v5/flow/`);
    expect(request!.headers.authkey).toBe("key-1");
    expect(JSON.parse(request!.body)).toEqual({
      template_id: "flow-9",
      sender: "SHOPIN",
      short_url: "0",
      DLT_TE_ID: "1107160000000000009",
      recipients: [{ mobiles: "919800000001", message: "Namaste Ada" }],
    });
  });

  it("reads MSG91's 200 with type error as a refusal, 5xx as retryable, and needs a DLT template id", async () => {
    const bucket = receiver.bucket("msg91");
    await receiver.script(bucket, [
      { status: 200, body: '{"type":"error","message":"Invalid template"}' },
      { status: 502, body: "bad gateway" },
    ]);
    const msg91 = new Msg91Provider(config(bucket));
    expect(await msg91.send(sms)).toEqual({ ok: false, retryable: false, error: "MSG91 refused the message: Invalid template" });
    expect(await msg91.send(sms)).toMatchObject({ ok: false, retryable: true });
    expect(await new Msg91Provider({ ...config(bucket), dltTemplateId: null }).send(sms)).toMatchObject({ ok: false, retryable: false, error: expect.stringContaining("DLT template id") });
    expect(await receiver.requests(bucket)).toHaveLength(2);
  });
});

describe("queued SMS: sent once, retried with backoff, refusals recorded", () => {
  it("retries 429 and 5xx with growing delays, then records the sid; a redelivered nudge sends nothing", async () => {
    const { panel } = await twilioPanel();
    const bucket = receiver.bucket("twilio");
    await receiver.script(bucket, [{ status: 429, body: "{}" }, { status: 500, body: "oops" }, { status: 201, body: '{"sid":"SM-retried"}' }]);
    const testEnv = { ...env, TWILIO_API_URL: receiver.hookUrl(bucket) } as any;
    const msgid = await waitingSms(panel);
    expect(await sendQueuedSms(testEnv, panel.id, msgid, 1)).toBe(5);
    expect(await messageRow(msgid)).toMatchObject({ status: "sending", claim: null });
    expect(await sendQueuedSms(testEnv, panel.id, msgid, 2)).toBe(10);
    expect(await sendQueuedSms(testEnv, panel.id, msgid, 3)).toBeNull();
    expect(await messageRow(msgid)).toMatchObject({ status: "sent", provider_msg_id: "SM-retried", error: null });
    expect(await sendQueuedSms(testEnv, panel.id, msgid, 4)).toBeNull();
    expect(await receiver.requests(bucket)).toHaveLength(3);
  });

  it("two deliveries of one nudge at once send one message; an attempt that died is not resent", async () => {
    const { panel } = await twilioPanel();
    const bucket = receiver.bucket("twilio");
    await receiver.script(bucket, [{ status: 201, body: '{"sid":"SM-once"}', delayMs: 300 }]);
    const testEnv = { ...env, TWILIO_API_URL: receiver.hookUrl(bucket) } as any;
    const msgid = await waitingSms(panel);
    const outcomes = await Promise.all([sendQueuedSms(testEnv, panel.id, msgid, 1), sendQueuedSms(testEnv, panel.id, msgid, 1)]);
    expect(outcomes.filter((o) => o === null).length).toBeGreaterThanOrEqual(1);
    expect(await receiver.requests(bucket)).toHaveLength(1);
    expect((await messageRow(msgid)).status).toBe("sent");

    const died = await waitingSms(panel);
    await panelData.prepare("UPDATE journey_messages SET claim = 'gone', claimed_at = ?, attempted_at = ? WHERE msgid = ?").bind(Date.now() - 120_000, Date.now() - 120_000, died).run();
    expect(await sendQueuedSms(testEnv, panel.id, died, 2)).toBeNull();
    expect(await messageRow(died)).toMatchObject({ status: "failed", error: expect.stringContaining("outcome unknown") });
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });

  it("records a refusal as failed with a failed event; an opted-out number is suppressed; a suppressed one is skipped", async () => {
    const { panel } = await twilioPanel();
    const bucket = receiver.bucket("twilio");
    await receiver.script(bucket, [
      { status: 400, body: '{"code":21211,"message":"The To number is not valid"}' },
      { status: 400, body: '{"code":21610,"message":"Attempt to send to unsubscribed recipient"}' },
    ]);
    const testEnv = { ...env, TWILIO_API_URL: receiver.hookUrl(bucket) } as any;
    const refused = await waitingSms(panel);
    expect(await sendQueuedSms(testEnv, panel.id, refused, 1)).toBeNull();
    expect(await messageRow(refused)).toMatchObject({ status: "failed", error: "Twilio answered 400 (code 21211): The To number is not valid" });
    const optedOut = await waitingSms(panel, "+14155550199");
    await sendQueuedSms(testEnv, panel.id, optedOut, 1);
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toEqual([{ phone: "14155550199", reason: "provider", created_at: expect.any(String) }]);
    const skipped = await waitingSms(panel, "+1 415 555 0199");
    await sendQueuedSms(testEnv, panel.id, skipped, 1);
    expect(await messageRow(skipped)).toMatchObject({ status: "skipped", error: expect.stringContaining("suppressed") });
    expect(await receiver.requests(bucket)).toHaveLength(2);
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'sms' AND name = 'failed'", panel.id)).toBe(2);
  });
});

describe("queued SMS of a journey stopped meanwhile", () => {
  it("a queued SMS whose journey was stopped before its nudge came (or while the provider throttled it) is skipped, not sent", async () => {
    const { panel } = await twilioPanel();
    await cartPanel(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "sms", type: "sms", text: "Wrong text" }] });
    const bucket = receiver.bucket("twilio");
    await receiver.script(bucket, [{ status: 429, body: "{}" }, { status: 201, body: '{"sid":"SM-late"}' }]);
    const testEnv = { ...env, TWILIO_API_URL: receiver.hookUrl(bucket) } as any;
    const throttled = await waitingSms(panel);
    const waiting = await waitingSms(panel, "+14155550101");
    await panelData.prepare("UPDATE journey_messages SET journey_id = ? WHERE msgid IN (?, ?)").bind(journey.id, throttled, waiting).run();
    // The first attempt is throttled and handed back; then the operator stops the journey.
    expect(await sendQueuedSms(testEnv, panel.id, throttled, 1)).toBe(5);
    expect((await admin("POST", `${journey.path}/status`, { status: "stopped" })).status).toBe(200);
    expect(await sendQueuedSms(testEnv, panel.id, throttled, 2)).toBeNull();
    expect(await sendQueuedSms(testEnv, panel.id, waiting, 1)).toBeNull();
    for (const msgid of [throttled, waiting]) expect(await messageRow(msgid)).toMatchObject({ status: "skipped", error: "not sent: the journey was stopped" });
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });
});

describe("queued SMS of a contact who reached the goal meanwhile", () => {
  it("is skipped, not sent, when its nudge comes after the goal", async () => {
    const { panel } = await twilioPanel();
    const { cart, buy } = await cartPanel(panel);
    const journey = await cartSmsGoalJourney(panel, "Still thinking it over?");
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", MOBILE } });
    await act(panel, cart, "ada@example.com");
    // The delay ends: the step records the SMS as waiting, its nudge kept back here.
    const sends = collectingQueue();
    await journeyTimers.run(withBindings(env, { SENDS: sends }), Date.now() + 2 * 60 * MINUTE);
    const [msgid] = sends.bodies.flatMap((body: any) => body.msgids) as string[];
    expect(await messageRow(msgid!)).toMatchObject({ status: "sending", claim: null });
    await act(panel, buy, "ada@example.com");
    expect(await countersOf(journey)).toMatchObject({ active: 0, converted: 1 });

    const bucket = receiver.bucket("twilio");
    await receiver.script(bucket, [{ status: 201, body: '{"sid":"SM-after-goal"}' }]);
    expect(await sendQueuedSms({ ...env, TWILIO_API_URL: receiver.hookUrl(bucket) } as any, panel.id, msgid!, 1)).toBeNull();
    expect(await messageRow(msgid!)).toMatchObject({ status: "skipped", error: "not sent: the contact left the journey (it reached the goal)", provider_msg_id: null });
    expect(await receiver.requests(bucket)).toHaveLength(0);
  });
});

describe("queued SMS of a journey paused meanwhile", () => {
  it("waits unsent while the journey is paused (the re-drive passes it by) and goes when it runs again; stopped instead, it is skipped", async () => {
    const { panel, accountSid } = await twilioPanel();
    await cartPanel(panel);
    const definition = { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "sms", type: "sms", text: "Back in stock" }] };
    const resumed = await startJourney(panel, definition);
    const stopped = await startJourney(panel, { ...definition, name: "Restock" });
    const held = await waitingSms(panel);
    const dropped = await waitingSms(panel, "+14155550101");
    // Queued well before: overdue, as far as the re-drive is concerned.
    const update = "UPDATE journey_messages SET journey_id = ?, created_at = ? WHERE msgid = ?";
    await panelData.batch([panelData.prepare(update).bind(resumed.id, Date.now() - 10 * 60_000, held), panelData.prepare(update).bind(stopped.id, Date.now() - 10 * 60_000, dropped)]);
    for (const journey of [resumed, stopped]) expect((await admin("POST", `${journey.path}/status`, { status: "paused" })).status).toBe(200);

    expect(await sendQueuedSms(env, panel.id, held, 1)).toBeNull();
    expect(await sendQueuedSms(env, panel.id, dropped, 1)).toBeNull();
    for (const msgid of [held, dropped]) expect(await messageRow(msgid)).toMatchObject({ status: "sending", claim: null, error: null });
    const sends = collectingQueue();
    await redriveWaitingSms.run(withBindings(env, { SENDS: sends }), Date.now());
    expect(sends.bodies.flatMap((body: any) => body.msgids).filter((m: string) => m === held || m === dropped)).toEqual([]);

    const sid = `SM${hex(16)}`;
    await receiver.script("twilio-api", [{ status: 201, body: JSON.stringify({ sid }) }]);
    expect((await admin("POST", `${resumed.path}/status`, { status: "running" })).status).toBe(200);
    await eventually(async () => ((await messageRow(held)).status === "sent" ? true : undefined));
    expect((await messageRow(held)).provider_msg_id).toBe(sid);

    expect((await admin("POST", `${stopped.path}/status`, { status: "stopped" })).status).toBe(200);
    expect(await sendQueuedSms(env, panel.id, dropped, 2)).toBeNull();
    expect(await messageRow(dropped)).toMatchObject({ status: "skipped", error: "not sent: the journey was stopped" });
    expect((await receiver.requests("twilio-api")).filter((r) => r.path.includes(accountSid))).toHaveLength(1);
  });
});

describe("queued SMS of a paused journey whose contact reached the goal meanwhile", () => {
  /** A delay, then the SMS (then a day's delay unless `last`); the SMS recorded as waiting, the journey paused, then the contact buys. */
  async function boughtWhilePaused(last: boolean) {
    const { panel, accountSid } = await twilioPanel();
    const { cart, buy } = await cartPanel(panel);
    const steps = [
      { id: "later", type: "delay", for: "1h" },
      { id: "sms", type: "sms", text: "Still thinking it over?", after: "later" },
      ...(last ? [] : [{ id: "again", type: "delay", for: "1d", after: "sms" }]),
    ];
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", MOBILE } });
    const { journey, msgid } = await goalReachedWhilePaused(panel, { cart, buy }, steps);
    // Its nudge while paused leaves it (a pause holds sending).
    expect(await sendQueuedSms(env, panel.id, msgid, 1)).toBeNull();
    return { panel, accountSid, journey, msgid };
  }

  /** Runs the journey again (its held SMS nudged) and waits for the SMS to be settled. */
  async function resume(journey: { path: string }, msgid: string) {
    await receiver.script("twilio-api", [{ status: 201, body: JSON.stringify({ sid: `SM${hex(16)}` }) }]);
    expect((await admin("POST", `${journey.path}/status`, { status: "running" })).status).toBe(200);
    await eventually(async () => ((await messageRow(msgid)).status !== "sending" ? true : undefined));
  }

  it("of an instance still in the journey: counted as converted at once, the SMS shown waiting until the resume, which skips it", async () => {
    const { accountSid, journey, msgid } = await boughtWhilePaused(false);
    expect(await countersOf(journey)).toMatchObject({ active: 0, exited: 1, converted: 1 });
    expect(await messageRow(msgid)).toMatchObject({ status: "sending", claim: null });
    await resume(journey, msgid);
    expect(await messageRow(msgid)).toMatchObject({ status: "skipped", error: "not sent: the contact left the journey (it reached the goal)", provider_msg_id: null });
    expect((await receiver.requests("twilio-api")).filter((r) => r.path.includes(accountSid))).toHaveLength(0);
  });

  it("of an instance its last step completed: skipped at the goal, not sent when the journey runs again; the instance stays completed, not converted", async () => {
    const { accountSid, journey, msgid } = await boughtWhilePaused(true);
    expect(await messageRow(msgid)).toMatchObject({ status: "skipped", error: "not sent: the contact reached the journey's goal", provider_msg_id: null });
    await resume(journey, msgid);
    expect(await messageRow(msgid)).toMatchObject({ status: "skipped", provider_msg_id: null });
    expect((await receiver.requests("twilio-api")).filter((r) => r.path.includes(accountSid))).toHaveLength(0);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, completed: 1, converted: 0 });
  });
});

describe("the SENDS consumer and the re-drive", () => {
  it("takes a batch of SMS nudges: a nudge whose message met a 503 is retried with backoff, the others acknowledged", async () => {
    const { panel } = await twilioPanel();
    const bucket = receiver.bucket("twilio");
    // Answers in arrival order: the first request gets the 503, whichever message it is.
    await receiver.script(bucket, [{ status: 503, body: "busy" }, { status: 201, body: '{"sid":"SM-a"}' }, { status: 201, body: '{"sid":"SM-b"}' }]);
    const testEnv = { ...env, TWILIO_API_URL: receiver.hookUrl(bucket) } as any;
    const first = await waitingSms(panel);
    const second = [await waitingSms(panel, "+14155550101"), await waitingSms(panel, "+14155550102")];
    const message = (msgids: string[], attempts: number) => ({ body: { kind: "sms", panelId: panel.id, msgids }, attempts, ack: vi.fn(), retry: vi.fn() });
    const batch = [message([first], 3), message(second, 1)];
    await handleSendsQueue({ queue: "apiv2-sends-default", messages: batch } as unknown as MessageBatch<unknown>, testEnv);
    const retried = batch.filter((m) => m.retry.mock.calls.length === 1);
    expect(retried).toHaveLength(1);
    expect(retried[0]!.ack).not.toHaveBeenCalled();
    expect(retried[0]!.retry).toHaveBeenCalledWith({ delaySeconds: retried[0] === batch[0] ? 20 : 5 });
    expect(batch.filter((m) => m.ack.mock.calls.length === 1)).toHaveLength(1);
    const rows = await Promise.all([first, ...second].map(messageRow));
    expect(rows.map((r) => r.status).sort()).toEqual(["sending", "sent", "sent"]);
    expect(await receiver.requests(bucket)).toHaveLength(3);
  });

  it("the cron nudges SMS whose nudge was lost, and the queue sends them", async () => {
    const { panel, accountSid } = await twilioPanel();
    const msgid = await waitingSms(panel);
    await panelData.prepare("UPDATE journey_messages SET created_at = ? WHERE msgid = ?").bind(Date.now() - 10 * 60_000, msgid).run();
    const sid = `SM${hex(16)}`;
    await receiver.script("twilio-api", [{ status: 201, body: JSON.stringify({ sid }) }]);
    await redriveWaitingSms.run(env, Date.now());
    await eventually(async () => ((await messageRow(msgid)).status === "sent" ? true : undefined));
    expect((await messageRow(msgid)).provider_msg_id).toBe(sid);
    expect((await receiver.requests("twilio-api")).filter((r) => r.path.includes(accountSid))).toHaveLength(1);
  });
});

describe("the journey of the issue: activity -> SMS through Twilio -> status callback -> wait ends -> webhook", () => {
  it("sends through the stand-in, verifies the callback, records delivered once, and fires the webhook; its short link redirects and counts a click", async () => {
    const { panel, accountSid, token, settings } = await twilioPanel();
    const { cart } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada", MOBILE } });
    const sid = `SM${hex(16)}`;
    await receiver.script("twilio-api", [{ status: 201, body: JSON.stringify({ sid, status: "queued" }) }]);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "sms", type: "sms", text: "Hi {{NAME | there}}, your cart: https://shop.example.com/cart?id=7." },
        { id: "wait", type: "wait_for_event", after: "sms", events: ["delivered"], within: "1d" },
        { id: "hook", type: "webhook", after: "wait", on: "event", webhook: hook.id, params: { Action: "delivered" } },
      ],
    });
    await act(panel, cart, "ada@example.com");

    const request = await eventually(async () => (await receiver.requests("twilio-api")).find((r) => r.path.includes(accountSid)));
    const form = Object.fromEntries(new URLSearchParams(request.body));
    expect(request.headers.authorization).toBe(`Basic ${btoa(`${accountSid}:${token}`)}`);
    expect(form).toMatchObject({ To: MOBILE, From: "+15005550006", StatusCallback: settings.delivery_report_url });
    expect(form.Body).toMatch(/^Hi Ada, your cart: http:\/\/127\.0\.0\.1:8787\/s\/[A-Za-z0-9_-]{12}\.$/);
    const sent = await eventually(async () => {
      const [m] = await messagesOf(panel, "sms");
      return m?.status === "sent" ? m : undefined;
    });
    expect(sent.content).toMatchObject({ body: form.Body, length: { encoding: "GSM-7", segments: 1 } });

    // Callbacks that are not Twilio's change nothing.
    const callback = { MessageSid: sid, MessageStatus: "delivered", AccountSid: accountSid, To: MOBILE };
    expect((await postTwilio(settings.delivery_report_url, token, callback, "forged")).status).toBe(403);
    expect((await postTwilio(settings.delivery_report_url.replace(/[^/]+$/, "x".repeat(32)), token, callback)).status).toBe(404);
    expect((await postTwilio(settings.delivery_report_url, token, { ...callback, MessageStatus: "sent" })).status).toBe(200);
    await pipelineSettled(panel.id);
    expect(await delivered(hook)).toEqual([]);

    expect(await postTwilio(settings.delivery_report_url, token, callback)).toEqual({ status: 200, text: "ok" });
    await pipelineSettled(panel.id);
    const events = await delivered(hook);
    expect(events).toEqual([expect.objectContaining({ channel: "sms", event: "delivered", msgid: sent.msgid, custom_params: { Action: "delivered" } })]);
    // Repeated and unknown receipts change nothing.
    expect((await postTwilio(settings.delivery_report_url, token, callback)).status).toBe(200);
    expect((await postTwilio(settings.delivery_report_url, token, { ...callback, MessageStatus: "failed" })).status).toBe(200);
    expect(await postTwilio(settings.delivery_report_url, token, { ...callback, MessageSid: "SMunknown" })).toEqual({ status: 200, text: "ok: no such message" });
    await pipelineSettled(panel.id);
    expect(await delivered(hook)).toHaveLength(1);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'sms' AND name IN ('delivered', 'failed')", panel.id)).toBe(1);
    expect((await messageRow(sent.msgid)).delivery).toBe("delivered");

    // The short link: a visit redirects to the carried link and records a click; HEAD records nothing.
    const code = /\/s\/([A-Za-z0-9_-]{12})/.exec(form.Body!)![1]!;
    const visit = await call(`/s/${code}`, { headers: { "user-agent": "Phone/1" }, redirect: "manual" });
    expect(visit.status).toBe(302);
    expect(visit.headers.get("location")).toBe("https://shop.example.com/cart?id=7");
    expect((await call(`/s/${code}`, { method: "HEAD", redirect: "manual" })).status).toBe(302);
    expect((await call(`/s/${"A".repeat(12)}`)).status).toBe(404);
    expect((await call("/s/not-a-code")).status).toBe(404);
    await pipelineSettled(panel.id);
    const clicks = await panelData.prepare("SELECT msgid, params FROM events WHERE panel_id = ? AND channel = 'sms' AND name = 'click'").bind(panel.id).all<{ msgid: string; params: string }>();
    expect(clicks.results).toHaveLength(1);
    expect(clicks.results[0]!.msgid).toBe(sent.msgid);
    expect(JSON.parse(clicks.results[0]!.params)).toMatchObject({ url: "https://shop.example.com/cart?id=7", user_agent: "Phone/1" });
  });
});

describe("replies and MSG91 delivery reports", () => {
  it("a STOP reply suppresses the number; the next journey SMS to it is skipped; START lifts it", async () => {
    const { panel, token, settings } = await twilioPanel();
    const reply = { MessageSid: `SM${hex(16)}`, From: MOBILE, To: "+15005550006", Body: " Stop " };
    expect((await postTwilio(settings.replies_url, token, reply, "forged")).status).toBe(403);
    expect(await postTwilio(settings.replies_url, token, reply)).toEqual({ status: 200, text: "<Response/>" });
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toMatchObject([{ phone: "14155550100", reason: "stop" }]);

    const { cart } = await cartPanel(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", MOBILE } });
    await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "sms", type: "sms", text: "Hello" }] });
    await act(panel, cart, "ada@example.com");
    expect(await messagesOf(panel, "sms")).toMatchObject([{ status: "skipped", error: expect.stringContaining("suppressed") }]);

    expect((await postTwilio(settings.replies_url, token, { ...reply, Body: "START" })).status).toBe(200);
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toEqual([]);
  });

  it("an operator stops and resumes a number; a START reply never lifts an operator's stop", async () => {
    const { panel, token, settings } = await twilioPanel();
    const path = `/panels/${panel.id}/sms/suppressions/14155550100`;
    expect(await admin("PUT", path)).toMatchObject({ status: 200, body: { phone: "14155550100", suppressed: true } });
    expect((await postTwilio(settings.replies_url, token, { MessageSid: `SM${hex(16)}`, From: MOBILE, To: "+15005550006", Body: "START" })).status).toBe(200);
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toMatchObject([{ phone: "14155550100", reason: "operator" }]);
    expect(await admin("DELETE", path)).toMatchObject({ status: 200, body: { phone: "14155550100", suppressed: false } });
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toEqual([]);
    const again = await admin("DELETE", path);
    expect(again.status).toBe(404);
    expect(JSON.stringify(again.body)).toContain("The number 14155550100 is not suppressed in this panel");
  });

  it("an operator's stop of a number that sent STOP replaces it: the number's START does not lift it", async () => {
    const { panel, token, settings } = await twilioPanel();
    const reply = (Body: string) => postTwilio(settings.replies_url, token, { MessageSid: `SM${hex(16)}`, From: MOBILE, To: "+15005550006", Body });
    expect((await reply("STOP")).status).toBe(200);
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toMatchObject([{ phone: "14155550100", reason: "stop" }]);
    expect(await admin("PUT", `/panels/${panel.id}/sms/suppressions/14155550100`)).toMatchObject({ status: 200, body: { suppressed: true } });
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toMatchObject([{ phone: "14155550100", reason: "operator" }]);
    expect((await reply("START")).status).toBe(200);
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toMatchObject([{ phone: "14155550100", reason: "operator" }]);
    // A later STOP does not soften it back.
    expect((await reply("STOP")).status).toBe(200);
    expect((await reply("START")).status).toBe(200);
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toMatchObject([{ phone: "14155550100", reason: "operator" }]);
  });

  it("MSG91 reports reach the panel by their secret path and become delivered events once", async () => {
    const panel = await createPanel();
    const put = await admin("PUT", `/panels/${panel.id}/sms`, { provider: "msg91", authkey: "key-1", sender_id: "SHOPIN", template_id: "flow-1", dlt_template_id: "1107160000000000001" });
    expect(put.status).toBe(200);
    const msgid = await waitingSms(panel, "+919800000001");
    await panelData.prepare("UPDATE journey_messages SET status = 'sent', provider_msg_id = 'req-91' WHERE msgid = ?").bind(msgid).run();
    const path = new URL(put.body.delivery_report_url).pathname;
    const report = (requestId: string, status = "1") => `data=${encodeURIComponent(JSON.stringify([{ senderId: "SHOPIN", requestId, report: [{ date: "2026-11-23 10:00:00", number: "919800000001", status, desc: "DELIVERED" }] }]))}`;
    const post = (to: string, body: string, type = "application/x-www-form-urlencoded") => call(to, { method: "POST", headers: { "content-type": type }, body });
    expect((await post(path.replace(/[^/]+$/, "y".repeat(32)), report("req-91"))).status).toBe(404);
    expect((await post(path, "data=not-json")).status).toBe(400);
    expect((await post(path, report("req-91"))).status).toBe(200);
    expect((await post(path, report("req-91"))).status).toBe(200);
    expect((await post(path, JSON.stringify({ requestId: "req-91", status: "DELIVERED", number: "919800000001" }), "application/json")).status).toBe(200);
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'sms' AND name = 'delivered' AND msgid = ?", panel.id, msgid)).toBe(1);
    expect((await messageRow(msgid)).delivery).toBe("delivered");
    // An NDNC report (the number is on India's do-not-disturb registry) suppresses it.
    const other = await waitingSms(panel, "+919800000002");
    await panelData.prepare("UPDATE journey_messages SET status = 'sent', provider_msg_id = 'req-92', recipient = '919800000002' WHERE msgid = ?").bind(other).run();
    expect((await post(path, report("req-92", "9"))).status).toBe(200);
    expect((await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions).toMatchObject([{ phone: "919800000002", reason: "provider" }]);
  });

  it("an MSG91 report of objects where words belong, or of thousands of reports, is read without fault, one delivery and one event a message", async () => {
    const panel = await createPanel();
    const put = await admin("PUT", `/panels/${panel.id}/sms`, { provider: "msg91", authkey: "key-1", sender_id: "SHOPIN", template_id: "flow-1", dlt_template_id: "1107160000000000001" });
    const path = new URL(put.body.delivery_report_url).pathname;
    const msgid = await waitingSms(panel, "+919800000005");
    await panelData.prepare("UPDATE journey_messages SET status = 'sent', provider_msg_id = 'req-95' WHERE msgid = ?").bind(msgid).run();
    const post = async (body: unknown) => {
      const response = await call(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      return { status: response.status, text: await response.text() };
    };
    // A status or description that is an object (with a `toString` member of its own) is no word: the report is acknowledged and records nothing.
    expect(await post({ requestId: "req-95", status: { toString: 1, valueOf: 1 }, desc: { toString: 1 } })).toEqual({ status: 200, text: "ok" });
    expect((await messageRow(msgid)).delivery).toBeNull();
    // Ten thousand reports of unknown messages and thousands of one message: one delivery and one event for it.
    const unknown = Array.from({ length: 10_000 }, (_, i) => ({ requestId: `req-x${i}`, status: "1" }));
    const repeated = { requestId: "req-95", report: Array.from({ length: 5_000 }, (_, i) => ({ number: "919800000005", status: i === 0 ? "8" : i % 2 ? "1" : "2" })) };
    expect(await post([...unknown, repeated])).toEqual({ status: 200, text: "ok" });
    await pipelineSettled(panel.id);
    expect((await messageRow(msgid)).delivery).toBe("delivered");
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'sms' AND msgid = ?", panel.id, msgid)).toBe(1);
  });

  it("MSG91 replies, as a form or as JSON: STOP suppresses the number, START lifts it, a reply without a number is refused", async () => {
    const panel = await createPanel();
    const put = await admin("PUT", `/panels/${panel.id}/sms`, { provider: "msg91", authkey: "key-1", sender_id: "SHOPIN", template_id: "flow-1", dlt_template_id: "1107160000000000001" });
    const path = `${new URL(put.body.delivery_report_url).pathname}/replies`;
    const post = async (body: string, type: string) => {
      const response = await call(path, { method: "POST", headers: { "content-type": type }, body });
      return { status: response.status, text: await response.text() };
    };
    const suppressions = async () => (await admin("GET", `/panels/${panel.id}/sms/suppressions`)).body.suppressions;
    expect(await post("message=hello", "application/x-www-form-urlencoded")).toEqual({ status: 400, text: "the reply names no number (mobile or number)" });
    expect(await post("Mobile=919800000003&Message=STOP", "application/x-www-form-urlencoded")).toEqual({ status: 200, text: "ok" });
    expect(await suppressions()).toMatchObject([{ phone: "919800000003", reason: "stop" }]);
    expect(await post(JSON.stringify({ number: 919800000003, keyword: "start" }), "application/json")).toEqual({ status: 200, text: "ok" });
    expect(await suppressions()).toEqual([]);
  });
});

describe("SMS templates", () => {
  it("shows length, encoding and segments; a journey step sends the template filled; India requires the DLT template id", async () => {
    const { panel } = await twilioPanel();
    const created = await admin("POST", `/panels/${panel.id}/sms/templates`, { name: "Cart", body: "Hi {{NAME | there}}, your cart waits.", dlt_template_id: "1107160000000000042" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ merge_tags: ["NAME"], length: { encoding: "GSM-7", characters: 26, segments: 1 }, dlt_template_id: "1107160000000000042" });
    const hindi = await admin("POST", `/panels/${panel.id}/sms/templates`, { name: "Hindi", body: "नमस्ते {{NAME}}! ".repeat(10) });
    expect(hindi.body.length).toMatchObject({ encoding: "UCS-2", segments: 2 });
    expect((await admin("POST", `/panels/${panel.id}/sms/templates`, { name: "x", body: "" })).status).toBe(400);
    const bad = await admin("POST", `/panels/${panel.id}/sms/templates`, { name: "x", body: "y", dlt_template_id: "12" });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain("dlt_template_id");
    const india = await routeRequest(
      new Request(`https://api.test/admin/v1/panels/${panel.id}/sms/templates`, { method: "POST", headers: { authorization: `Bearer ${env.ADMIN_TOKEN}`, "content-type": "application/json" }, body: '{"name":"x","body":"y"}' }),
      { ...env, REGION: "india" },
      createExecutionContext(),
    );
    expect(india.status).toBe(400);
    expect(JSON.stringify(await india.json())).toContain("dlt_template_id");
    expect((await admin("POST", `/panels/${panel.id}/sms/preview`, { template: created.body.id, attributes: { name: "Ada" } })).body).toEqual({
      text: "Hi Ada, your cart waits.",
      length: { encoding: "GSM-7", characters: 24, units: 24, segments: 1 },
    });
    expect((await admin("GET", `/panels/${panel.id}/sms/templates`)).body.templates).toHaveLength(2);
    expect((await admin("PUT", `/panels/${panel.id}/sms/templates/${created.body.id}`, { name: "Cart", body: "Hey {{NAME | there}}!", dlt_template_id: "1107160000000000042" })).status).toBe(200);

    // A step naming the template: the message carries the filled body and the template's DLT id.
    const { cart } = await cartPanel(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "bo@example.com", NAME: "Bo", MOBILE: "+14155550123" } });
    const missing = await admin("POST", `/panels/${panel.id}/journeys`, { name: "T", trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "s", type: "sms", text: "a", template: "b" }] });
    expect(missing.status).toBe(400);
    // A template the panel does not have is named when the journey is saved, not found missing at send time.
    const unknown = await admin("POST", `/panels/${panel.id}/journeys`, { name: "T", trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "s", type: "sms", template: "smt_nope" }] });
    expect([unknown.status, unknown.body.errors]).toEqual([400, [{ field: "steps.0.template", message: 'no SMS template with id "smt_nope" in this panel' }]]);
    const other = await createPanel();
    const othersTemplate = (await admin("POST", `/panels/${other.id}/sms/templates`, { name: "Theirs", body: "Not yours" })).body.id;
    const foreign = await admin("POST", `/panels/${panel.id}/journeys`, { name: "T", trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "s", type: "sms", template: othersTemplate }] });
    expect([foreign.status, foreign.body.errors[0].field]).toEqual([400, "steps.0.template"]);
    await receiver.script("twilio-api", [{ status: 201, body: '{"sid":"SM-template"}' }]);
    await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "s", type: "sms", template: created.body.id }] });
    await act(panel, cart, "bo@example.com");
    const [message] = await messagesOf(panel, "sms");
    expect(message.content).toMatchObject({ body: "Hey Bo!", dlt_template_id: "1107160000000000042" });
    expect((await admin("DELETE", `/panels/${panel.id}/sms/templates/${created.body.id}`)).status).toBe(200);
    expect((await admin("GET", `/panels/${panel.id}/sms/templates/${created.body.id}`)).status).toBe(404);
  });
});
