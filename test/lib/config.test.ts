import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { config, ConfigError, parseConfig } from "../../src/lib/config";
import { broadcastData, scheduleIn } from "../support/broadcasts";
import { ADMIN_TOKEN, BASE, createPanel, type TestPanel } from "../support/helpers";

const KEY = btoa("k".repeat(32));

/** The Worker with its env changed as a deployment would change a var. */
async function fetchWith(vars: Record<string, string>, path: string, init: RequestInit = {}): Promise<Response> {
  const { default: worker } = await import("../../src/index");
  const exec = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;
  return worker.fetch(new Request(`${BASE}${path}`, init) as Request<unknown, IncomingRequestCfProperties>, { ...env, ...vars } as Env, exec);
}

function publishWith(vars: Record<string, string>, panel: TestPanel, data: Record<string, unknown>): Promise<Response> {
  const query = new URLSearchParams({ type: "email_broadcast", activity: "upload_contact_and_publish", apikey: panel.apiKey });
  return fetchWith(vars, `/apiv2?${query}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ data: JSON.stringify(data) }).toString() });
}

describe("configuration", () => {
  it("gives every default for missing and empty vars", () => {
    const parsed = parseConfig({ PUBLIC_BASE_URL: "https://api.example.com/", SECRETS_KEY: KEY, EMAIL_PROVIDER: "", TWILIO_API_URL: "" });
    expect(parsed).toEqual({
      region: "default",
      allowPrivateFetch: false,
      broadcastLeadMinutes: 90,
      mailFrom: "notifications@example.com",
      emailProvider: "outbox",
      ses: { region: "us-east-1", endpoint: undefined, configurationSet: undefined, accessKeyId: undefined, secretAccessKey: undefined, snsToken: undefined },
      publicBaseUrl: "https://api.example.com",
      dohUrl: "https://cloudflare-dns.com/dns-query",
      download: { minBytesPerSecond: undefined, rateWindowMs: undefined },
      twilioApiUrl: "https://api.twilio.com",
      msg91ApiUrl: "https://control.msg91.com",
      fcmApiUrl: "https://fcm.googleapis.com",
      fcmTokenUrl: "https://oauth2.googleapis.com/token",
      turnstileSiteverifyUrl: "https://challenges.cloudflare.com/turnstile/v0/siteverify",
      localMailbox: false,
      adminToken: undefined,
      secretsKey: KEY,
      retentionDays: { campaignMessages: 365, eventGuids: 30, segmentChanges: 400, auditLog: 365, journeyInstances: 365 },
      fanoutChunkIds: 50_000,
      simulationStepEvents: 20_000,
      unsentPageBatches: 1_000,
      logLines: true,
    });
  });

  it("takes retention windows in whole days, the segment history's at least 366", () => {
    const base = { PUBLIC_BASE_URL: "https://api.example.com", SECRETS_KEY: KEY };
    expect(parseConfig({ ...base, EVENT_GUID_DAYS: "7", SEGMENT_CHANGES_DAYS: "366" }).retentionDays).toMatchObject({ eventGuids: 7, segmentChanges: 366 });
    let error: unknown;
    try {
      parseConfig({ ...base, CAMPAIGN_MESSAGES_DAYS: "a year", EVENT_GUID_DAYS: "0", SEGMENT_CHANGES_DAYS: "90" });
    } catch (thrown) {
      error = thrown;
    }
    expect((error as ConfigError).problems).toEqual([
      { variable: "CAMPAIGN_MESSAGES_DAYS", reason: "must be a whole number of days" },
      { variable: "EVENT_GUID_DAYS", reason: "must be at least 1" },
      { variable: "SEGMENT_CHANGES_DAYS", reason: "must be at least 366" },
    ]);
  });

  it("is parsed once per env object", () => {
    expect(config(env)).toBe(config(env));
    expect(config({ ...env, BROADCAST_LEAD_MINUTES: "30" }).broadcastLeadMinutes).toBe(30);
  });

  it("names each bad value and why, instead of falling back to a default", () => {
    const bad = { ...env, BROADCAST_LEAD_MINUTES: "ninety", EMAIL_PROVIDER: "carrier-pigeon", ALLOW_PRIVATE_FETCH: "yes", DOH_URL: "dns.example", SECRETS_KEY: "short" };
    let error: unknown;
    try {
      parseConfig(bad);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      { variable: "ALLOW_PRIVATE_FETCH", reason: 'must be "true" or "false"' },
      { variable: "BROADCAST_LEAD_MINUTES", reason: "must be a whole number of minutes" },
      { variable: "EMAIL_PROVIDER", reason: "is not one of outbox, ses" },
      { variable: "DOH_URL", reason: "must be an absolute http(s) URL" },
      { variable: "SECRETS_KEY", reason: "must be 32 bytes, base64-encoded" },
    ]);
    expect(() => parseConfig({ ...env, BROADCAST_LEAD_MINUTES: "100000" })).toThrow("configuration is invalid: BROADCAST_LEAD_MINUTES must be at most 10080 (a week)");
    expect(() => parseConfig({ ...env, UNSENT_PAGE_BATCHES: "20000" })).toThrow("configuration is invalid: UNSENT_PAGE_BATCHES must be at most 10000");
    expect(parseConfig({ ...env, UNSENT_PAGE_BATCHES: "250" }).unsentPageBatches).toBe(250);
  });

  it("takes SES_SNS_ORIGIN as an origin only: a path would read as a rule it is not", () => {
    expect(parseConfig({ ...env, SES_SNS_ORIGIN: "" }).ses.snsOrigin).toBeUndefined();
    expect(parseConfig({ ...env, SES_SNS_ORIGIN: "http://127.0.0.1:8999/" }).ses.snsOrigin).toBe("http://127.0.0.1:8999");
    for (const value of ["http://127.0.0.1:8999/sns", "https://sns.example?x=1", "ftp://sns.example"]) {
      expect(() => parseConfig({ ...env, SES_SNS_ORIGIN: value })).toThrow(/^configuration is invalid: SES_SNS_ORIGIN must be/);
    }
  });

  it("takes SES_SNS_TOPICS as a list of SNS topic ARNs, empty as any topic", () => {
    expect(parseConfig({ ...env, SES_SNS_TOPICS: "" }).ses.snsTopics).toBeUndefined();
    expect(parseConfig({ ...env, SES_SNS_TOPICS: " , " }).ses.snsTopics).toBeUndefined();
    expect(parseConfig({ ...env, SES_SNS_TOPICS: "arn:aws:sns:eu-west-1:123456789012:ses-feedback, arn:aws-cn:sns:cn-north-1:210987654321:bounces.fifo" }).ses.snsTopics).toEqual([
      "arn:aws:sns:eu-west-1:123456789012:ses-feedback",
      "arn:aws-cn:sns:cn-north-1:210987654321:bounces.fifo",
    ]);
    for (const value of ["ses-feedback", "arn:aws:sqs:eu-west-1:123456789012:q", "arn:aws:sns:eu-west-1:1234:ses-feedback"]) {
      expect(() => parseConfig({ ...env, SES_SNS_TOPICS: value })).toThrow(/^configuration is invalid: SES_SNS_TOPICS must list SNS topic ARNs/);
    }
  });

  it("makes /health answer 500 naming the variable, and a request that needs it fail", async () => {
    const health = await fetchWith({ EMAIL_PROVIDER: "carrier-pigeon" }, "/health");
    expect(health.status).toBe(500);
    expect(await health.json()).toEqual({
      status: "misconfigured",
      message: "configuration is invalid: EMAIL_PROVIDER is not one of outbox, ses",
      errors: [{ field: "EMAIL_PROVIDER", message: "is not one of outbox, ses" }],
    });
    const admin = await fetchWith({ BROADCAST_LEAD_MINUTES: "-5" }, "/admin/v1/panels", { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(admin.status).toBe(500);
    expect(((await fetchWith({}, "/health")).status)).toBe(200);
  });

  it("honours a changed BROADCAST_LEAD_MINUTES in the broadcast's schedule rule and the panel's campaign list", async () => {
    const panel = await createPanel();
    const soon = await broadcastData({ schedule_date: scheduleIn(45) });
    const refused = (await (await publishWith({}, panel, soon)).json()) as any;
    expect(refused.message).toMatch(/schedule_date: must be at least 90 minutes ahead/);

    const accepted = (await (await publishWith({ BROADCAST_LEAD_MINUTES: "30" }, panel, soon)).json()) as any;
    expect(accepted.success).toBe(true);

    const list = await fetchWith({ BROADCAST_LEAD_MINUTES: "30" }, `/admin/v1/panels/${panel.id}/campaigns`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(((await list.json()) as any).lead_minutes).toBe(30);
  });
});
