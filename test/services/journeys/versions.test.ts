import { describe, expect, it } from "vitest";
import { admin, createPanel, panelSnapshot } from "../../support/helpers";
import { act, cartPanel, countersOf, cronAt, createWebhook, delivered, messagesOf, MINUTE, startJourney } from "../../support/journeys";

/** A running journey: on add_to_cart, wait an hour for a purchase; on timeout, an sms and a webhook saying which version sent them. */
function waitingVersion(hookId: string, label: string, waitId = "wait"): { name: string; trigger: Record<string, unknown>; steps: Array<Record<string, unknown>> } {
  return {
    name: `Cart reminder ${label}`,
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: [
      { id: waitId, type: "wait_for_event", events: { activity: "purchase" }, within: "1h" },
      { id: `sms_${label}`, type: "sms", after: waitId, on: "timeout", text: `Reminder ${label}` },
      { id: `hook_${label}`, type: "webhook", after: waitId, on: "timeout", webhook: hookId, params: { Version: label } },
    ],
  };
}

async function versionedJourney() {
  const panel = await createPanel();
  const { cart, buy } = await cartPanel(panel);
  const hook = await createWebhook(panel);
  const journey = await startJourney(panel, waitingVersion(hook.id, "v1"));
  return { panel, cart, buy, hook, journey };
}

describe("journey versions", () => {
  it("editing a running journey makes a new version: contacts inside finish on theirs, new entries take the new one", async () => {
    const { panel, cart, hook, journey } = await versionedJourney();
    await act(panel, cart, "a@example.com");

    // v2 waits at a step of another id and sends other content: A's wait is v1's alone.
    const edited = await admin("PUT", journey.path, waitingVersion(hook.id, "v2", "wait2"));
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({ status: "running", version: 2, name: "Cart reminder v2", steps: [{ id: "wait2" }, { id: "sms_v2" }, { id: "hook_v2" }] });
    expect((await admin("GET", journey.path)).body).toMatchObject({ version: 2, status: "running" });
    expect((await admin("GET", `/panels/${panel.id}/journeys`)).body.journeys).toMatchObject([{ id: journey.id, version: 2 }]);

    await act(panel, cart, "b@example.com");
    const before = (await admin("GET", `${journey.path}/versions`)).body.versions;
    expect(before).toMatchObject([
      { version: 2, entered: 1, active: 1, definition: { name: "Cart reminder v2", steps: [{ id: "wait2" }, { id: "sms_v2" }, { id: "hook_v2" }] } },
      { version: 1, entered: 1, active: 1, definition: { name: "Cart reminder v1", steps: [{ id: "wait" }, { id: "sms_v1" }, { id: "hook_v1" }] } },
    ]);
    expect(before[0].created_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);

    // Both waits run out: each contact follows the steps of the version it entered on.
    await cronAt(Date.now() + 61 * MINUTE);
    const sms = await messagesOf(panel, "sms");
    expect(sms.map((m) => [m.recipient, m.content.text]).sort()).toEqual([
      ["a@example.com", "Reminder v1"],
      ["b@example.com", "Reminder v2"],
    ]);
    const events = await delivered(hook);
    expect(events.map((e) => [e.event_params.identity, e.custom_params.Version]).sort()).toEqual([
      ["a@example.com", "v1"],
      ["b@example.com", "v2"],
    ]);
    expect(await countersOf(journey)).toMatchObject({ entered: 2, completed: 2, active: 0, steps: { wait: { acted: 1 }, wait2: { acted: 1 }, sms_v1: { acted: 1 }, sms_v2: { acted: 1 } } });
    expect((await admin("GET", `${journey.path}/versions`)).body.versions).toMatchObject([
      { version: 2, entered: 1, active: 0 },
      { version: 1, entered: 1, active: 0 },
    ]);
  });

  it("a paused journey gets a new version and stays paused; a contact held in it resumes on its own version", async () => {
    const { panel, cart, hook, journey } = await versionedJourney();
    await act(panel, cart, "held@example.com");
    await admin("POST", `${journey.path}/status`, { status: "paused" });
    const edited = await admin("PUT", journey.path, waitingVersion(hook.id, "v2"));
    expect(edited.body).toMatchObject({ status: "paused", version: 2 });
    await admin("POST", `${journey.path}/status`, { status: "running" });
    await cronAt(Date.now() + 61 * MINUTE);
    expect((await delivered(hook)).map((e) => e.custom_params.Version)).toEqual(["v1"]);
  });

  it("a draft is edited in place and stays version 1; a stopped journey cannot be edited", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, waitingVersion(hook.id, "v1"), null);
    const edited = await admin("PUT", journey.path, waitingVersion(hook.id, "draft2"));
    expect(edited.body).toMatchObject({ status: "draft", version: 1, name: "Cart reminder draft2" });
    expect((await admin("GET", `${journey.path}/versions`)).body.versions).toMatchObject([{ version: 1, entered: 0, definition: { name: "Cart reminder draft2" } }]);

    await admin("POST", `${journey.path}/status`, { status: "stopped" });
    const refused = await admin("PUT", journey.path, waitingVersion(hook.id, "v3"));
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatch(/stopped/);
    expect((await admin("GET", journey.path)).body).toMatchObject({ version: 1, name: "Cart reminder draft2" });
  });

  it("a bad definition for a running journey names the field and changes nothing", async () => {
    const { panel, hook, journey } = await versionedJourney();
    const before = await panelSnapshot(panel.id);
    const bad = waitingVersion(hook.id, "v2");
    bad.steps[2] = { ...bad.steps[2]!, webhook: "whk_nope" };
    const refused = await admin("PUT", journey.path, bad);
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toContainEqual({ field: "steps.2.webhook", message: expect.stringMatching(/no webhook/) });
    expect(await panelSnapshot(panel.id)).toBe(before);
    expect((await admin("GET", journey.path)).body).toMatchObject({ version: 1, name: "Cart reminder v1" });
    expect((await admin("GET", `${journey.path}/versions`)).body.versions).toHaveLength(1);
  });

  it("a new version may change the trigger: entries follow the current one", async () => {
    const { panel, cart, buy, hook, journey } = await versionedJourney();
    const byPurchase = { ...waitingVersion(hook.id, "v2"), trigger: { type: "activity", activity: "purchase" } };
    expect((await admin("PUT", journey.path, byPurchase)).body).toMatchObject({ version: 2, trigger: { type: "activity", activity: "purchase" } });
    await act(panel, cart, "cart@example.com");
    await act(panel, buy, "buyer@example.com");
    expect((await admin("GET", `${journey.path}/versions`)).body.versions).toMatchObject([
      { version: 2, entered: 1 },
      { version: 1, entered: 0 },
    ]);
  });
});

