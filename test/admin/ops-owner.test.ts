import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { checkControlAlerts, checkShardAlerts } from "../../src/services/operations/alerts";
import { recordDeadLetter } from "../../src/store/dead-letters";
import { countingD1 } from "../../src/store/d1-count";
import { observing, type Observation } from "../../src/lib/observability/context";
import { setWebhookState } from "../../src/store/webhooks";
import { collectingQueue, withBindings } from "../support/cron";
import { admin, call, createPanel, keptMail, panelData, receiver, TEST_SHARD } from "../support/helpers";
import { asOperator, operatorWithRole } from "../support/operators";

// A panel's owners subscribe to the operations alerts that concern their panel (issue 47, item 4).

const secret = `whsec_${btoa("0123456789abcdef0123456789abcdef")}`;
const unique = (name: string) => `${name}-${crypto.randomUUID().slice(0, 8)}@example.com`;

async function ownedPanel(options: { shard?: number } = {}) {
  const panel = await createPanel(options);
  return { panel, owner: await operatorWithRole(panel.id, "owner") };
}

async function disableWebhook(panelId: string, label: string): Promise<string> {
  const created = await admin("POST", `/panels/${panelId}/webhooks`, { label, url: receiver.hookUrl(receiver.bucket()) });
  expect(created.status).toBe(201);
  await setWebhookState(panelData, panelId, created.body.id, { state: "disabled", reason: "HTTP 500 for 24 hours", from: ["configured", "operational"] }, Date.now());
  return created.body.id;
}

describe("a panel's alert subscriptions", () => {
  it("an owner adds an email and a signed webhook, lists and removes them; each change is audited", async () => {
    const { panel, owner } = await ownedPanel();
    const path = `/panels/${panel.id}/alerts/subscriptions`;
    const email = unique("owner");
    const mail = await asOperator(owner, "POST", path, { kinds: ["webhook_disabled", "cron_late"], email });
    expect(mail.status).toBe(201);
    expect(mail.body).toMatchObject({ kinds: ["webhook_disabled", "cron_late"], email, webhook_url: null, signing_secret_set: false, last_error: null });
    const hook = await asOperator(owner, "POST", path, { kinds: ["dead_letters"], webhook: { url: "https://hooks.example.com/ops?token=abc", signing_secret: secret } });
    expect(hook.status).toBe(201);
    expect(hook.body).toMatchObject({ webhook_url: "https://hooks.example.com/ops?token=abc", signing_secret_set: true });
    expect(JSON.stringify(hook.body)).not.toContain(secret);

    const listed = await asOperator(owner, "GET", path);
    expect(listed.status).toBe(200);
    expect(listed.body.subscriptions.map((s: any) => s.id)).toEqual([mail.body.id, hook.body.id]);
    // The deployment's list is the admin's own; another panel sees none of these.
    expect((await admin("GET", "/alerts/subscriptions")).body.subscriptions.some((s: any) => s.id === mail.body.id)).toBe(false);
    const other = await createPanel();
    expect((await admin("GET", `/panels/${other.id}/alerts/subscriptions`)).body.subscriptions).toEqual([]);
    expect((await admin("DELETE", `/panels/${other.id}/alerts/subscriptions/${mail.body.id}`)).status).toBe(404);
    expect((await admin("DELETE", `/alerts/subscriptions/${mail.body.id}`)).status).toBe(404);

    expect((await asOperator(owner, "DELETE", `${path}/${mail.body.id}`)).status).toBe(204);
    expect((await asOperator(owner, "DELETE", `${path}/${mail.body.id}`)).status).toBe(404);
    expect((await asOperator(owner, "GET", path)).body.subscriptions.map((s: any) => s.id)).toEqual([hook.body.id]);

    const audit = (await asOperator(owner, "GET", `/panels/${panel.id}/audit?target_kind=alert_subscription`)).body.entries;
    expect(audit.map((e: any) => [e.action, e.target])).toEqual([
      ["alert_subscription.removed", mail.body.id],
      ["alert_subscription.added", hook.body.id],
      ["alert_subscription.added", mail.body.id],
    ]);
    // The webhook's query (a token, perhaps) is not kept in the log.
    expect(audit[1].detail).toMatchObject({ to: "https://hooks.example.com/ops", kinds: ["dead_letters"] });
  });

  it("refuses a bad email or URL naming the field, and more than five subscriptions, changing nothing", async () => {
    const { panel, owner } = await ownedPanel();
    const path = `/panels/${panel.id}/alerts/subscriptions`;
    const badEmail = await asOperator(owner, "POST", path, { kinds: ["cron_late"], email: "not an address" });
    expect(badEmail.status).toBe(400);
    expect(badEmail.body.errors.map((e: any) => e.field)).toEqual(["email"]);
    const badUrl = await asOperator(owner, "POST", path, { kinds: ["cron_late"], webhook: { url: "ftp://hooks.example.com/x" } });
    expect(badUrl.status).toBe(400);
    expect(badUrl.body.errors.map((e: any) => e.field)).toEqual(["webhook.url"]);
    const badSecret = await asOperator(owner, "POST", path, { kinds: ["cron_late"], webhook: { url: "https://hooks.example.com/x", signing_secret: "plain" } });
    expect(badSecret.status).toBe(400);
    expect(badSecret.body.errors.map((e: any) => e.field)).toEqual(["webhook.signing_secret"]);
    const noKind = await asOperator(owner, "POST", path, { kinds: [], email: unique("k") });
    expect(noKind.status).toBe(400);
    expect(noKind.body.errors[0].field).toBe("kinds");
    expect((await asOperator(owner, "GET", path)).body.subscriptions).toEqual([]);

    for (let i = 0; i < 5; i++) expect((await asOperator(owner, "POST", path, { kinds: ["cron_late"], email: unique(`n${i}`) })).status).toBe(201);
    const sixth = await asOperator(owner, "POST", path, { kinds: ["cron_late"], email: unique("six") });
    expect(sixth.status).toBe(409);
    expect((await asOperator(owner, "GET", path)).body.subscriptions).toHaveLength(5);
  });

  it("is the owners' alone: a marketer or a viewer is refused with 403", async () => {
    const { panel, owner } = await ownedPanel();
    const path = `/panels/${panel.id}/alerts/subscriptions`;
    const kept = await asOperator(owner, "POST", path, { kinds: ["cron_late"], email: unique("kept") });
    for (const role of ["marketer", "viewer"] as const) {
      const session = await operatorWithRole(panel.id, role);
      expect((await asOperator(session, "GET", path)).status).toBe(403);
      expect((await asOperator(session, "POST", path, { kinds: ["cron_late"], email: unique(role) })).status).toBe(403);
      expect((await asOperator(session, "DELETE", `${path}/${kept.body.id}`)).status).toBe(403);
    }
    expect((await asOperator(owner, "GET", path)).body.subscriptions.map((s: any) => s.id)).toEqual([kept.body.id]);
  });
});

