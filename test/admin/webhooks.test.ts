import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { getWebhook, setWebhookState } from "../../src/store/webhooks";
import { admin, call, createPanel, receiver, panelData } from "../support/helpers";
import { createWebhook, eventObject, queue, range } from "../support/webhooks";

const secret = `whsec_${btoa("0123456789abcdef0123456789abcdef")}`;

describe("webhook configuration", () => {
  it("creates a configured webhook and shows it without secrets", async () => {
    const panel = await createPanel();
    const url = receiver.hookUrl(receiver.bucket());
    const created = await admin("POST", `/panels/${panel.id}/webhooks`, {
      label: "CRM",
      url,
      username: "crm",
      password: "hunter2-very-secret",
      alert: { emails: ["ops@example.com"], frequency: "hourly" },
      signing_secret: secret,
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^whk_/),
      label: "CRM",
      url,
      username: "crm",
      password_set: true,
      signing_secret_set: true,
      version: "2.0",
      alert: { emails: ["ops@example.com"], frequency: "hourly" },
      state: "configured",
      disabled_reason: null,
      disabled_at: null,
      backlog: 0,
      backlog_oldest_at: null,
      in_flight: null,
      dropped: 0,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const id = created.body.id;
    const answers = [
      created,
      await admin("GET", `/panels/${panel.id}/webhooks/${id}`),
      await admin("GET", `/panels/${panel.id}/webhooks`),
      await admin("PATCH", `/panels/${panel.id}/webhooks/${id}`, { label: "CRM 2" }),
      await admin("POST", `/panels/${panel.id}/webhooks/${id}/test`),
      await admin("GET", `/panels/${panel.id}/webhooks/${id}/deliveries`),
    ];
    for (const answer of answers) {
      expect(JSON.stringify(answer.body)).not.toContain("hunter2");
      expect(JSON.stringify(answer.body)).not.toContain(secret);
    }
    const stored = await getWebhook(panelData, panel.id, id);
    expect(stored).not.toBeNull();
    expect(JSON.stringify(stored)).not.toContain("hunter2");
    expect(JSON.stringify(stored)).not.toContain(secret.slice(6));
    expect((await admin("GET", `/panels/${panel.id}/webhooks`)).body.webhooks.map((w: { label: string }) => w.label)).toEqual(["CRM 2"]);
  });

  it("tests the endpoint: operational only on HTTP 200", async () => {
    const panel = await createPanel({ name: "Test Panel" });
    const hook = await createWebhook(panel, {}, false);
    await receiver.script(hook.bucket, [{ status: 204 }, { status: 404, body: "no such hook" }, { status: 200 }]);
    expect((await admin("POST", `${hook.path}/test`)).body).toMatchObject({ state: "configured", status: 204 });
    const notFound = await admin("POST", `${hook.path}/test`);
    expect(notFound.body).toEqual({ state: "configured", status: 404, error: null, message: expect.stringContaining("HTTP 404") });
    expect((await admin("POST", `${hook.path}/test`)).body).toMatchObject({ state: "operational", status: 200 });

    // The sample batch is a realistic one in the delivery format.
    const [sample] = await receiver.requests(hook.bucket);
    const payload = JSON.parse(new URLSearchParams(sample!.body).get("data")!);
    expect(Object.keys(payload)).toEqual(["Test Panel"]);
    expect(payload["Test Panel"].map((e: { channel: string }) => e.channel)).toEqual(["email", "sms", "custom_activity"]);
    expect(payload["Test Panel"][2]).toMatchObject({ msgid: "-1", custom_params: {}, payload_params: { items: expect.any(Array) } });
    const log = (await admin("GET", `${hook.path}/deliveries`)).body.deliveries;
    expect(log.map((d: { kind: string; status: number }) => [d.kind, d.status])).toEqual([["test", 200], ["test", 404], ["test", 204]]);
    expect(log[1]).toMatchObject({ response: "no such hook", outcome: "failed", events: 3, duration_ms: expect.any(Number) });
  });

  it("changes and removes settings; a new URL must pass the test again", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, { username: "u", password: "p", signing_secret: secret, alert: { emails: ["a@example.com"] } });
    const patched = await admin("PATCH", hook.path, { username: null, signing_secret: null, alert: null, version: "1.0" });
    expect(patched.body).toMatchObject({ username: null, password_set: false, signing_secret_set: false, alert: null, version: "1.0", state: "operational" });
    const moved = await admin("PATCH", hook.path, { url: receiver.hookUrl(receiver.bucket()) });
    expect(moved.body.state).toBe("configured");
    expect((await admin("PATCH", hook.path, { password: "x" })).status).toBe(400);
    // A version as a number or without its .0 is the same version.
    expect((await admin("PATCH", hook.path, { version: 2 })).body.version).toBe("2.0");
    expect((await admin("PATCH", hook.path, { version: "1" })).body.version).toBe("1.0");
    expect((await admin("PATCH", hook.path, { version: 2.5 })).status).toBe(400);
  });

  it("a PATCH that keeps the URL leaves a disable in place; the same URL again is no change", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    await setWebhookState(panelData, panel.id, hook.id, { state: "disabled", reason: "HTTP 500", from: ["configured", "operational"] }, 1);
    const relabelled = await admin("PATCH", hook.path, { label: "Renamed" });
    expect(relabelled.body).toMatchObject({ label: "Renamed", state: "disabled", disabled_reason: "HTTP 500" });
    const sameUrl = await admin("PATCH", hook.path, { url: relabelled.body.url });
    expect(sameUrl.body.state).toBe("disabled");
  });

  it.each([
    ["no label", { url: "https://hooks.example.com/x" }, "label"],
    ["an ftp URL", { label: "L", url: "ftp://example.com/x" }, "url"],
    ["credentials in the URL", { label: "L", url: "https://u:p@example.com/x" }, "url"],
    ["a password without a username", { label: "L", url: "https://hooks.example.com/x", password: "p" }, "password"],
    ["an unknown version", { label: "L", url: "https://hooks.example.com/x", version: "3.0" }, "version"],
    ["a bad alert address", { label: "L", url: "https://hooks.example.com/x", alert: { emails: ["nope"] } }, "alert.emails.0"],
    ["an unknown frequency", { label: "L", url: "https://hooks.example.com/x", alert: { emails: ["a@example.com"], frequency: "weekly" } }, "alert.frequency"],
    ["a signing secret that is not whsec_", { label: "L", url: "https://hooks.example.com/x", signing_secret: "plain" }, "signing_secret"],
    ["a short signing secret", { label: "L", url: "https://hooks.example.com/x", signing_secret: `whsec_${btoa("short")}` }, "signing_secret"],
    ["an unknown member", { label: "L", url: "https://hooks.example.com/x", token: "t" }, "token"],
  ])("refuses %s", async (_label, body, field) => {
    const panel = await createPanel();
    const answer = await admin("POST", `/panels/${panel.id}/webhooks`, body);
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].field).toBe(field);
    expect((await admin("GET", `/panels/${panel.id}/webhooks`)).body.webhooks).toEqual([]);
  });

  it("refuses private addresses when private fetches are not allowed", async () => {
    const panel = await createPanel();
    const strict = { ...env, ALLOW_PRIVATE_FETCH: "false" };
    const { default: worker } = await import("../../src/index");
    const response = await worker.fetch(
      new Request(`https://api.test/admin/v1/panels/${panel.id}/webhooks`, {
        method: "POST",
        headers: { authorization: "Bearer test-admin-token", "content-type": "application/json" },
        body: JSON.stringify({ label: "L", url: "http://169.254.169.254/latest" }),
      }),
      strict,
      { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext,
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { errors: Array<{ field: string }> }).errors[0]!.field).toBe("url");
  });

  it("deletes a webhook with its backlog", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, {}, false);
    await queue(hook, range(0, 10).map((n) => eventObject(n)));
    const removed = await call(`/admin/v1${hook.path}`, { method: "DELETE", headers: { authorization: "Bearer test-admin-token" } });
    expect(removed.status).toBe(204);
    expect((await admin("GET", hook.path)).status).toBe(404);
    expect((await admin("POST", `${hook.path}/events`, { events: [eventObject(1)] })).status).toBe(404);
    const stub = env.WEBHOOKS.get(env.WEBHOOKS.idFromName(hook.id));
    expect(await stub.status()).toMatchObject({ backlog: 0, inFlight: null });
  });
});

