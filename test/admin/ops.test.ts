import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { runCronTasks } from "../../src/jobs/cron";
import { checkControlAlerts, checkShardAlerts } from "../../src/services/operations/alerts";
import { recordDeadLetter } from "../../src/store/dead-letters";
import { setWebhookState } from "../../src/store/webhooks";
import { collectingQueue, withBindings } from "../support/cron";
import { admin, call, createPanel, fetchWith, keptMail, panelData, receiver, TEST_SHARD } from "../support/helpers";

const secret = `whsec_${btoa("0123456789abcdef0123456789abcdef")}`;

/** A panel's webhook, disabled as the dispatcher disables one. */
async function disabledWebhook(label: string) {
  const panel = await createPanel();
  const created = await admin("POST", `/panels/${panel.id}/webhooks`, { label, url: receiver.hookUrl(receiver.bucket()) });
  expect(created.status).toBe(201);
  await setWebhookState(panelData, panel.id, created.body.id, { state: "disabled", reason: "HTTP 500 for 24 hours", from: ["configured", "operational"] }, Date.now());
  return { panel, id: created.body.id as string };
}

/** A D1 binding whose every statement fails, as an unreachable database does. */
function brokenD1(): D1Database {
  const fail = async () => {
    throw new Error("D1_ERROR: network connection lost");
  };
  const statement = { bind: () => statement, first: fail, all: fail, run: fail, raw: fail };
  return { prepare: () => statement, batch: fail, exec: fail } as unknown as D1Database;
}

