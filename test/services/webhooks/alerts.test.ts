import { describe, expect, it } from "vitest";
import { addFailure, alertDueAt, alertMessage } from "../../../src/domain/webhooks/alerts";
import { admin, createPanel, receiver } from "../../support/helpers";
import { advance, createWebhook, drive, eventObject, queue, range } from "../../support/webhooks";

const HOUR = 3600_000;

async function alerts(panelId: string) {
  return (await admin("GET", `/panels/${panelId}/notifications?kind=webhook_alert`)).body.notifications as Array<{ to: string[]; subject: string; text: string; status: string }>;
}

describe("failure alert emails", () => {
  it("names the webhook, the status, a response excerpt and how to re-enable", async () => {
    const panel = await createPanel({ name: "Alerts Inc" });
    const hook = await createWebhook(panel, { alert: { emails: ["Ops@Example.com", "dev@example.com"], frequency: "immediate" } });
    await receiver.script(hook.bucket, [{ status: 500, body: "database is down" }]);
    await queue(hook, range(0, 100).map((n) => eventObject(n)));
    await drive(hook.id);

    const [mail, ...more] = await alerts(panel.id);
    expect(more).toEqual([]);
    expect(mail).toMatchObject({ to: ["ops@example.com", "dev@example.com"], status: "sent", subject: 'Webhook "CRM sync" is disabled: HTTP 500' });
    expect(mail!.text).toContain(hook.id);
    expect(mail!.text).toContain("database is down");
    expect(mail!.text).toContain(`POST /admin/v1/panels/${panel.id}/webhooks/${hook.id}/enable`);
    expect(mail!.text).toContain("100 undelivered event(s)");
  });

  it("sends every failure at once when immediate", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, { alert: { emails: ["ops@example.com"], frequency: "immediate" } });
    await receiver.script(hook.bucket, [{ status: 503 }]);
    await queue(hook, range(0, 100).map((n) => eventObject(n)));
    await drive(hook.id);
    await advance(hook.id, 7_000);
    await drive(hook.id);
    const sent = await alerts(panel.id);
    expect(sent).toHaveLength(2);
    expect(sent[0]!.subject).toBe('Webhook "CRM sync" failed: HTTP 503');
  });

  it("gathers the failures of an hour into one mail when hourly", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel, { alert: { emails: ["ops@example.com"], frequency: "hourly" } });
    await receiver.script(hook.bucket, [{ status: 503 }, { status: 503 }, { status: 500, body: "gone for good" }]);
    await queue(hook, range(0, 100).map((n) => eventObject(n)));
    await drive(hook.id);
    expect(await alerts(panel.id)).toHaveLength(1);

    // Two more failures within the hour (the second disables): no mail yet.
    await advance(hook.id, 7_000);
    await drive(hook.id);
    await advance(hook.id, 6 * 60_000);
    await drive(hook.id);
    expect((await admin("GET", `/panels/${panel.id}/webhooks/${hook.id}`)).body.state).toBe("disabled");
    expect(await alerts(panel.id)).toHaveLength(1);

    // When the hour is over, the gathered failures go out in one mail, with the disable.
    await advance(hook.id, HOUR);
    await drive(hook.id);
    const sent = await alerts(panel.id);
    expect(sent).toHaveLength(2);
    expect(sent[0]!.subject).toBe('Webhook "CRM sync" is disabled: HTTP 500');
    expect(sent[0]!.text).toContain("Failures since the last alert: 2");
    expect(sent[0]!.text).toContain("gone for good");
  });

  it("sends nothing without an alert configured", async () => {
    const panel = await createPanel();
    const hook = await createWebhook(panel);
    await receiver.script(hook.bucket, [{ status: 500 }]);
    await queue(hook, range(0, 100).map((n) => eventObject(n)));
    await drive(hook.id);
    expect((await admin("GET", `/panels/${panel.id}/webhooks/${hook.id}`)).body.state).toBe("disabled");
    expect(await alerts(panel.id)).toEqual([]);
  });
});

describe("alert throttle rules", () => {
  it("spaces alerts by the frequency", () => {
    expect(alertDueAt("immediate", 1_000)).toBe(1_000);
    expect(alertDueAt("hourly", null)).toBe(0);
    expect(alertDueAt("hourly", 1_000)).toBe(1_000 + HOUR);
    expect(alertDueAt("daily", 1_000)).toBe(1_000 + 24 * HOUR);
  });

  it("counts gathered failures and keeps the latest", () => {
    const first = addFailure(null, { lastAt: 10, batchId: "b1", answer: "HTTP 503", errorMessage: null, response: "a" });
    const second = addFailure(first, { lastAt: 20, batchId: "b1", answer: "error: timeout", errorMessage: "no answer", response: "" });
    expect(second).toEqual({ failures: 2, firstAt: 10, lastAt: 20, batchId: "b1", answer: "error: timeout", errorMessage: "no answer", response: "" });
    const { subject, text } = alertMessage(second, {
      webhookId: "whk_1",
      label: "L",
      url: "https://x.example/h",
      panelId: "pnl_1",
      panelName: "P",
      frequency: "daily",
      state: "operational",
      disabledReason: null,
      backlog: 7,
      retentionDays: 7,
      nextAttemptAt: 0,
    });
    expect(subject).toBe('Webhook "L" failed: error: timeout');
    expect(text).toContain("error: timeout (no answer)");
    expect(text).toContain("tried again at 1970-01-01T00:00:00.000Z");
  });
});
