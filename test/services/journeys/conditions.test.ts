import { describe, expect, it } from "vitest";
import { formatCts, formatLocalIso } from "../../../src/domain/time";
import { apiFor, createPanel } from "../../support/helpers";
import { pipelineSettled, postBatch } from "../../support/activity";
import { act, cartPanel, cronAt, createWebhook, delivered, MINUTE, startJourney } from "../../support/journeys";

// Spec 6.3's four usable conditions, each end to end: activities posted through 4.11, the
// pipeline, the journey, and the webhook received by the loopback receiver.

describe("spec 6.3 conditions", () => {
  it("one action: the webhook gets the custom activity with its payload, attributes and params", async () => {
    const panel = await createPanel({ name: "Shop" });
    const { cart } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    await apiFor(panel)("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada", CITY: "Pune" } });
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "hook", type: "webhook", webhook: hook.id, attributes: ["EMAIL", "CITY", "STATE"], params: { Action: "carted" } }],
    });
    // A minute ago: an activity older than 24 hours would start no journey.
    const at = Date.now() - MINUTE;
    await act(panel, cart, "ada@example.com", { activity_params: { "s^name": "Kettle", "f^price": 29.5 }, activity_source: "app", cts: formatCts(at, "UTC") });
    const events = await delivered(hook);
    expect(events).toEqual([
      {
        channel: "custom_activity",
        webhook_name: "CRM sync",
        msgid: "-1",
        journey_name: "Cart reminder",
        custom_params: { Action: "carted" },
        att_params: { EMAIL: "ada@example.com", CITY: "Pune", STATE: "" },
        udt_params: {},
        event_params: {
          activity_name: "add_to_cart",
          activity_id: Number(cart),
          activity_source: "app",
          identity: "ada@example.com",
          foreignkey: "ada@example.com",
          timestamp: formatLocalIso(at, "UTC"),
          ts: Number(formatCts(at, "UTC")),
          guid: expect.any(String),
        },
        payload_params: { items: [{ name: "Kettle", price: 29.5 }] },
      },
    ]);
  });

  it("several actions: a second activity within the wait fires the webhook with that activity", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "wait", type: "wait_for_event", events: { activity: "purchase" }, within: "1h" },
        { id: "hook", type: "webhook", after: "wait", on: "event", webhook: hook.id, params: { Action: "bought" } },
      ],
    });
    await act(panel, cart, "bo@example.com");
    expect(await delivered(hook)).toEqual([]);
    await act(panel, buy, "someone-else@example.com", { activity_params: { "i^prid": 9 } });
    expect(await delivered(hook)).toEqual([]);
    await act(panel, buy, "bo@example.com", { activity_params: { "i^prid": 7 } });
    const [event, ...more] = await delivered(hook);
    expect(more).toEqual([]);
    expect(event).toMatchObject({ channel: "custom_activity", custom_params: { Action: "bought" }, event_params: { activity_name: "purchase", identity: "bo@example.com" }, payload_params: { items: [{ prid: 7 }] } });
  });

  it("several actions posted together: the second activity in the same batch as the first still ends the wait", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "wait", type: "wait_for_event", events: { activity: "purchase" }, within: "1h" },
        { id: "hook", type: "webhook", after: "wait", on: "event", webhook: hook.id, params: { Action: "bought" } },
      ],
    });
    const posted = await postBatch(panel.clientId, [
      // A purchase before the cart ends nothing: only an activity after the trigger does.
      { activityid: buy, identity: "cy@example.com", activity_params: { "i^prid": 1 } },
      { activityid: cart, identity: "cy@example.com" },
      { activityid: buy, identity: "cy@example.com", activity_params: { "i^prid": 2 } },
      { activityid: cart, identity: "di@example.com" },
    ]);
    expect(posted.status).toBe(200);
    await pipelineSettled(panel.id);
    const events = await delivered(hook);
    expect(events.map((e) => [e.event_params.identity, e.payload_params])).toEqual([["cy@example.com", { items: [{ prid: 2 }] }]]);
  });

  it("an action followed by no second action within a time: the timeout fires the webhook with the first action", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    const definition = {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "wait", type: "wait_for_event", events: { activity: "purchase" }, within: "30m" },
        { id: "abandoned", type: "webhook", after: "wait", on: "timeout", webhook: hook.id, params: { Action: "abandoned" } },
      ],
    };
    await startJourney(panel, definition);
    await act(panel, cart, "quiet@example.com");
    await act(panel, cart, "buyer@example.com");
    await act(panel, buy, "buyer@example.com");
    const start = Date.now();
    await cronAt(start + 29 * MINUTE);
    expect(await delivered(hook)).toEqual([]);
    await cronAt(start + 31 * MINUTE);
    const events = await delivered(hook);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ channel: "custom_activity", custom_params: { Action: "abandoned" }, event_params: { activity_name: "add_to_cart", identity: "quiet@example.com" } });
  });

  it("an action filtered by demographic attributes: only matching contacts enter", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "pune@example.com", CITY: "pune", AGE: 30 } });
    await api("contact", "add", { data: { EMAIL: "old@example.com", CITY: "Pune", AGE: 70 } });
    await api("contact", "add", { data: { EMAIL: "mumbai@example.com", CITY: "Mumbai", AGE: 30 } });
    await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      filter: [
        { attribute: "CITY", op: "eq", value: "Pune" },
        { attribute: "age", op: "lt", value: 65 },
      ],
      steps: [{ id: "hook", type: "webhook", webhook: hook.id, attributes: ["EMAIL"] }],
    });
    for (const who of ["pune@example.com", "old@example.com", "mumbai@example.com", "unknown@example.com"]) await act(panel, cart, who);
    const events = await delivered(hook);
    expect(events.map((e) => e.att_params.EMAIL)).toEqual(["pune@example.com"]);
  });
});
