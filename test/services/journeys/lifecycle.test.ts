import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { journeysPipelineStep } from "../../../src/services/journeys/pipeline-step";
import { getContactByKey } from "../../../src/store/contacts";
import { listEventsOf } from "../../../src/store/events";
import { admin, apiFor, createPanel, panelData } from "../../support/helpers";
import { act, cartPanel, countersOf, cronAt, createWebhook, delivered, messagesOf, MINUTE, startJourney } from "../../support/journeys";

async function waitingJourney(status: string | null = "running") {
  const panel = await createPanel();
  const { cart, buy } = await cartPanel(panel);
  const hook = await createWebhook(panel);
  const journey = await startJourney(
    panel,
    {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "sms", type: "sms", text: "Come back" },
        { id: "wait", type: "wait_for_event", events: { activity: "purchase" }, within: "1h" },
        { id: "bought", type: "webhook", after: "wait", on: "event", webhook: hook.id, params: { Action: "bought" } },
        { id: "gone", type: "webhook", after: "wait", on: "timeout", webhook: hook.id, params: { Action: "gone" } },
      ],
    },
    status,
  );
  return { panel, cart, buy, hook, journey };
}

describe("journey lifecycle", () => {
  it("a draft does nothing", async () => {
    const { panel, cart, hook } = await waitingJourney(null);
    await act(panel, cart, "a@example.com");
    expect(await messagesOf(panel)).toEqual([]);
    expect(await delivered(hook)).toEqual([]);
  });

  it("a contact is in a journey once at a time, and may enter again once it left", async () => {
    const { panel, cart, buy, hook, journey } = await waitingJourney();
    await act(panel, cart, "a@example.com");
    await act(panel, cart, "a@example.com");
    expect(await messagesOf(panel)).toHaveLength(1);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, active: 1, completed: 0, steps: { sms: { acted: 1, waiting: 0 }, wait: { acted: 1, waiting: 1 } } });
    await act(panel, buy, "a@example.com");
    expect(await countersOf(journey)).toMatchObject({ entered: 1, active: 0, completed: 1, steps: { wait: { waiting: 0 }, bought: { acted: 1 } } });
    await act(panel, cart, "a@example.com");
    expect(await messagesOf(panel)).toHaveLength(2);
    expect(await countersOf(journey)).toMatchObject({ entered: 2, active: 1, completed: 1 });
    expect((await delivered(hook)).map((e) => e.custom_params.Action)).toEqual(["bought"]);
  });

  it("pausing holds instances: no entries, timers wait; resuming goes on", async () => {
    const { panel, cart, hook, journey } = await waitingJourney();
    await act(panel, cart, "held@example.com");
    expect((await admin("POST", `${journey.path}/status`, { status: "paused" })).body.status).toBe("paused");
    await act(panel, cart, "late@example.com");
    const later = Date.now() + 2 * 60 * MINUTE;
    await cronAt(later);
    expect(await delivered(hook)).toEqual([]);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, active: 1 });

    expect((await admin("POST", `${journey.path}/status`, { status: "running" })).body.status).toBe("running");
    await cronAt(later);
    const events = await delivered(hook);
    expect(events.map((e) => [e.custom_params.Action, e.event_params.identity])).toEqual([["gone", "held@example.com"]]);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, active: 0, completed: 1 });
  });

  it("an event that ends a wait while paused is acted on at resume", async () => {
    const { panel, cart, buy, hook, journey } = await waitingJourney();
    await act(panel, cart, "p@example.com");
    await admin("POST", `${journey.path}/status`, { status: "paused" });
    await act(panel, buy, "p@example.com");
    expect(await delivered(hook)).toEqual([]);
    await admin("POST", `${journey.path}/status`, { status: "running" });
    expect((await delivered(hook)).map((e) => e.custom_params.Action)).toEqual(["bought"]);
  });

  it("stopping ends instances: their timers never fire, and a stopped journey cannot run again", async () => {
    const { panel, cart, hook, journey } = await waitingJourney();
    await act(panel, cart, "s@example.com");
    const stopped = await admin("POST", `${journey.path}/status`, { status: "stopped" });
    expect(stopped.body).toMatchObject({ status: "stopped", counters: { entered: 1, active: 0, exited: 1 } });
    await cronAt(Date.now() + 2 * 60 * MINUTE);
    await act(panel, cart, "t@example.com");
    expect(await delivered(hook)).toEqual([]);
    expect((await admin("POST", `${journey.path}/status`, { status: "running" })).status).toBe(409);
  });

  it("a redelivered event or a repeated step run acts once", async () => {
    const { panel, cart, buy, hook, journey } = await waitingJourney();
    await act(panel, cart, "r@example.com");
    await act(panel, buy, "r@example.com");
    // The pipeline delivers at least once: run the journeys step again over both stored events.
    const contact = await getContactByKey(panelData, panel.id, "r@example.com");
    const events = (await listEventsOf(panelData, panel.id, { contactId: contact!.id }, 10)).sort((a, b) => a.id - b.id);
    expect(events).toHaveLength(2);
    await journeysPipelineStep.run(env, events);
    await journeysPipelineStep.run(env, events);
    expect(await messagesOf(panel)).toHaveLength(1);
    expect((await delivered(hook)).map((e) => e.custom_params.Action)).toEqual(["bought"]);
    expect((await countersOf(journey)).entered).toBe(1);
  });

  it("a point continued again after a crash (before it was marked) sends nothing twice", async () => {
    const { panel, cart, hook } = await waitingJourney();
    await act(panel, cart, "c@example.com");
    await cronAt(Date.now() + 61 * MINUTE);
    // As if the cron died after acting but before marking the point continued.
    await panelData.prepare("UPDATE journey_points SET continued_at = NULL WHERE panel_id = ?").bind(panel.id).run();
    await panelData.prepare("UPDATE journey_instances SET status = 'active' WHERE panel_id = ?").bind(panel.id).run();
    await cronAt(Date.now() + 63 * MINUTE);
    expect(await messagesOf(panel)).toHaveLength(1);
    expect((await delivered(hook)).map((e) => e.custom_params.Action)).toEqual(["gone"]);
  });
});

