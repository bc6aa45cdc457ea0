import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sendCampaignBatch } from "../../../../src/services/broadcasts/send";
import { emailProvider } from "../../../../src/services/channels/email/providers";
import { SesProvider } from "../../../../src/services/channels/email/ses";
import { parseSesNotification } from "../../../../src/services/channels/email/ses-notifications";
import { routeRequest } from "../../../../src/http/router";
import { getCampaign, publishCampaign } from "../../../../src/store/campaigns";
import { countRows, createPanel, receiver } from "../../../support/helpers";
import { broadcastData, campaign, publish, scheduleIn, waitForImport } from "../../../support/broadcasts";
import { pipelineSettled } from "../../../support/activity";

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
    expect(() => emailProvider({ ...env, EMAIL_PROVIDER: "ses" })).toThrow(/SES_ACCESS_KEY_ID/);
    expect(emailProvider({ ...env, EMAIL_PROVIDER: "ses", SES_ACCESS_KEY_ID: "a", SES_SECRET_ACCESS_KEY: "b" }).name).toBe("ses");
    expect(() => emailProvider({ ...env, EMAIL_PROVIDER: "carrier-pigeon" })).toThrow(/not one of/);
  });
});

describe("a campaign sent through SES, and its bounces", () => {
  it("records SES message ids, then suppresses a hard-bounced address from the SNS notification", async () => {
    const bucket = receiver.bucket("ses");
    await receiver.script(bucket, [
      { status: 200, body: '{"MessageId":"ses-msg-1"}' },
      { status: 200, body: '{"MessageId":"ses-msg-2"}' },
    ]);
    const sesEnv = { ...env, EMAIL_PROVIDER: "ses", SES_ENDPOINT: receiver.hookUrl(bucket), SES_ACCESS_KEY_ID: "a", SES_SECRET_ACCESS_KEY: "b", SES_SNS_TOKEN: "sns-secret-token" };
    const panel = await createPanel();
    const created = await publish(panel, await broadcastData({ schedule_date: scheduleIn(60 * 24 * 40) }, "EMAIL\nada@example.com\nbob@example.com\n"));
    const id = created.body.CampaignID;
    await waitForImport(panel, id);
    // Published directly (no queue nudge), so that the SES provider, not the test queue's outbox, sends.
    const stored = (await getCampaign(env.DB, panel.id, id))!;
    expect(await publishCampaign(env.DB, stored, 100, stored.sendAt)).toBe(2);
    await sendCampaignBatch(sesEnv, emailProvider(sesEnv), { kind: "campaign_batch", panelId: panel.id, campaignId: id, batch: 0 });
    expect(await receiver.requests(bucket)).toHaveLength(2);
    expect((await campaign(panel, id)).counters).toMatchObject({ sent: 2 });
    const sentTo = await env.DB.prepare("SELECT address FROM campaign_messages WHERE provider_msg_id = 'ses-msg-1'").first<{ address: string }>();

    const notification = (token: string, body: unknown) =>
      routeRequest(new Request(`https://api.test/hooks/email/ses/${token}`, { method: "POST", body: JSON.stringify(body) }), sesEnv, createExecutionContext());
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
    // A subscription confirmation pointing anywhere but SNS is refused, not fetched.
    expect((await notification("sns-secret-token", { Type: "SubscriptionConfirmation", SubscribeURL: "https://evil.example.net/confirm" })).status).toBe(400);
  });
});

describe("parseSesNotification with bodies that are not objects", () => {
  it.each(["null", "[]", "42", "{oops", JSON.stringify({ Type: "Notification", Message: "null" }), JSON.stringify({ Type: "Notification", Message: "[1]" })])(
    "%s is invalid, not a crash",
    (text) => {
      expect(parseSesNotification(text).kind).toBe("invalid");
    },
  );
});