describe("GET /admin/v1/ops", () => {
  it("shows queues, dead letters, cron ticks, shards, disabled webhooks and stuck work, each with what fixes it", async () => {
    const { panel, id } = await disabledWebhook("CRM");
    const now = Date.now();
    await recordDeadLetter(env.DB, { queue: "apiv2-imports-default", kind: "cron", panelId: null, body: JSON.stringify({ cron: "x", shard: 0, now }), attempts: 10, action: "none", receivedAt: now });
    await runCronTasks(withBindings(env, { CRON: collectingQueue() }), now, [{ name: "noop", run: async () => undefined }]);

    const { status, body } = await admin("GET", "/ops");
    expect(status).toBe(200);
    expect(body.region).toBe("default");
    // Every producer-bound queue, with the runtime's backlog or why there is none.
    expect(body.queues.map((q: any) => q.binding)).toEqual(["IMPORTS", "EVENTS", "SENDS", "JOURNEYS", "CRON"]);
    // (workerd answers Queue.metrics() locally; where a runtime does not, `error` says so and backlog is null.)
    for (const q of body.queues) expect(q).toMatchObject({ backlog: expect.any(Number), backlog_bytes: expect.any(Number), error: null });
    expect(body.queues[0].queue).toBe("apiv2-imports-default");
    // The tick just run, on time.
    expect(body.cron.ticks[0]).toMatchObject({ scheduled_at: new Date(now).toISOString(), failed_tasks: 0 });
    expect(body.cron.late).toBe(false);
    // Each shard with its size against D1's 10 GB and the panels it holds.
    expect(body.shards.map((s: any) => s.binding)).toEqual(["SHARD_0", "SHARD_1"]);
    const shard = body.shards[TEST_SHARD];
    expect(shard).toMatchObject({ shard: TEST_SHARD, limit_bytes: 10 * 1024 ** 3, error: null, action: null });
    expect(shard.size_bytes).toBeGreaterThan(0);
    expect(shard.panels).toBeGreaterThanOrEqual(1);
    // The dead letter, with its re-drive.
    const letter = body.dead_letters.latest.find((l: any) => l.received_at === new Date(now).toISOString() && l.kind === "cron");
    expect(letter.redrive).toEqual({ label: expect.any(String), method: "POST", href: `/admin/v1/dead-letters/${letter.id}/redrive` });
    expect(body.dead_letters.last_24h.find((r: any) => r.queue === "apiv2-imports-default").count).toBeGreaterThanOrEqual(1);
    // The disabled webhook, with the call that enables it.
    const hook = body.disabled_webhooks.find((w: any) => w.id === id);
    expect(hook).toMatchObject({ panel_id: panel.id, shard: TEST_SHARD, label: "CRM", reason: "HTTP 500 for 24 hours" });
    expect(hook.action).toMatchObject({ method: "POST", href: `/admin/v1/panels/${panel.id}/webhooks/${id}/enable` });

    // Following the action fixes it: the webhook leaves the view.
    expect((await admin("POST", hook.action.href.slice("/admin/v1".length))).status).toBe(200);
    const after = await admin("GET", "/ops");
    expect(after.body.disabled_webhooks.find((w: any) => w.id === id)).toBeUndefined();
  });

  it("lists a sender domain that failed its check, and an import with no progress for an hour", async () => {
    const panel = await createPanel();
    expect((await admin("POST", `/panels/${panel.id}/sender-domains`, { domain: "ops-test.example.com" })).status).toBe(201);
    await panelData.prepare("UPDATE sender_domains SET state = 'failed', checked_at = ? WHERE panel_id = ?").bind(Date.now(), panel.id).run();
    const hourAgo = Date.now() - 61 * 60_000;
    const jobId = `imp_ops_${crypto.randomUUID().slice(0, 8)}`;
    await panelData
      .prepare("INSERT INTO import_jobs (id, panel_id, status, phase, sources, attempts, last_error, created_at, updated_at) VALUES (?, ?, 'running', 'rows', '[]', 3, 'HTTP 503 from the source', ?, ?)")
      .bind(jobId, panel.id, hourAgo, hourAgo)
      .run();
    const { body } = await admin("GET", "/ops");
    const domain = body.unverified_sender_domains.find((d: any) => d.panel_id === panel.id);
    expect(domain).toMatchObject({ domain: "ops-test.example.com", state: "failed" });
    expect(domain.action).toMatchObject({ method: "POST", href: `/admin/v1/panels/${panel.id}/sender-domains/ops-test.example.com/verify` });
    const job = body.stuck_jobs.find((j: any) => j.id === jobId);
    expect(job).toMatchObject({ kind: "import", panel_id: panel.id, state: "rows", since: new Date(hourAgo).toISOString() });
    expect(job.detail).toContain("HTTP 503 from the source");
    expect(job.action).toMatchObject({ method: "GET", href: `/admin/v1/panels/${panel.id}/jobs/${jobId}` });
  });

  it("is for the admin token alone", async () => {
    expect((await call("/admin/v1/ops")).status).toBe(401);
  });

  it("re-drives a dead letter by hand and notes what it did; an unknown one is a 404", async () => {
    const now = Date.now();
    await recordDeadLetter(env.DB, { queue: "apiv2-cron-default", kind: "cron", panelId: null, body: JSON.stringify({ cron: "y", shard: 0, now }), attempts: 2, action: "none: the next cron tick sweeps again", receivedAt: now + 1 });
    const letter = (await admin("GET", "/dead-letters?limit=500")).body.dead_letters.find((l: any) => l.received_at === new Date(now + 1).toISOString());
    const redriven = await admin("POST", `/dead-letters/${letter.id}/redrive`);
    expect(redriven).toEqual({ status: 200, body: { id: letter.id, kind: "cron", panel_id: null, action: "none: the next cron tick sweeps again" } });
    const again = (await admin("GET", "/dead-letters?limit=500")).body.dead_letters.find((l: any) => l.id === letter.id);
    expect(again.action).toMatch(/; re-driven by hand at .*: none: the next cron tick sweeps again$/);
    expect((await admin("POST", "/dead-letters/999999999/redrive")).status).toBe(404);
    expect((await admin("POST", "/dead-letters/abc/redrive")).status).toBe(404);
  });
});

