import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { publishDueBroadcasts } from "../../../../src/services/broadcasts/publish";
import { handleSendsQueue, sendCampaignBatch, type SendNudge } from "../../../../src/services/broadcasts/send";
import { sendJourneyEmail } from "../../../../src/services/journeys/messages";
import { emailProvider, emailSetup, publicBaseUrlProblem } from "../../../../src/services/channels/email/providers";
import { SesProvider } from "../../../../src/services/channels/email/ses";
import { readSesNotification, sesNotificationOf } from "../../../../src/services/channels/email/ses-notifications";
import { routeRequest } from "../../../../src/http/router";
import { getCampaign } from "../../../../src/store/campaigns/definitions";
import { publishCampaign } from "../../../../src/store/campaigns/publish";
import { getContactByKey } from "../../../../src/store/contacts";
import { isAddressSuppressed } from "../../../../src/store/suppressions";
import { admin, apiFor, call, countRows, createPanel, receiver, PUBLIC_HTTPS, panelData, type TestPanel } from "../../../support/helpers";
import { unsubscribeUris } from "../../../support/mime";
import { broadcastData, campaign, publish, scheduleIn, waitForImport } from "../../../support/broadcasts";
import { pipelineSettled } from "../../../support/activity";
import { verifiedSenderDomain } from "../../../support/dns";
import { otherPrivateKey, signedSns } from "../../../support/sns";

const CREDENTIALS = { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" };
const message = { id: "cmp_x.1", panelId: "pnl_x", campaignId: "cmp_x", from: "shop@example.com", to: "ada@example.com", subject: "Hi", raw: "Subject: Hi\r\n\r\nbody\r\n" };

function decodeBase64(text: string): string {
  return new TextDecoder().decode(Uint8Array.from(atob(text), (c) => c.charCodeAt(0)));
}

describe("Amazon SES v2 adapter, against a local stand-in of its API", () => {
  it("sends the raw message with a SigV4 signature and returns SES's message id", async () => {
    const bucket = receiver.bucket("ses");
    await receiver.script(bucket, [{ status: 200, headers: { "content-type": "application/json" }, body: '{"MessageId":"0100018c-ses-id"}' }]);
    const ses = new SesProvider({ ...CREDENTIALS, region: "eu-west-1", endpoint: receiver.hookUrl(bucket), configurationSet: "marketing" });
    expect(await ses.send([message])).toEqual([{ ok: true, providerMessageId: "0100018c-ses-id" }]);
    const [request] = await receiver.requests(bucket);
    expect(request!.method).toBe("POST");
    expect(request!.path).toBe(`/hooks/${bucket}/v2/email/outbound-emails`);
    expect(request!.headers.authorization).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/ses\/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$/);
    expect(request!.headers["x-amz-date"]).toMatch(/^\d{8}T\d{6}Z$/);
    const body = JSON.parse(request!.body);
    expect(body).toMatchObject({ FromEmailAddress: "shop@example.com", Destination: { ToAddresses: ["ada@example.com"] }, ConfigurationSetName: "marketing" });
    expect(decodeBase64(body.Content.Raw.Data)).toBe(message.raw);
  });

  it("tells retryable failures (throttling, 5xx) from permanent ones", async () => {
    const bucket = receiver.bucket("ses");
    await receiver.script(bucket, [
      { status: 429, body: '{"message":"Maximum sending rate exceeded"}' },
      { status: 503, body: "unavailable" },
      { status: 400, body: '{"message":"Email address is not verified"}' },
    ]);
    const ses = new SesProvider({ ...CREDENTIALS, region: "us-east-1", endpoint: receiver.hookUrl(bucket) });
    const results = [];
    for (let i = 0; i < 3; i++) results.push(...(await ses.send([message])));
    expect(results.map((r) => (r.ok ? "ok" : r.retryable))).toEqual([true, true, false]);
    expect(results[2]).toMatchObject({ error: expect.stringContaining("not verified") });
  });

  it("is chosen by EMAIL_PROVIDER and needs its secrets", () => {
    expect(emailProvider(env).name).toBe("outbox");
    expect(() => emailProvider({ ...env, EMAIL_PROVIDER: "ses", PUBLIC_BASE_URL: PUBLIC_HTTPS })).toThrow(/SES_ACCESS_KEY_ID/);
    expect(emailProvider({ ...env, EMAIL_PROVIDER: "ses", PUBLIC_BASE_URL: PUBLIC_HTTPS, SES_ACCESS_KEY_ID: "a", SES_SECRET_ACCESS_KEY: "b" }).name).toBe("ses");
    expect(() => emailProvider({ ...env, EMAIL_PROVIDER: "carrier-pigeon" })).toThrow(/not one of/);
  });
});

