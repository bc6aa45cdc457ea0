import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { DAY_MS, utcDayOf } from "../../src/domain/time";
import { contactCountsCron, panelHistory } from "../../src/services/overview/history";
import { processEventBatches } from "../../src/services/pipeline/consumer";
import type { PipelineStep } from "../../src/services/pipeline/steps";
import { appendEventBatches } from "../../src/store/event-batches";
import { act } from "../support/journeys";
import { defineActivity } from "../support/activity";
import { fireCron, outbox, scheduled, waitForCampaign } from "../support/broadcasts";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../support/helpers";

const history = async (panel: TestPanel, query = "") => admin("GET", `/panels/${panel.id}/overview/history${query}`);

describe("the Home screen's history", () => {
  it("counts events per day by activity, once each, from the pipeline; other panels' events are not counted", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const cart = await defineActivity(panel, "Added to cart");
    const viewed = await defineActivity(panel, "Viewed");
    for (const identity of ["a@example.com", "b@example.com", "c@example.com"]) await act(panel, cart, identity);
    await act(panel, viewed, "a@example.com");
    await act(other, await defineActivity(other, "Added to cart"), "z@example.com");

    const { status, body } = await history(panel, "?days=7");
    expect(status).toBe(200);
    const today = utcDayOf(Date.now());
    expect(body.days).toEqual([6, 5, 4, 3, 2, 1, 0].map((back) => today - back * DAY_MS));
    expect(body.events).toEqual([
      { name: "custom_activity:Added to cart", counts: [0, 0, 0, 0, 0, 0, 3] },
      { name: "custom_activity:Viewed", counts: [0, 0, 0, 0, 0, 0, 1] },
    ]);
    // Contacts: today's is the count now; no day was counted before.
    expect(body.contacts).toEqual([null, null, null, null, null, null, 3]);
    expect(body.sends).toEqual([]);
  });

  it("counts a batch's events once when its steps are retried, and by the day they happened", async () => {
    const panel = await createPanel();
    const now = Date.now();
    const events = [
      { guid: "r1", occurredAt: now },
      { guid: "r2", occurredAt: now },
      { guid: "r3", occurredAt: now - 2 * DAY_MS },
    ].map((e) => ({ ...e, channel: "custom_activity" as const, name: "signup", identity: "r@example.com", claimed: true }));
    const { batchIds } = await appendEventBatches(panelData, panel.id, events, now);
    let fail = true;
    const flaky: PipelineStep = { name: "flaky", run: async (_env, todo) => (fail ? todo.map((e) => ({ eventId: e.id, error: new Error("down") })) : []) };
    // The first pass stores the rows and fails the step; the retry takes the stored batch again.
    expect((await processEventBatches(env, panel.id, batchIds, [flaky])).size).toBe(1);
    fail = false;
    expect((await processEventBatches(env, panel.id, batchIds, [flaky], Date.now() + 60_000)).size).toBe(0);
    const { body } = await history(panel, "?days=3");
    expect(body.events).toEqual([{ name: "custom_activity:signup", counts: [1, 0, 2] }]);
  });

  it("counts campaign sends per day by channel, and keeps each day's contact count from the cron", async () => {
    const panel = await createPanel();
    const { id, sendAt } = await scheduled(panel, "EMAIL,NAME\nada@example.com,Ada\nbob@example.com,Bob\n", {}, 125);
    await fireCron(sendAt);
    await waitForCampaign(panel, id);
    expect(await outbox(panel)).toHaveLength(2);
    const today = utcDayOf(Date.now());
    const sent = await history(panel, "?days=2");
    expect(sent.body.sends).toEqual([{ channel: "email", counts: [0, 2] }]);

    // The cron counts each panel's contacts once a day: later contacts wait for the next day's count.
    await contactCountsCron.run(env, today + 60_000);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "cy@example.com" } });
    await contactCountsCron.run(env, today + 120_000);
    const tomorrow = await panelHistory([panelData], panel.id, 2, today + DAY_MS + 1000, 3);
    expect(tomorrow.days).toEqual([today, today + DAY_MS]);
    expect(tomorrow.contacts).toEqual([2, 3]);
    expect(await panelData.prepare("SELECT n FROM panel_days WHERE panel_id = ? AND kind = 'contacts' AND day = ?").bind(panel.id, today).first()).toEqual({ n: 2 });
  });

  it("names a wrong number of days in a 400", async () => {
    const panel = await createPanel();
    for (const days of ["0", "367", "x"]) {
      const { status, body } = await history(panel, `?days=${days}`);
      expect(status).toBe(400);
      expect(body.errors.map((e: { field: string }) => e.field)).toEqual(["days"]);
    }
  });
});
