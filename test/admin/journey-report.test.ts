import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { eventually, pipelineSettled } from "../support/activity";
import { htmlOf } from "../support/broadcasts";
import { admin, apiFor, call, createPanel, panelData, receiver, type TestPanel } from "../support/helpers";
import { act, cartPanel, createWebhook, delivered, messagesOf, startJourney } from "../support/journeys";
import { advance, deliveries, drive, eventsOf } from "../support/webhooks";

/** A running journey: add_to_cart -> email -> wait for an open (2 days) -> webhook on the open; Ada and Bob enter it. */
async function reminderJourney() {
  const panel = await createPanel();
  const { cart } = await cartPanel(panel);
  const hook = await createWebhook(panel);
  const api = apiFor(panel);
  for (const [EMAIL, NAME] of [["ada@example.com", "Ada"], ["bob@example.com", "Bob"]]) await api("contact", "add", { data: { EMAIL, NAME, CITY: "Pune" } });
  const journey = await startJourney(panel, {
    name: "Cart reminder",
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: [
      { id: "mail", type: "email", subject: "You left something", html: "<p>Hi {{NAME}}</p>", sender_name: "Shop", sender_email: "shop@example.com" },
      { id: "wait", type: "wait_for_event", after: "mail", events: ["open"], within: "2d" },
      { id: "hook", type: "webhook", after: "wait", on: "event", webhook: hook.id, attributes: ["EMAIL"], params: { Action: "reminded" } },
    ],
  });
  await act(panel, cart, "ada@example.com");
  await act(panel, cart, "bob@example.com");
  return { panel, cart, hook, journey };
}