describe("delay and condition steps", () => {
  it("delays a step until the cron runs at its due time", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "pause", type: "delay", for: "2h" },
        { id: "nudge", type: "bpn", after: "pause", text: "Still thinking?" },
      ],
    });
    await act(panel, cart, "d@example.com");
    await cronAt(Date.now() + 119 * MINUTE);
    expect(await messagesOf(panel)).toEqual([]);
    await cronAt(Date.now() + 121 * MINUTE);
    expect(await messagesOf(panel, "bpn")).toMatchObject([{ channel: "bpn", content: { text: "Still thinking?" } }]);
  });

  it("a condition sends each contact down then or else by its attributes", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "vip@example.com", AGE: 40 } });
    await api("contact", "add", { data: { EMAIL: "kid@example.com", AGE: 12 } });
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "grown", type: "condition", filter: [{ attribute: "AGE", op: "gte", value: 18 }], then: "offer", else: "parents" },
        { id: "offer", type: "sms", text: "Offer for you" },
        { id: "parents", type: "email", subject: "Ask your parents", html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com" },
      ],
    });
    await act(panel, cart, "vip@example.com");
    await act(panel, cart, "kid@example.com");
    const sent = await messagesOf(panel);
    expect(sent.map((m) => [m.channel, m.recipient]).sort()).toEqual([
      ["email", "kid@example.com"],
      ["sms", "vip@example.com"],
    ]);
    expect(await countersOf(journey)).toMatchObject({ entered: 2, completed: 2, steps: { grown: { acted: 2 }, offer: { acted: 1 }, parents: { acted: 1 } } });
  });
});