describe("real email needs a public https PUBLIC_BASE_URL", () => {
  const ses = { ...env, EMAIL_PROVIDER: "ses", SES_ACCESS_KEY_ID: "a", SES_SECRET_ACCESS_KEY: "b" };

  it("refuses a real provider while the links would be http or point at a private host; the outbox is not refused", () => {
    expect(publicBaseUrlProblem("http://links.example.com")).toBe("PUBLIC_BASE_URL is http://links.example.com: links in real email must use https");
    for (const origin of ["https://127.0.0.1:8787", "https://localhost", "https://10.1.2.3", "https://[::1]", "https://mailhost"]) {
      expect(publicBaseUrlProblem(origin)).toMatch(/^PUBLIC_BASE_URL is https:\/\/\S+: its host must .*, so recipients could not open its links$/);
    }
    expect(publicBaseUrlProblem("not a url")).toBe('PUBLIC_BASE_URL "not a url" is not a URL');
    expect(publicBaseUrlProblem(PUBLIC_HTTPS)).toBeNull();
    expect(() => emailProvider(ses)).toThrow("EMAIL_PROVIDER is ses, but real email is refused: PUBLIC_BASE_URL is http://127.0.0.1:8787: links in real email must use https");
    expect(emailProvider(env).name).toBe("outbox");
    expect(emailSetup(env)).toEqual({ provider: "outbox", realEmail: false, problem: null });
    expect(emailSetup({ ...ses, PUBLIC_BASE_URL: PUBLIC_HTTPS })).toEqual({ provider: "ses", realEmail: true, problem: null });
  });

  it("a campaign batch is not sent and stays queued for the retry; the panel's overview says why", async () => {
    const panel = await createPanel();
    const created = await publish(panel, await broadcastData({ schedule_date: scheduleIn(60 * 24 * 40) }, "EMAIL\nada@example.com\n"));
    const id = created.body.CampaignID;
    await waitForImport(panel, id);
    const stored = (await getCampaign(panelData, panel.id, id))!;
    await publishCampaign(panelData, stored, 100, stored.sendAt);
    const bucket = receiver.bucket("ses");
    const sesEnv = { ...ses, SES_ENDPOINT: receiver.hookUrl(bucket) };
    const batch = createMessageBatch("apiv2-sends-default", [{ id: "batch-0", timestamp: new Date(), attempts: 1, body: { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 } }]);
    await expect(handleSendsQueue(batch, sesEnv as unknown as Env)).rejects.toThrow(/PUBLIC_BASE_URL is http:\/\/127\.0\.0\.1:8787/);
    // Neither acknowledged nor retried one by one: the thrown batch is redelivered whole.
    expect(await getQueueResult(batch, createExecutionContext())).toMatchObject({ explicitAcks: [], retryMessages: [] });
    expect(await receiver.requests(bucket)).toEqual([]);
    expect((await campaign(panel, id)).counters).toMatchObject({ queued: 1, sent: 0 });
    const overview = await routeRequest(
      new Request(`https://api.test/admin/v1/panels/${panel.id}/overview`, { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }),
      sesEnv as unknown as Env,
      createExecutionContext(),
    );
    expect((await overview.json<{ email: unknown }>()).email).toEqual({
      provider: "ses",
      real_email: false,
      problem: "real email is refused: PUBLIC_BASE_URL is http://127.0.0.1:8787: links in real email must use https",
    });
  });
});

/** A deployment that sends through SES (its local stand-in at the receiver's `bucket`) and takes SNS notifications. */
const sesEnvOf = (bucket: string) => ({
  ...env,
  EMAIL_PROVIDER: "ses",
  PUBLIC_BASE_URL: PUBLIC_HTTPS,
  SES_ENDPOINT: receiver.hookUrl(bucket),
  SES_ACCESS_KEY_ID: "a",
  SES_SECRET_ACCESS_KEY: "b",
  SES_SNS_TOKEN: "sns-secret-token",
});

/** A campaign to the CSV's addresses whose one batch goes out through `sesEnv`; its id. */
async function sendThroughSes(panel: TestPanel, sesEnv: ReturnType<typeof sesEnvOf>, csv: string, recipients: number): Promise<string> {
  const created = await publish(panel, await broadcastData({ schedule_date: scheduleIn(60 * 24 * 40) }, csv));
  const id = created.body.CampaignID;
  await waitForImport(panel, id);
  // Published directly (no queue nudge), so that the SES provider, not the test queue's outbox, sends.
  const stored = (await getCampaign(panelData, panel.id, id))!;
  expect(await publishCampaign(panelData, stored, 100, stored.sendAt)).toBe(recipients);
  await sendCampaignBatch(sesEnv, emailProvider(sesEnv), { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 });
  return id;
}

/** A panel with a verified sender domain and a campaign to ada@example.com sent through SES, which names it `messageId`. */
async function sentToAda(messageId: string) {
  const bucket = receiver.bucket("ses");
  await receiver.script(bucket, [{ status: 200, body: JSON.stringify({ MessageId: messageId }) }]);
  const sesEnv = sesEnvOf(bucket);
  const panel = await createPanel();
  await verifiedSenderDomain(panel.id);
  const id = await sendThroughSes(panel, sesEnv, "EMAIL\nada@example.com\n", 1);
  return { bucket, sesEnv, panel, id };
}