describe("activity trigger parameter filters", () => {
  it("only an event whose parameters pass the filter enters", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, {
      // Names match the definition regardless of case; values are read in the parameter's type.
      trigger: { type: "activity", activity: "add_to_cart", params: [{ attribute: "PRICE", op: "gte", value: "100" }, { attribute: "name", op: "starts_with", value: "shoe" }] },
      steps: [{ id: "hook", type: "webhook", webhook: hook.id, params: { Action: "big cart" } }],
    });
    expect((await admin("GET", journey.path)).body.trigger.params).toEqual([
      { attribute: "price", op: "gte", value: 100 },
      { attribute: "name", op: "starts_with", value: "shoe" },
    ]);
    await act(panel, cart, "big@example.com", { activity_params: { "f^price": 150, "s^name": "Shoes" } });
    await act(panel, cart, "small@example.com", { activity_params: { "f^price": 20, "s^name": "Shoes" } });
    await act(panel, cart, "none@example.com");
    expect((await delivered(hook)).map((e) => [e.event_params.identity, e.custom_params.Action])).toEqual([["big@example.com", "big cart"]]);
    expect(await countersOf(journey)).toMatchObject({ entered: 1 });
  });

  it("names a parameter the activity does not have, an operator that does not fit its type, and a value of the wrong type", async () => {
    const panel = await createPanel();
    await cartPanel(panel);
    const base = `/panels/${panel.id}/journeys`;
    const steps = [{ id: "s", type: "sms", text: "hi" }];
    const cases: Array<[unknown[], string, RegExp]> = [
      [[{ attribute: "colour", op: "eq", value: "red" }], "trigger.params.0.attribute", /no parameter "colour" \(name, price\)/],
      [[{ attribute: "price", op: "contains", value: "1" }], "trigger.params.0.op", /contains is for string parameters; price is float/],
      [[{ attribute: "name", op: "eq", value: "x" }, { attribute: "price", op: "eq", value: "cheap" }], "trigger.params.1.value", /number/],
      [[{ attribute: "price", op: "in", value: [1, "x"] }], "trigger.params.0.value.1", /number/],
      [[{ attribute: "price", op: "gt" }], "trigger.params.0.value", /required/],
    ];
    for (const [params, field, message] of cases) {
      const answer = await admin("POST", base, { name: "J", trigger: { type: "activity", activity: "add_to_cart", params }, steps });
      expect(answer.status, field).toBe(400);
      const error = answer.body.errors.find((e: any) => e.field === field);
      expect(error, `${field} in ${JSON.stringify(answer.body.errors)}`).toBeDefined();
      expect(error.message).toMatch(message);
    }
    expect((await admin("GET", base)).body.journeys).toEqual([]);
  });
});