describe("GET /health/deep", () => {
  it("answers 200 with each binding's probe when all answer", async () => {
    const response = await call("/health/deep");
    expect(response.status).toBe(200);
    const body = (await response.json()) as any;
    expect(body.status).toBe("ok");
    expect(body.checks.map((c: any) => [c.binding, c.ok])).toEqual([
      ["DB", true],
      ["SHARD_0", true],
      ["SHARD_1", true],
      ["FILES", true],
    ]);
  });

  it("answers 503 naming a shard that does not answer, and R2", async () => {
    const shard = await fetchWith({ SHARD_1: brokenD1() }, new Request("https://api.test/health/deep"));
    expect(shard.status).toBe(503);
    const body = (await shard.json()) as any;
    expect(body.status).toBe("unavailable");
    expect(body.errors).toEqual([{ field: "SHARD_1", message: "unreachable: D1_ERROR: network connection lost" }]);

    const files = { head: async () => Promise.reject(new Error("R2 is down")) } as unknown as R2Bucket;
    const r2 = await fetchWith({ FILES: files, DB: brokenD1() }, new Request("https://api.test/health/deep"));
    expect(r2.status).toBe(503);
    expect(((await r2.json()) as any).errors.map((e: any) => e.field)).toEqual(["DB", "FILES"]);
    // /health stays as it was: configuration only.
    expect((await fetchWith({ SHARD_1: brokenD1() }, new Request("https://api.test/health"))).status).toBe(200);
  });
});