describe("queueing events through the admin route", () => {
  it.each([
    ["an event the channel does not have", { ...eventObject(1), channel: "sms", event: "open" }, "events.0.event"],
    ["an event on custom_activity", { ...eventObject(1), channel: "custom_activity" }, "events.0.event"],
    ["payload_params on a message event", { ...eventObject(1), payload_params: { items: [] } }, "events.0.payload_params"],
    ["a bad ts", { ...eventObject(1), event_params: { ts: "yesterday" } }, "events.0.event_params.ts"],
    ["no journey name", { ...eventObject(1), journey_name: "" }, "events.0.journey_name"],
    ["an unknown channel", { ...eventObject(1), channel: "fax" }, "events.0.channel"],
    ["an event too large", { ...eventObject(1), att_params: { NOTES: "x".repeat(200_000) } }, "events.0.event"],
  ])("refuses %s and queues nothing", async (_label, event, field) => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, {}, false);
    const answer = await admin("POST", `${hook.path}/events`, { events: [eventObject(0), event] });
    expect(answer.status).toBe(400);
    expect(answer.body.errors[0].field).toBe(field.replace("events.0", "events.1"));
    expect((await admin("GET", hook.path)).body.backlog).toBe(0);
  });

  it("accepts the 1.0 name view for bpn delivered", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, {}, false);
    expect(await queue(hook, [{ channel: "bpn", event: "view", msgid: "p", journey_name: "J" }])).toEqual({ accepted: 1, duplicates: 0 });
  });
});

describe("panel isolation", () => {
  it("another panel cannot reach the webhook", async () => {
    const mine = await createPanel();
    const theirs = await createPanel();
    const hook = await createWebhook(mine, { password: "pw", username: "u" }, false);
    const foreign = `/panels/${theirs.id}/webhooks/${hook.id}`;
    expect((await admin("GET", foreign)).status).toBe(404);
    expect((await admin("PATCH", foreign, { label: "stolen" })).status).toBe(404);
    for (const action of ["test", "enable"]) {
      expect(await admin("POST", `${foreign}/${action}`)).toEqual({ status: 404, body: { error: `No webhook with id "${hook.id}" in this panel`, errors: [] } });
    }
    expect((await admin("GET", `${foreign}/deliveries`)).status).toBe(404);
    expect((await admin("POST", `${foreign}/events`, { events: [eventObject(1)] })).status).toBe(404);
    expect((await call(`/admin/v1${foreign}`, { method: "DELETE", headers: { authorization: "Bearer test-admin-token" } })).status).toBe(404);
    expect((await admin("GET", `/panels/${theirs.id}/webhooks`)).body.webhooks).toEqual([]);
    expect(await receiver.requests(hook.bucket)).toEqual([]);
    expect((await admin("GET", hook.path)).body).toMatchObject({ label: "CRM sync", backlog: 0 });
  });
});