describe("a campaign sent through SES, and its bounces", () => {
  it("records SES message ids, then suppresses a hard-bounced address from the SNS notification", async () => {
    const bucket = receiver.bucket("ses");
    await receiver.script(bucket, [
      { status: 200, body: '{"MessageId":"ses-msg-1"}' },
      { status: 200, body: '{"MessageId":"ses-msg-2"}' },
    ]);
    const sesEnv = sesEnvOf(bucket);
    const panel = await createPanel();
    await verifiedSenderDomain(panel.id);
    const id = await sendThroughSes(panel, sesEnv, "EMAIL\nada@example.com\nbob@example.com\n", 2);
    const requests = await receiver.requests(bucket);
    expect(requests).toHaveLength(2);
    // The raw message SES gets is the DKIM-signed one, from the panel's verified domain.
    expect(decodeBase64(JSON.parse(requests[0]!.body).Content.Raw.Data)).toMatch(/^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=example\.com; s=apiv2r;/);
    expect((await campaign(panel, id)).counters).toMatchObject({ sent: 2 });
    const sentTo = await panelData.prepare("SELECT address FROM campaign_messages WHERE provider_msg_id = 'ses-msg-1'").first<{ address: string }>();

    const notification = async (token: string, body: Record<string, unknown>) =>
      routeRequest(new Request(`https://api.test/hooks/email/ses/${token}`, { method: "POST", body: JSON.stringify(await signedSns(body)) }), sesEnv, createExecutionContext());
    const bounce = {
      Type: "Notification",
      Message: JSON.stringify({
        notificationType: "Bounce",
        mail: { messageId: "ses-msg-1" },
        bounce: { bounceType: "Permanent", bounceSubType: "General", bouncedRecipients: [{ emailAddress: sentTo!.address }] },
      }),
    };
    expect((await notification("wrong-token", bounce)).status).toBe(404);
    expect((await campaign(panel, id)).counters.bounces).toBe(0);
    expect((await notification("sns-secret-token", bounce)).status).toBe(200);
    expect((await campaign(panel, id)).counters.bounces).toBe(1);
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ? AND address = ? AND reason = 'hard_bounce'", panel.id, sentTo!.address)).toBe(1);
    await pipelineSettled(panel.id);
    expect(await countRows("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND channel = 'email' AND name = 'bounce'", panel.id)).toBe(1);

    // A transient bounce is counted but suppresses nothing; a delivery notice is acknowledged.
    const soft = { Type: "Notification", Message: JSON.stringify({ notificationType: "Bounce", mail: { messageId: "ses-msg-2" }, bounce: { bounceType: "Transient", bouncedRecipients: [] } }) };
    expect((await notification("sns-secret-token", soft)).status).toBe(200);
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ?", panel.id)).toBe(1);
    const delivery = { Type: "Notification", Message: JSON.stringify({ notificationType: "Delivery", mail: { messageId: "ses-msg-2" } }) };
    expect((await notification("sns-secret-token", delivery)).status).toBe(200);
    // A subscription confirmation pointing anywhere but SNS is refused, not fetched, even signed.
    expect((await notification("sns-secret-token", { Type: "SubscriptionConfirmation", SubscribeURL: "https://evil.example.net/confirm" })).status).toBe(400);
    // SNS's own URL (the receiver stands in for SNS) is fetched: confirmed when SNS answers, 502 (SNS asks again) when it refuses or cannot be reached.
    const sns = receiver.bucket("sns");
    await receiver.script(sns, [
      { status: 200, body: "<ConfirmSubscriptionResponse/>" },
      { status: 403, body: "denied" },
    ]);
    const confirmation = { Type: "SubscriptionConfirmation", SubscribeURL: `${receiver.hookUrl(sns)}/?Action=ConfirmSubscription&TopicArn=arn:aws:sns:eu-west-1:123456789012:ses-feedback&Token=t` };
    const confirmed = await notification("sns-secret-token", confirmation);
    expect([confirmed.status, await confirmed.text()]).toEqual([200, "subscribed"]);
    expect((await receiver.requests(sns)).map((request) => [request.method, `${env.RECEIVER_URL}${request.path}`])).toEqual([["GET", confirmation.SubscribeURL]]);
    expect((await notification("sns-secret-token", confirmation)).status).toBe(502);
    // SNS unreachable: only the confirmation's fetch fails (the signing certificate is still fetched).
    const realFetch = globalThis.fetch;
    const fetched = vi
      .spyOn(globalThis, "fetch")
      .mockImplementation((input, init) => (String(input) === confirmation.SubscribeURL ? Promise.reject(new TypeError("getaddrinfo ENOTFOUND sns.eu-west-1.amazonaws.com")) : realFetch(input, init)));
    try {
      const unreachable = await notification("sns-secret-token", confirmation);
      expect([unreachable.status, await unreachable.text()]).toEqual([502, "subscription not confirmed"]);
    } finally {
      fetched.mockRestore();
    }
  });
});