describe("alerts told to a panel's owners", () => {
  it("the owner of P hears of P's disabled webhook, signed, once, and not of panel Q's", async () => {
    const p = await ownedPanel();
    const q = await ownedPanel();
    const bucket = receiver.bucket("owner-alerts");
    const subscribed = await asOperator(p.owner, "POST", `/panels/${p.panel.id}/alerts/subscriptions`, {
      kinds: ["webhook_disabled"],
      webhook: { url: receiver.hookUrl(bucket), signing_secret: secret },
    });
    expect(subscribed.status).toBe(201);
    const mine = await disableWebhook(p.panel.id, "P orders");
    const theirs = await disableWebhook(q.panel.id, "Q orders");

    await checkShardAlerts(env, panelData, TEST_SHARD, Date.now());
    await checkShardAlerts(env, panelData, TEST_SHARD, Date.now());
    const posts = await receiver.requests(bucket);
    expect(posts).toHaveLength(1);
    expect(() => new Webhook(secret).verify(posts[0]!.body, posts[0]!.headers)).not.toThrow();
    const keys = (JSON.parse(posts[0]!.body).alerts as any[]).map((a) => a.key);
    expect(keys).toEqual([`webhook_disabled:${p.panel.id}:${mine}`]);
    expect(keys).not.toContain(`webhook_disabled:${q.panel.id}:${theirs}`);
  });

  it("a late cron reaches every panel's owners; a panel's dead letters reach its owners alone, the deployment hears them once", async () => {
    const mail = keptMail();
    const mailEnv = withBindings(env, { MAILER: mail.MAILER, CRON: collectingQueue() });
    const p = await ownedPanel();
    const q = await ownedPanel();
    const pEmail = unique("p");
    const qEmail = unique("q");
    const adminEmail = unique("admin");
    await asOperator(p.owner, "POST", `/panels/${p.panel.id}/alerts/subscriptions`, { kinds: ["cron_late", "dead_letters"], email: pEmail });
    await asOperator(q.owner, "POST", `/panels/${q.panel.id}/alerts/subscriptions`, { kinds: ["cron_late", "dead_letters"], email: qEmail });
    const deployment = await admin("POST", "/alerts/subscriptions", { kinds: ["dead_letters"], email: adminEmail });
    try {
      const now = Date.now();
      // On time, nothing held: a cron_late of an earlier test is cleared first.
      await checkControlAlerts(mailEnv, now - 60_000, now - 60_000);
      const before = mail.mails.length;
      await recordDeadLetter(env.DB, { queue: "apiv2-sends-default", kind: "sends", panelId: p.panel.id, body: "{}", attempts: 10, action: "none", receivedAt: now });
      await checkControlAlerts(mailEnv, now - 7 * 60_000, now);
      await checkControlAlerts(mailEnv, now - 6 * 60_000, now + 60_000);
      const to = (address: string) => mail.mails.slice(before).filter((m) => m.to === address);

      expect(to(pEmail)).toHaveLength(1);
      expect(to(pEmail)[0]!.text).toContain("the cron runs 7 minutes late");
      expect(to(pEmail)[0]!.text).toContain(`dead letters (panel ${p.panel.id}): 1 dead letter(s) of this panel`);
      expect(to(qEmail)).toHaveLength(1);
      expect(to(qEmail)[0]!.text).toContain("the cron runs 7 minutes late");
      expect(to(qEmail)[0]!.text).not.toContain("dead letter(s)");
      // The deployment's subscription hears the deployment's count, not each panel's again.
      expect(to(adminEmail)).toHaveLength(1);
      expect(to(adminEmail)[0]!.text).toContain("dead letters in the last hour: 1 from apiv2-sends-default");
      expect(to(adminEmail)[0]!.text).not.toContain(`panel ${p.panel.id}`);
    } finally {
      await call(`/admin/v1/alerts/subscriptions/${deployment.body.id}`, { method: "DELETE", headers: { authorization: "Bearer test-admin-token" } });
    }
  });

  it("a shard past 80% reaches the owners of panels on it, not those elsewhere", async () => {
    const mail = keptMail();
    const mailEnv = withBindings(env, { MAILER: mail.MAILER });
    const on = await ownedPanel();
    const elsewhere = await ownedPanel({ shard: 0 });
    const onEmail = unique("on");
    const elsewhereEmail = unique("elsewhere");
    await asOperator(on.owner, "POST", `/panels/${on.panel.id}/alerts/subscriptions`, { kinds: ["shard_full"], email: onEmail });
    await asOperator(elsewhere.owner, "POST", `/panels/${elsewhere.panel.id}/alerts/subscriptions`, { kinds: ["shard_full"], email: elsewhereEmail });
    // A limit of 1 KB stands for 10 GB: the shard holds far more than 80% of it.
    await checkShardAlerts(mailEnv, panelData, TEST_SHARD, Date.now());
    await checkShardAlerts(mailEnv, panelData, TEST_SHARD, Date.now(), 1024);
    try {
      expect(mail.mails.filter((m) => m.to === onEmail).map((m) => m.text)).toEqual([expect.stringContaining(`shard ${TEST_SHARD} holds`)]);
      expect(mail.mails.filter((m) => m.to === elsewhereEmail)).toEqual([]);
    } finally {
      await checkShardAlerts(mailEnv, panelData, TEST_SHARD, Date.now());
    }
  });

  it("tells a late cron to any number of panels' subscriptions in the same few queries", async () => {
    const mail = keptMail();
    const mailEnv = withBindings(env, { MAILER: mail.MAILER, CRON: collectingQueue() });
    /** Subscribes `count` more panels, then counts the queries of the check that finds the cron late (and clears it after). */
    const lateCheck = async (count: number, emails: string[]) => {
      for (let i = 0; i < count; i++) {
        const panel = await createPanel();
        const email = unique(`late${i}`);
        expect((await admin("POST", `/panels/${panel.id}/alerts/subscriptions`, { kinds: ["cron_late"], email })).status).toBe(201);
        emails.push(email);
      }
      const now = Date.now();
      await checkControlAlerts(mailEnv, now - 60_000, now - 60_000);
      const observation: Observation = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" };
      await observing(observation, () => checkControlAlerts(countingD1(mailEnv), now - 8 * 60_000, now));
      await checkControlAlerts(mailEnv, now + 60_000, now + 60_000);
      return observation.d1Statements;
    };
    const emails: string[] = [];
    const few = await lateCheck(1, emails);
    const many = await lateCheck(6, emails);
    expect(many).toBe(few);
    expect(few).toBeLessThanOrEqual(7);
    // Every one of them heard of the second late cron.
    for (const email of emails) expect(mail.mails.filter((m) => m.to === email && m.text.includes("the cron runs 8 minutes late")).length).toBeGreaterThan(0);
  });
});