/** The open pixel's path in the email the outbox kept for `to`. */
async function openPixel(panel: TestPanel, to: string) {
  const message = (await messagesOf(panel, "email")).find((m) => m.recipient === to);
  const raw = await (await env.FILES.get(`outbox/${panel.id}/${message.msgid}.eml`))!.text();
  return { msgid: message.msgid as string, open: /http:\/\/127\.0\.0\.1:8787(\/t\/o\/[^"]+)/.exec(htmlOf(raw))![1]! };
}

async function opened(panel: TestPanel, msgid: string, count: number) {
  await eventually(async () => {
    await pipelineSettled(panel.id);
    const row = await panelData.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND msgid = ? AND name = 'open'").bind(panel.id, msgid).first<{ n: number }>();
    return row!.n >= count ? true : undefined;
  });
}

const report = (panel: TestPanel, journeyId: string, query = "") => admin("GET", `/panels/${panel.id}/journeys/${journeyId}/report${query}`);

const sumOf = (hours: Array<Record<string, number>>, key: string) => hours.reduce((total, h) => total + h[key]!, 0);

describe("journey report", () => {
  it("counts the funnel per step, the messages and their opens, and the webhook deliveries of a running journey", async () => {
    const { panel, hook, journey } = await reminderJourney();
    const ada = await openPixel(panel, "ada@example.com");
    // The first delivery of the webhook's batch fails and is retried; the second is taken.
    await receiver.script(hook.bucket, [{ status: 503 }, { status: 200 }]);
    expect((await call(ada.open)).status).toBe(200);
    expect((await call(ada.open)).status).toBe(200);
    await opened(panel, ada.msgid, 2);
    await delivered(hook);
    await advance(hook.id, 120_000);
    await drive(hook.id);
    const received = (await deliveries(hook.bucket)).flatMap(eventsOf);
    // The test request, the 503 and the delivery that was taken.
    expect(received.filter((e) => e.journey_name === "Cart reminder")).toHaveLength(2);

    // The dispatcher's clock was moved on two minutes for the retry, so its delivery may fall in
    // the next hour: the period runs to the end of tomorrow (a date as `to` takes in its day).
    const throughTomorrow = `?to=${new Date(Date.now() + 86_400_000).toISOString().slice(0, 10)}`;
    const answer = await report(panel, journey.id, throughTomorrow);
    expect(answer.status).toBe(200);
    const body = answer.body;
    expect(body).toMatchObject({ journey_id: journey.id, entered: 2, completed: 1, exited: 0, webhook_ids: [hook.id] });
    expect(body.steps).toEqual({
      mail: { type: "email", entered: 2, waiting: 0, passed: 2, failed: 0, timed_out: 0 },
      wait: { type: "wait_for_event", entered: 2, waiting: 1, passed: 1, failed: 0, timed_out: 0 },
      hook: { type: "webhook", entered: 1, waiting: 0, passed: 1, failed: 0, timed_out: 0 },
    });
    expect(body.channels.email).toEqual({ sent: 2, failed: 0, skipped: 0, delivered: 2, opens: 2, opened: 1, clicks: 0, clicked: 0, bounced: 0 });
    expect(body.channels.sms).toEqual({ sent: 0, failed: 0, skipped: 0, delivered: 0, opens: 0, opened: 0, clicks: 0, clicked: 0, bounced: 0 });
    expect(sumOf(body.webhooks, "delivered")).toBe(1);
    expect(sumOf(body.webhooks, "retried")).toBe(1);
    expect(sumOf(body.webhooks, "failed")).toBe(0);
    for (const h of body.webhooks) expect(h.hour).toMatch(/^\d{4}-\d\d-\d\dT\d\d:00:00\.000Z$/);

    // The aggregates agree with a scan of the rows they count.
    const scanned = await panelData
      .prepare("SELECT step_id, COUNT(*) AS n FROM journey_step_runs WHERE journey_id = ? GROUP BY step_id ORDER BY step_id")
      .bind(journey.id)
      .all<{ step_id: string; n: number }>();
    expect(Object.fromEntries(scanned.results.map((r) => [r.step_id, r.n]))).toEqual({ hook: 1, mail: 2, wait: 2 });

    // The same activity posted again for Ada (already in the journey) and a third open change no funnel figure but the opens.
    expect((await call(ada.open)).status).toBe(200);
    await opened(panel, ada.msgid, 3);
    const again = (await report(panel, journey.id, throughTomorrow)).body;
    expect(again.steps).toEqual(body.steps);
    expect(again.channels.email).toMatchObject({ opens: 3, opened: 1 });

    // A period before the journey ran: nothing happened in it, but Bob still waits.
    const past = (await report(panel, journey.id, "?from=2020-01-01&to=2020-01-31")).body;
    expect(past).toMatchObject({ entered: 0, completed: 0, period: { from: "2020-01-01T00:00:00.000Z", to: "2020-02-01T00:00:00.000Z" }, webhooks: [] });
    expect(past.steps.wait).toEqual({ type: "wait_for_event", entered: 0, waiting: 1, passed: 0, failed: 0, timed_out: 0 });
    expect(past.channels.email.sent).toBe(0);
  });

  it("counts a skipped email as the step's failure, and an erased contact no longer waits", async () => {
    const { panel, cart, journey } = await reminderJourney();
    await apiFor(panel)("contact", "add", { data: { EMAIL: "cy@example.com", NAME: "Cy" } });
    expect((await admin("PUT", `/panels/${panel.id}/contacts/cy@example.com/preferences`, { email: "unsubscribed" })).status).toBe(200);
    await act(panel, cart, "cy@example.com");

    const body = (await report(panel, journey.id)).body;
    expect(body.steps.mail).toEqual({ type: "email", entered: 3, waiting: 0, passed: 2, failed: 1, timed_out: 0 });
    expect(body.steps.wait).toMatchObject({ entered: 3, waiting: 3 });
    expect(body.channels.email).toMatchObject({ sent: 2, skipped: 1, failed: 0 });
    const cy = (await admin("GET", `/panels/${panel.id}/contacts/cy@example.com/journeys`)).body.journeys[0];
    expect(cy.steps[0]).toMatchObject({ step_id: "mail", result: "skipped" });

    expect((await admin("DELETE", `/panels/${panel.id}/contacts/bob@example.com`)).status).toBe(200);
    expect((await report(panel, journey.id)).body.steps.wait).toMatchObject({ entered: 3, waiting: 2 });
  });

  it("the migration's backfill counts what journeys did before it as the triggers do", async () => {
    const { panel, hook, journey } = await reminderJourney();
    const ada = await openPixel(panel, "ada@example.com");
    await call(ada.open);
    await call(ada.open);
    await opened(panel, ada.msgid, 2);
    await delivered(hook);
    // A fixed period, so that both reads cover the same hours.
    const period = `?from=${new Date(Date.now() - 86_400_000).toISOString()}&to=${new Date(Date.now() + 86_400_000).toISOString()}`;
    const counted = (await report(panel, journey.id, period)).body;

    // As if the journey had run before migration 0053: no aggregates, then its backfill statements.
    const migration = env.SHARD_MIGRATIONS.find((m) => m.name.startsWith("0053_"))!;
    const tables = ["journey_stats", "journey_step_stats", "journey_step_waiting", "journey_channel_stats", "journey_message_marks"];
    await panelData.batch(tables.map((table) => panelData.prepare(`DELETE FROM ${table}`)));
    expect((await report(panel, journey.id)).body.steps.mail.entered).toBe(0);
    const backfill = migration.queries.filter((q) => /^\s*(?:--[^\n]*\n\s*)*INSERT/i.test(q));
    expect(backfill.length).toBe(9);
    await panelData.batch(backfill.map((q) => panelData.prepare(q)));
    expect((await report(panel, journey.id, period)).body).toEqual(counted);
  });

  it("checks the period and names the field", async () => {
    const { panel, journey } = await reminderJourney();
    const cases: Array<[string, string, string]> = [
      ["?from=2026-02-01&to=2026-01-01", "to", "must be after from"],
      ["?from=2024-01-01&to=2026-01-01", "to", "must be at most 366 days after from"],
      ["?from=yesterday", "from", "must be an ISO date (YYYY-MM-DD) or date-time (YYYY-MM-DDThh:mm:ssZ, UTC)"],
      ["?from=2020-01-01", "from", "must be at most 366 days before to (default: now)"],
      ["?to=2020-01-01&from=2020-01-02T00:00:00Z", "to", "must be after from"],
      ["?days=7", "days", "is not an accepted member"],
    ];
    for (const [query, field, message] of cases) {
      const answer = await report(panel, journey.id, query);
      expect(answer.status, query).toBe(400);
      expect(answer.body.errors, query).toEqual([{ field, message }]);
    }
    // A whole year ending now, and a single day, are fine.
    expect((await report(panel, journey.id, `?from=${new Date(Date.now() - 366 * 86_400_000 + 60_000).toISOString()}`)).status).toBe(200);
    expect((await report(panel, journey.id, "?from=2026-01-01&to=2026-01-01")).body.period).toEqual({ from: "2026-01-01T00:00:00.000Z", to: "2026-01-02T00:00:00.000Z" });
  });

  it("another panel's journey and contact answer 404", async () => {
    const { panel, journey } = await reminderJourney();
    const other = await createPanel();
    const answer = await report(other, journey.id);
    expect(answer.status).toBe(404);
    expect(answer.body.error).toBe(`No journey with id "${journey.id}" in this panel`);
    expect((await admin("GET", `/panels/${other.id}/contacts/ada@example.com/journeys`)).status).toBe(404);
    expect((await admin("GET", `/panels/${panel.id}/contacts/nobody@example.com/journeys`)).status).toBe(404);
  });
});

describe("a contact's path through journeys", () => {
  it("lists each journey entered, newest first, with the steps run and what each came to", async () => {
    const { panel, hook, journey } = await reminderJourney();
    const ada = await openPixel(panel, "ada@example.com");
    await call(ada.open);
    await opened(panel, ada.msgid, 1);
    await delivered(hook);

    const path = await admin("GET", `/panels/${panel.id}/contacts/ada@example.com/journeys`);
    expect(path.status).toBe(200);
    expect(path.body.journeys).toEqual([
      {
        journey_id: journey.id,
        name: "Cart reminder",
        status: "completed",
        entered_at: expect.stringMatching(/Z$/),
        ended_at: expect.stringMatching(/Z$/),
        steps: [
          { step_id: "mail", type: "email", at: expect.any(String), result: "sent" },
          { step_id: "wait", type: "wait_for_event", at: expect.any(String), result: "event" },
          { step_id: "hook", type: "webhook", at: expect.any(String), result: "queued" },
        ],
      },
    ]);
    const bob = (await admin("GET", `/panels/${panel.id}/contacts/bob@example.com/journeys`)).body.journeys;
    expect(bob).toEqual([
      expect.objectContaining({
        status: "active",
        ended_at: null,
        steps: [
          { step_id: "mail", type: "email", at: expect.any(String), result: "sent" },
          { step_id: "wait", type: "wait_for_event", at: expect.any(String), result: "waiting" },
        ],
      }),
    ]);
  });
});