describe("SNS message signatures on the SES endpoint", () => {
  /** A hard bounce of SES message `messageId` to ada@example.com, as SNS's Notification carries it. */
  const hardBounce = (messageId: string) => ({
    Type: "Notification",
    Subject: "Amazon SES Email Event Notification",
    Message: JSON.stringify({ notificationType: "Bounce", mail: { messageId }, bounce: { bounceType: "Permanent", bounceSubType: "General", bouncedRecipients: [{ emailAddress: "ada@example.com" }] } }),
  });

  /** Posts `body` to `deployment`'s SES endpoint; the answer's status and text. */
  const post = async (deployment: ReturnType<typeof sesEnvOf>, body: Record<string, unknown>) => {
    const response = await routeRequest(new Request("https://api.test/hooks/email/ses/sns-secret-token", { method: "POST", body: JSON.stringify(body) }), deployment, createExecutionContext());
    return [response.status, await response.text()];
  };

  it("a message not signed by SNS (no or a wrong signature, an unknown version, a certificate from elsewhere or none to fetch) is refused and changes nothing", async () => {
    const { sesEnv, panel, id } = await sentToAda("ses-signed-1");
    const unchanged = async () => {
      expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ?", panel.id)).toBe(0);
      expect((await campaign(panel, id)).counters).toMatchObject({ sent: 1, bounces: 0 });
    };
    const bounce = hardBounce("ses-signed-1");
    const signed = await signedSns(bounce);
    const { Signature: _, ...unsigned } = signed;

    // What the endpoint took before: the path token alone, no signature.
    expect(await post(sesEnv, bounce)).toEqual([403, 'the SNS signature is refused: SignatureVersion null is not 1 or 2']);
    expect(await post(sesEnv, unsigned)).toEqual([403, "the SNS signature is refused: Signature is missing or not base64"]);
    // Signed, then changed on the way.
    const transient = await signedSns({ ...bounce, Message: bounce.Message.replace("Permanent", "Transient") });
    expect(await post(sesEnv, { ...transient, Message: bounce.Message })).toEqual([403, "the SNS signature is refused: the signature does not match the message"]);
    expect(await post(sesEnv, { ...signed, Subject: "another subject" })).toEqual([403, "the SNS signature is refused: the signature does not match the message"]);
    expect(await post(sesEnv, { ...signed, MessageId: undefined })).toEqual([403, "the SNS signature is refused: a field the Notification signs is missing"]);
    // A forger's key, naming SNS's (the test) certificate; a version that says SHA-1 over a SHA-256 signature; a version SNS does not have.
    expect(await post(sesEnv, await signedSns(bounce, { privateKey: await otherPrivateKey() }))).toEqual([403, "the SNS signature is refused: the signature does not match the message"]);
    expect(await post(sesEnv, { ...(await signedSns(bounce, { version: "2" })), SignatureVersion: "1" })).toEqual([403, "the SNS signature is refused: the signature does not match the message"]);
    expect(await post(sesEnv, await signedSns(bounce, { version: "3" }))).toEqual([403, 'the SNS signature is refused: SignatureVersion "3" is not 1 or 2']);
    await unchanged();

    // A certificate anywhere but SNS is not fetched: another host, or not a .pem on SNS's (here the receiver's) own origin.
    const elsewhere = receiver.bucket("cert");
    const offHost = "the SNS signature is refused: SigningCertURL is not an Amazon SNS certificate (.pem) URL";
    expect(await post(sesEnv, await signedSns(bounce, { certUrl: "https://evil.example.net/SimpleNotificationService-0123.pem" }))).toEqual([403, offHost]);
    expect(await post(sesEnv, await signedSns(bounce, { certUrl: `${receiver.hookUrl(elsewhere)}/cert.txt` }))).toEqual([403, offHost]);
    expect(await post(sesEnv, { ...signed, SigningCertURL: 42 })).toEqual([403, offHost]);
    // Without SES_SNS_ORIGIN (production): https on sns.<region>.amazonaws.com only, so the receiver's http origin is refused too.
    const production = { ...sesEnv, SES_SNS_ORIGIN: "" };
    for (const certUrl of [
      "http://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123.pem",
      "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0123.txt",
      "https://sns.eu-west-1.amazonaws.com.evil.example.net/SimpleNotificationService-0123.pem",
      "https://sns.eu-west-1.amazonaws.com:8443/SimpleNotificationService-0123.pem",
      `${receiver.hookUrl(elsewhere)}/cert.pem`,
    ]) {
      expect(await post(production, await signedSns(bounce, { certUrl }))).toEqual([403, offHost]);
    }
    expect(await receiver.requests(elsewhere)).toEqual([]);
    await unchanged();

    // SNS's certificate cannot be had: 502, which SNS retries.
    await receiver.script(elsewhere, [
      { status: 503, body: "unavailable" },
      { status: 200, body: "not a certificate" },
      { status: 302, headers: { location: "https://evil.example.net/cert.pem" } },
    ]);
    const certOf = (name: string) => ({ certUrl: `${receiver.hookUrl(elsewhere)}/${name}.pem` });
    expect(await post(sesEnv, await signedSns(bounce, certOf("a")))).toEqual([502, "the SNS signature could not be checked: the signing certificate could not be fetched (HTTP 503)"]);
    expect(await post(sesEnv, await signedSns(bounce, certOf("b")))).toEqual([502, expect.stringMatching(/^the SNS signature could not be checked: the signing certificate could not be read \(/)]);
    expect(await post(sesEnv, await signedSns(bounce, certOf("c")))).toEqual([502, "the SNS signature could not be checked: the signing certificate could not be fetched (HTTP 302)"]);
    expect(await post(sesEnv, await signedSns(bounce, { certUrl: receiver.url(`/files/no-such-cert-${crypto.randomUUID()}.pem`) }))).toEqual([
      502,
      "the SNS signature could not be checked: the signing certificate could not be fetched (HTTP 404)",
    ]);
    expect((await receiver.requests(elsewhere)).map((request) => request.path)).toEqual([`/hooks/${elsewhere}/a.pem`, `/hooks/${elsewhere}/b.pem`, `/hooks/${elsewhere}/c.pem`]);
    await unchanged();

    // Signed by SNS, with either version: taken.
    expect(await post(sesEnv, await signedSns(bounce, { version: "2" }))).toEqual([200, "ok"]);
    expect(await post(sesEnv, signed)).toEqual([200, "ok"]);
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ? AND address = 'ada@example.com' AND reason = 'hard_bounce'", panel.id)).toBe(1);
    expect((await campaign(panel, id)).counters.bounces).toBe(1);
  });

  it("with SES_SNS_TOPICS set, a message or subscription of another topic, even signed by SNS, is refused before any fetch and changes nothing", async () => {
    const { sesEnv, panel, id } = await sentToAda("ses-topic-1");
    const ours = "arn:aws:sns:eu-west-1:123456789012:ses-feedback";
    const deployment = { ...sesEnv, SES_SNS_TOPICS: `arn:aws:sns:us-east-1:123456789012:other, ${ours}` };
    const theirs = "arn:aws:sns:eu-west-1:999999999999:attacker";
    const refusal = `the SNS signature is refused: TopicArn "${theirs}" is not one of SES_SNS_TOPICS`;
    const sns = receiver.bucket("sns-topic");
    const subscribe = { Type: "SubscriptionConfirmation", SubscribeURL: `${receiver.hookUrl(sns)}/?Action=ConfirmSubscription&Token=t` };
    expect(await post(deployment, await signedSns({ ...hardBounce("ses-topic-1"), TopicArn: theirs }))).toEqual([403, refusal]);
    expect(await post(deployment, await signedSns({ ...subscribe, TopicArn: theirs }))).toEqual([403, refusal]);
    expect(await receiver.requests(sns)).toEqual([]);
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ?", panel.id)).toBe(0);
    expect((await campaign(panel, id)).counters).toMatchObject({ sent: 1, bounces: 0 });
    // The deployment's own topic is read as before.
    expect(await post(deployment, await signedSns({ ...subscribe, TopicArn: ours }))).toEqual([200, "subscribed"]);
    expect(await post(deployment, await signedSns({ ...hardBounce("ses-topic-1"), TopicArn: ours }))).toEqual([200, "ok"]);
    expect((await campaign(panel, id)).counters.bounces).toBe(1);
  });

  it("a subscription confirmation not signed by SNS is refused and its URL not fetched; a signed one (either version) is confirmed", async () => {
    const sesEnv = sesEnvOf(receiver.bucket("ses"));
    const sns = receiver.bucket("sns");
    const confirmation = { Type: "SubscriptionConfirmation", SubscribeURL: `${receiver.hookUrl(sns)}/?Action=ConfirmSubscription&Token=t` };
    const signed = await signedSns(confirmation);
    expect(await post(sesEnv, confirmation)).toEqual([403, "the SNS signature is refused: SignatureVersion null is not 1 or 2"]);
    expect(await post(sesEnv, { ...signed, Token: "another" })).toEqual([403, "the SNS signature is refused: the signature does not match the message"]);
    expect(await post(sesEnv, { ...signed, SubscribeURL: `${receiver.hookUrl(sns)}/?Action=ConfirmSubscription&Token=u` })).toEqual([403, "the SNS signature is refused: the signature does not match the message"]);
    expect(await post(sesEnv, await signedSns(confirmation, { privateKey: await otherPrivateKey(), version: "2" }))).toEqual([403, "the SNS signature is refused: the signature does not match the message"]);
    expect(await receiver.requests(sns)).toEqual([]);
    // Without SES_SNS_ORIGIN (production), an unsigned confirmation naming SNS's own host is refused before anything is fetched.
    const fetched = vi.spyOn(globalThis, "fetch").mockResolvedValue(new Response("<ConfirmSubscriptionResponse/>"));
    try {
      const onSns = { Type: "SubscriptionConfirmation", SubscribeURL: "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription&Token=t" };
      expect(await post({ ...sesEnv, SES_SNS_ORIGIN: "" }, onSns)).toEqual([403, "the SNS signature is refused: SignatureVersion null is not 1 or 2"]);
      expect(fetched).not.toHaveBeenCalled();
    } finally {
      fetched.mockRestore();
    }
    expect(await post(sesEnv, signed)).toEqual([200, "subscribed"]);
    expect(await post(sesEnv, await signedSns(confirmation, { version: "2" }))).toEqual([200, "subscribed"]);
    expect(await receiver.requests(sns)).toHaveLength(2);
  });
});

/** An SNS notification of an SES complaint, as an identity's notification topic posts it (SES developer guide, "complaint object"). */
function sesComplaint(messageId: string, recipient: string) {
  return {
    Type: "Notification",
    MessageId: "7c1e2a76-5c2f-5b0e-9d1f-1f2b3c4d5e6f",
    TopicArn: "arn:aws:sns:eu-west-1:123456789012:ses-feedback",
    Message: JSON.stringify({
      notificationType: "Complaint",
      complaint: {
        feedbackId: "0102017c1d2e3f40-complaint-000000",
        complaintSubType: null,
        complainedRecipients: [{ emailAddress: recipient }],
        timestamp: "2026-01-02T03:04:05.000Z",
        userAgent: "Yahoo!-Mail-Feedback/2.0",
        complaintFeedbackType: "abuse",
        arrivalDate: "2026-01-02T03:04:00.000Z",
      },
      mail: {
        timestamp: "2026-01-02T03:00:00.000Z",
        source: "shop@example.com",
        messageId,
        destination: [recipient],
        headersTruncated: false,
      },
    }),
    Timestamp: "2026-01-02T03:04:06.000Z",
    SignatureVersion: "1",
  };
}

describe("a campaign sent through SES, and its complaints", () => {
  it("a complaint suppresses the address at once and records one complaint event with the message's msgid, however often SNS repeats it", async () => {
    const { bucket, sesEnv, panel, id } = await sentToAda("ses-complaint-1");
    const contact = (await getContactByKey(panelData, panel.id, "ada@example.com"))!;

    const notification = async (body: Record<string, unknown>) =>
      routeRequest(new Request("https://api.test/hooks/email/ses/sns-secret-token", { method: "POST", body: JSON.stringify(await signedSns(body)) }), sesEnv, createExecutionContext());
    // A complaint about a message the service never sent changes nothing.
    expect((await notification(sesComplaint("ses-unknown", "ada@example.com"))).status).toBe(200);
    expect(await isAddressSuppressed(panelData, panel.id, "ada@example.com")).toBe(false);

    expect((await notification(sesComplaint("ses-complaint-1", "Ada@Example.com"))).status).toBe(200);
    expect((await notification(sesComplaint("ses-complaint-1", "Ada@Example.com"))).status).toBe(200);
    expect(await countRows("SELECT COUNT(*) AS n FROM email_suppressions WHERE panel_id = ? AND address = 'ada@example.com' AND reason = 'complaint' AND campaign_id = ?", panel.id, id)).toBe(1);
    await pipelineSettled(panel.id);
    const events = await panelData
      .prepare("SELECT name, msgid, contact_id, campaign_id, params FROM events WHERE panel_id = ? AND channel = 'email' AND name = 'complaint'")
      .bind(panel.id)
      .all<{ name: string; msgid: string; contact_id: number; campaign_id: string; params: string }>();
    expect(events.results).toHaveLength(1);
    expect(events.results[0]).toMatchObject({ msgid: `${id}.${contact.id}`, contact_id: contact.id, campaign_id: id });
    expect(JSON.parse(events.results[0]!.params)).toMatchObject({ complaint_feedback_type: "abuse", provider: "ses", email: "ada@example.com" });
    // The complaint is not counted as a bounce or as one of the campaign's unsubscribes.
    expect((await campaign(panel, id)).counters).toMatchObject({ sent: 1, bounces: 0 });

    // A second campaign to the address skips it, naming the complaint.
    const second = await sendThroughSes(panel, sesEnv, "EMAIL\nada@example.com\n", 1);
    expect(await receiver.requests(bucket)).toHaveLength(1);
    expect((await campaign(panel, second)).counters).toMatchObject({ sent: 0, skipped: 1 });
    expect(await panelData.prepare("SELECT status, error FROM campaign_messages WHERE campaign_id = ?").bind(second).first()).toEqual({ status: "skipped", error: "complaint (marked as spam)" });
  });
});

describe("a complaint holds against the marketer, not against the recipient", () => {
  it("the admin API refuses to subscribe a complained address (409 naming email); the recipient's own unsubscribe and preference pages subscribe it again", async () => {
    const bucket = receiver.bucket("ses");
    await receiver.script(bucket, [
      { status: 200, body: '{"MessageId":"ses-complained-1"}' },
      { status: 200, body: '{"MessageId":"ses-complained-2"}' },
    ]);
    const sesEnv = sesEnvOf(bucket);
    const panel = await createPanel();
    await verifiedSenderDomain(panel.id);
    await sendThroughSes(panel, sesEnv, "EMAIL\nada@example.com\nbob@example.com\n", 2);
    // Which SES message id went to whom, and each message's own unsubscribe link (the path under PUBLIC_BASE_URL).
    const sent = new Map(
      (await receiver.requests(bucket)).map((request, i) => {
        const body = JSON.parse(request.body);
        const link = unsubscribeUris(decodeBase64(body.Content.Raw.Data)).find((uri) => uri.startsWith(PUBLIC_HTTPS))!;
        return [body.Destination.ToAddresses[0] as string, { messageId: `ses-complained-${i + 1}`, unsubscribe: link.slice(PUBLIC_HTTPS.length) }];
      }),
    );
    const ada = sent.get("ada@example.com")!;
    const bob = sent.get("bob@example.com")!;
    const complain = async (messageId: string, address: string) =>
      routeRequest(
        new Request("https://api.test/hooks/email/ses/sns-secret-token", { method: "POST", body: JSON.stringify(await signedSns(sesComplaint(messageId, address))) }),
        sesEnv,
        createExecutionContext(),
      );
    const reasonOf = async (address: string) =>
      (await panelData.prepare("SELECT reason FROM email_suppressions WHERE panel_id = ? AND address = ?").bind(panel.id, address).first<{ reason: string }>())?.reason ?? null;
    const preferences = (key: string) => `/panels/${panel.id}/contacts/${encodeURIComponent(key)}/preferences`;
    const form = (fields: Array<[string, string]>) => ({ method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams(fields).toString() });

    // Bob unsubscribed first, then marked the mail as spam: the complaint replaces the unsubscribe.
    await call(bob.unsubscribe, { method: "POST" });
    expect(await reasonOf("bob@example.com")).toBe("unsubscribe");
    expect((await complain(bob.messageId, "bob@example.com")).status).toBe(200);
    expect((await complain(ada.messageId, "ada@example.com")).status).toBe(200);
    expect([await reasonOf("ada@example.com"), await reasonOf("bob@example.com")]).toEqual(["complaint", "complaint"]);

    // The marketer sees the complaint and cannot lift it; nothing changes.
    expect((await admin("GET", preferences("ada@example.com"))).body.preferences.email).toBe("complained");
    expect((await admin("GET", `/panels/${panel.id}/contacts/${encodeURIComponent("ada@example.com")}`)).body.suppression).toMatchObject({ address: "ada@example.com", reason: "complaint" });
    const lift = await admin("PUT", preferences("ada@example.com"), { email: "subscribed", push: "unsubscribed" });
    expect(lift.status).toBe(409);
    expect(lift.body.errors).toEqual([{ field: "email", message: expect.stringContaining("marked mail as spam (a complaint)") }]);
    expect((await admin("GET", preferences("ada@example.com"))).body.preferences).toMatchObject({ email: "complained", push: "subscribed" });
    // Asking to unsubscribe it changes nothing either: the complaint stays.
    expect((await admin("PUT", preferences("ada@example.com"), { email: "unsubscribed" })).body.preferences.email).toBe("complained");
    expect(await reasonOf("ada@example.com")).toBe("complaint");

    // Ada herself, from her message's unsubscribe page: it shows her unsubscribed, and "Subscribe again" lifts the complaint.
    expect(await (await call(ada.unsubscribe)).text()).toContain("This address was already unsubscribed");
    expect(await (await call(ada.unsubscribe, form([["action", "resubscribe"]]))).text()).toContain("You are subscribed again");
    expect(await reasonOf("ada@example.com")).toBeNull();
    expect((await admin("GET", preferences("ada@example.com"))).body.preferences.email).toBe("subscribed");

    // Bob, from his preference page: email is offered unchecked; checking it lifts the complaint.
    const page = bob.unsubscribe.replace("/t/u/", "/t/p/");
    const shown = await (await call(page)).text();
    expect(shown).toContain("you reported an email as spam");
    expect(shown).not.toMatch(/name="email" value="subscribed" checked/);
    const saved = await (await call(page, form([["action", "preferences"], ["shown", "email"], ["email", "subscribed"], ["shown", "push"], ["push", "subscribed"]]))).text();
    expect(saved).toMatch(/name="email" value="subscribed" checked/);
    expect(await reasonOf("bob@example.com")).toBeNull();
  });
});

describe("a crash between claim and send, with SES", () => {
  it("resends what provably never reached SES, settles what may have as failed with an unknown outcome, and sends nothing twice", async () => {
    const bucket = receiver.bucket("ses");
    await receiver.script(bucket, [1, 2, 3, 4, 5].map((i) => ({ status: 200, body: `{"MessageId":"ses-after-crash-${i}"}` })));
    const sesEnv = { ...env, EMAIL_PROVIDER: "ses", PUBLIC_BASE_URL: PUBLIC_HTTPS, SES_ENDPOINT: receiver.hookUrl(bucket), SES_ACCESS_KEY_ID: "a", SES_SECRET_ACCESS_KEY: "b" };
    const panel = await createPanel();
    await verifiedSenderDomain(panel.id);
    const emails = ["a", "b", "c", "d", "e", "f"].map((x) => `${x}@example.com`);
    const created = await publish(panel, await broadcastData({ schedule_date: scheduleIn(60 * 24 * 41) }, `EMAIL\n${emails.join("\n")}\n`));
    const id = created.body.CampaignID;
    await waitForImport(panel, id);
    const stored = (await getCampaign(panelData, panel.id, id))!;
    const crash = Date.now();
    // Published, then the consumer died mid-batch: it had claimed a, b, c, d and recorded the
    // attempt of a and b (their calls were in flight), and its nudge is gone.
    expect(await publishCampaign(panelData, stored, 100, crash - 5000)).toBe(6);
    const contactOf = async (email: string) =>
      (await panelData.prepare("SELECT id FROM contacts WHERE panel_id = ? AND pk_value = ?").bind(panel.id, email).first<{ id: number }>())!.id;
    for (const [email, attempted] of [["a@example.com", true], ["b@example.com", true], ["c@example.com", false], ["d@example.com", false]] as const) {
      await panelData.prepare("UPDATE campaign_messages SET status = 'sending', claim = 'dead', claimed_at = ?, attempted_at = ? WHERE campaign_id = ? AND contact_id = ?")
        .bind(crash, attempted ? crash : null, id, await contactOf(email))
        .run();
    }

    const nudges: SendNudge[] = [];
    const quietSends = { sendBatch: async (messages: Array<{ body: SendNudge }>) => void nudges.push(...messages.map((m) => m.body)) } as unknown as Queue;
    // Within the minute nothing is re-driven; the first cron tick after it re-nudges the batch.
    await publishDueBroadcasts({ ...sesEnv, SENDS: quietSends }, crash + 30_000);
    expect(nudges.filter((n) => n.campaignId === id)).toEqual([]);
    await publishDueBroadcasts({ ...sesEnv, SENDS: quietSends }, crash + 61_000);
    const redriven = nudges.filter((n) => n.campaignId === id);
    expect(redriven).toEqual([{ kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 }]);

    // The re-nudged batch, delivered twice.
    await sendCampaignBatch(sesEnv, emailProvider(sesEnv), redriven[0]!, crash + 62_000);
    await sendCampaignBatch(sesEnv, emailProvider(sesEnv), redriven[0]!, crash + 63_000);
    const sentTo = (await receiver.requests(bucket)).map((r) => JSON.parse(r.body).Destination.ToAddresses[0]).sort();
    expect(sentTo).toEqual(["c@example.com", "d@example.com", "e@example.com", "f@example.com"]);
    expect(await campaign(panel, id)).toMatchObject({ status: "sent", counters: { recipients: 6, sent: 4, failed: 2, queued: 0 } });
    const unknown = await panelData.prepare("SELECT error FROM campaign_messages WHERE campaign_id = ? AND status = 'failed'").bind(id).all<{ error: string }>();
    expect(unknown.results.map((r) => r.error)).toEqual([expect.stringMatching(/^outcome unknown/), expect.stringMatching(/^outcome unknown/)]);
  });

  /** A panel with a verified sender domain, SES answering as `script` says, and a journey email step and its messages. */
  async function journeyEmailThroughSes(script: Parameters<typeof receiver.script>[1]) {
    const bucket = receiver.bucket("ses");
    await receiver.script(bucket, script);
    const sesEnv = { ...env, EMAIL_PROVIDER: "ses", PUBLIC_BASE_URL: PUBLIC_HTTPS, SES_ENDPOINT: receiver.hookUrl(bucket), SES_ACCESS_KEY_ID: "a", SES_SECRET_ACCESS_KEY: "b" };
    const panel = await createPanel();
    await verifiedSenderDomain(panel.id);
    const step = { id: "mail", type: "email" as const, subject: "Hi", html: "<p>x</p>", sender_name: "Shop", sender_email: "shop@example.com" };
    const message = (msgid: string, recipient: string, contactId = 1) =>
      ({ msgid, panelId: panel.id, journeyId: "jrn_x", instanceId: msgid.split(".")[0]!, stepId: "mail", channel: "email" as const, contactId, recipient, content: {}, createdAt: 0 });
    return { bucket, sesEnv, panel, step, message };
  }

  it("a journey email SES refuses for good is failed, with one failed email event, as SMS and push refusals are", async () => {
    const { bucket, sesEnv, panel, step, message: messageTo } = await journeyEmailThroughSes([{ status: 400, body: '{"message":"Email address is not verified"}' }]);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com" } });
    const contact = (await getContactByKey(panelData, panel.id, "ada@example.com"))!;
    const message = messageTo("ins1.mail", "ada@example.com", contact.id);
    await sendJourneyEmail(sesEnv, message, step, {}, Date.now());
    // A redelivered step finds the message done with: nothing is sent or recorded again.
    await sendJourneyEmail(sesEnv, message, step, {}, Date.now());
    const row = await panelData.prepare("SELECT status, error FROM journey_messages WHERE msgid = ?").bind(message.msgid).first();
    expect(row).toEqual({ status: "failed", error: expect.stringContaining("not verified") });
    await pipelineSettled(panel.id);
    const events = await panelData.prepare("SELECT contact_id, name, msgid, journey_id, params FROM events WHERE panel_id = ? AND channel = 'email'").bind(panel.id).all();
    expect(events.results.map((e: any) => ({ ...e, params: JSON.parse(e.params) }))).toEqual([
      { contact_id: contact.id, name: "failed", msgid: "ins1.mail", journey_id: "jrn_x", params: { provider: "ses", error: expect.stringContaining("not verified") } },
    ]);
    expect(await receiver.requests(bucket)).toHaveLength(1);
  });

  it("a journey email: redone when the dead attempt provably sent nothing, settled as unknown when it may have", async () => {
    const { bucket, sesEnv, panel, step, message } = await journeyEmailThroughSes([{ status: 200, body: '{"MessageId":"ses-journey-1"}' }]);
    const crash = Date.now();
    const claimed = (msgid: string, attempted: boolean) =>
      panelData.prepare(
        `INSERT INTO journey_messages (msgid, panel_id, journey_id, instance_id, step_id, channel, contact_id, recipient, content, status, created_at, claim, claimed_at, attempted_at)
         VALUES (?, ?, 'jrn_x', ?, 'mail', 'email', 1, ?, '{}', 'sending', ?, 'dead', ?, ?)`,
      )
        .bind(msgid, panel.id, msgid.split(".")[0], `${msgid.split(".")[0]}@example.com`, crash, crash, attempted ? crash : null)
        .run();
    await claimed("unsent.mail", false);
    await claimed("inflight.mail", true);
    // While the claims are fresh, the step is retried rather than continued without its mail.
    await expect(sendJourneyEmail(sesEnv, message("unsent.mail", "unsent@example.com"), step, {}, crash + 1000)).rejects.toThrow(/another attempt/);
    await sendJourneyEmail(sesEnv, message("unsent.mail", "unsent@example.com"), step, {}, crash + 61_000);
    await sendJourneyEmail(sesEnv, message("inflight.mail", "inflight@example.com"), step, {}, crash + 61_000);
    await sendJourneyEmail(sesEnv, message("unsent.mail", "unsent@example.com"), step, {}, crash + 62_000);
    expect((await receiver.requests(bucket)).map((r) => JSON.parse(r.body).Destination.ToAddresses[0])).toEqual(["unsent@example.com"]);
    const rows = await panelData.prepare("SELECT msgid, status, error FROM journey_messages WHERE panel_id = ? ORDER BY msgid").bind(panel.id).all();
    expect(rows.results).toEqual([
      { msgid: "inflight.mail", status: "failed", error: expect.stringMatching(/^outcome unknown/) },
      { msgid: "unsent.mail", status: "sent", error: null },
    ]);
  });
});

describe("sesNotificationOf (what a message SNS signed says)", () => {
  it("reads a complaint's recipients, lower-cased, its message id and feedback type; one without a message id is invalid", () => {
    expect(sesNotificationOf(sesComplaint("ses-9", " Ada@Example.COM "), undefined)).toEqual({
      kind: "events",
      bounces: [],
      complaints: [{ providerMessageId: "ses-9", addresses: ["ada@example.com"], detail: { complaint_feedback_type: "abuse", complaint_subtype: null, provider: "ses" } }],
    });
    // A configuration set's event destination writes eventType instead of notificationType.
    const event = { ...JSON.parse(sesComplaint("ses-9", "a@b.example").Message), notificationType: undefined, eventType: "Complaint" };
    expect(sesNotificationOf({ Type: "Notification", Message: JSON.stringify(event) }, undefined)).toMatchObject({ kind: "events", complaints: [{ providerMessageId: "ses-9" }] });
    const noId = { notificationType: "Complaint", complaint: { complainedRecipients: [{ emailAddress: "a@b.example" }] }, mail: {} };
    expect(sesNotificationOf({ Type: "Notification", Message: JSON.stringify(noId) }, undefined)).toEqual({ kind: "invalid", reason: "the complaint has no mail.messageId" });
  });
});

describe("readSesNotification with bodies that are not objects", () => {
  it.each(["null", "[]", "42", "{oops", { Type: "Notification", Message: "null" }, { Type: "Notification", Message: "[1]" }])(
    "%s is invalid, not a crash",
    async (body) => {
      // The messages are signed, so that their Message is what is read.
      const text = typeof body === "string" ? body : JSON.stringify(await signedSns(body));
      expect((await readSesNotification(env, text)).kind).toBe("invalid");
    },
  );
});