describe("operations alerts", () => {
  it("refuses a subscription with both an email and a webhook, or an unknown kind, naming the field", async () => {
    const both = await admin("POST", "/alerts/subscriptions", { kinds: ["dead_letters"], email: "ops@example.com", webhook: { url: "https://hooks.example.com/x" } });
    expect(both.status).toBe(400);
    expect(both.body.errors.map((e: any) => e.field)).toEqual(["email"]);
    const kind = await admin("POST", "/alerts/subscriptions", { kinds: ["everything"], email: "ops@example.com" });
    expect(kind.status).toBe(400);
    expect(kind.body.errors[0].field).toBe("kinds.0");
  });

  it("posts a disabled webhook once, signed, and again only after it was enabled and disabled again", async () => {
    const bucket = receiver.bucket("ops-alerts");
    const created = await admin("POST", "/alerts/subscriptions", { kinds: ["webhook_disabled"], webhook: { url: receiver.hookUrl(bucket), signing_secret: secret } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ kinds: ["webhook_disabled"], email: null, webhook_url: receiver.hookUrl(bucket), signing_secret_set: true, last_error: null });
    try {
      const { panel, id } = await disabledWebhook("Orders");
      const key = `webhook_disabled:${panel.id}:${id}`;
      const shardDb = panelData;
      const alertsFor = async () => (await receiver.requests(bucket)).filter((r) => (JSON.parse(r.body).alerts as any[]).some((a) => a.key === key));

      await checkShardAlerts(env, shardDb, TEST_SHARD, Date.now());
      await checkShardAlerts(env, shardDb, TEST_SHARD, Date.now());
      let posts = await alertsFor();
      expect(posts).toHaveLength(1);
      // Signed as webhooks are: any Standard Webhooks library verifies it with the secret.
      expect(() => new Webhook(secret).verify(posts[0]!.body, posts[0]!.headers)).not.toThrow();
      const alert = (JSON.parse(posts[0]!.body).alerts as any[]).find((a) => a.key === key);
      expect(alert).toMatchObject({ kind: "webhook_disabled", panel_id: panel.id });
      expect(alert.detail).toContain("Orders");
      expect((await admin("GET", "/ops")).body.alerts.holding.some((c: any) => c.key === key)).toBe(true);

      // Enabled: the condition clears, silently.
      expect((await admin("POST", `/panels/${panel.id}/webhooks/${id}/enable`)).status).toBe(200);
      await checkShardAlerts(env, shardDb, TEST_SHARD, Date.now());
      expect(await alertsFor()).toHaveLength(1);
      expect((await admin("GET", "/ops")).body.alerts.holding.some((c: any) => c.key === key)).toBe(false);

      // Disabled again: told again, once.
      await setWebhookState(panelData, panel.id, id, { state: "disabled", reason: "HTTP 410", from: ["configured", "operational"] }, Date.now());
      await checkShardAlerts(env, shardDb, TEST_SHARD, Date.now());
      await checkShardAlerts(env, shardDb, TEST_SHARD, Date.now());
      posts = await alertsFor();
      expect(posts).toHaveLength(2);
    } finally {
      expect((await call(`/admin/v1/alerts/subscriptions/${created.body.id}`, { method: "DELETE", headers: { authorization: "Bearer test-admin-token" } })).status).toBe(204);
    }
  });

  it("mails a shard past 80% of its limit once, and again after it fell below and rose past it", async () => {
    const mail = keptMail();
    const mailEnv = withBindings(env, { MAILER: mail.MAILER });
    const email = `shards-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const subscribed = await admin("POST", "/alerts/subscriptions", { kinds: ["shard_full"], email });
    try {
      const mine = () => mail.mails.filter((m) => m.to === email);
      // A limit of 1 KB stands for 10 GB: the shard holds far more than 80% of it.
      await checkShardAlerts(mailEnv, panelData, TEST_SHARD, Date.now(), 1024);
      await checkShardAlerts(mailEnv, panelData, TEST_SHARD, Date.now(), 1024);
      expect(mine()).toHaveLength(1);
      expect(mine()[0]!.text).toMatch(new RegExp(`shard ${TEST_SHARD} holds \\d+ bytes, \\d+% of its 1024`));
      await checkShardAlerts(mailEnv, panelData, TEST_SHARD, Date.now());
      expect(mine()).toHaveLength(1);
      await checkShardAlerts(mailEnv, panelData, TEST_SHARD, Date.now(), 1024);
      expect(mine()).toHaveLength(2);
      await checkShardAlerts(mailEnv, panelData, TEST_SHARD, Date.now());
    } finally {
      await call(`/admin/v1/alerts/subscriptions/${subscribed.body.id}`, { method: "DELETE", headers: { authorization: "Bearer test-admin-token" } });
    }
  });

  it("mails dead letters and a late cron once each, and notes a webhook subscriber that fails", async () => {
    const mail = keptMail();
    const mailEnv = withBindings(env, { MAILER: mail.MAILER, CRON: collectingQueue() });
    const email = `ops-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const subscribed = await admin("POST", "/alerts/subscriptions", { kinds: ["dead_letters", "cron_late"], email });
    const failing = receiver.bucket("ops-fail");
    await receiver.script(failing, [{ status: 500 }, { status: 500 }, { status: 500 }]);
    const hook = await admin("POST", "/alerts/subscriptions", { kinds: ["cron_late"], webhook: { url: receiver.hookUrl(failing) } });
    try {
      const now = Date.now();
      await recordDeadLetter(env.DB, { queue: "apiv2-sends-default", kind: "sends", panelId: null, body: "{}", attempts: 10, action: "none", receivedAt: now });
      // A tick that started 7 minutes after it was due, twice.
      await checkControlAlerts(mailEnv, now - 7 * 60_000, now);
      await checkControlAlerts(mailEnv, now - 7 * 60_000 + 60_000, now + 60_000);
      const mine = mail.mails.filter((m) => m.to === email);
      expect(mine.map((m) => m.subject)).toEqual([expect.stringMatching(/dead letters|cron late/)]);
      expect(mine[0]!.text).toContain("dead letters in the last hour");
      expect(mine[0]!.text).toContain("the cron runs 7 minutes late");
      const failed = (await admin("GET", "/alerts/subscriptions")).body.subscriptions.find((s: any) => s.id === hook.body.id);
      expect(failed.last_error).toBe("the webhook answered HTTP 500");

      // On time again: the late cron clears (dead letters of the last hour still hold)...
      await checkControlAlerts(mailEnv, now + 120_000, now + 120_000);
      expect(mail.mails.filter((m) => m.to === email)).toHaveLength(1);
      // ...and a late tick after it is told again.
      await checkControlAlerts(mailEnv, now + 180_000 - 6 * 60_000, now + 180_000);
      const again = mail.mails.filter((m) => m.to === email);
      expect(again).toHaveLength(2);
      expect(again[1]!.text).toContain("the cron runs 6 minutes late");
      expect(again[1]!.text).not.toContain("dead letters");
    } finally {
      await admin("DELETE", `/alerts/subscriptions/${subscribed.body.id}`).catch(() => undefined);
      await call(`/admin/v1/alerts/subscriptions/${hook.body.id}`, { method: "DELETE", headers: { authorization: "Bearer test-admin-token" } });
    }
  });
});
