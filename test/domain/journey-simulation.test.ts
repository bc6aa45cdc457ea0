import { describe, expect, it } from "vitest";
import { journeyDefinitionSchema, splitBranchOf, type JourneyDefinition, type SplitStep } from "../../src/domain/journey";
import { contactsToLoad, entriesInOrder, newSimulationState, simulate, simulationFigures, topicsOf, type SimContact } from "../../src/domain/journey-simulation";
import type { WalkContact, WalkEvent } from "../../src/domain/journey-walk";
import type { MessageRules } from "../../src/domain/message-rules";
import { branchFigures } from "../../src/domain/split-confidence";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.UTC(2026, 10, 1);

const mail = (id: string, extra: Record<string, unknown> = {}) => ({ id, type: "email", subject: `Hi {{NAME}}`, html: "<p>Hi</p>", sender_name: "Shop", sender_email: "shop@example.com", ...extra });

/** Trigger, condition, activity wait, split after the wait's timeout, email, SMS, webhook; a goal. */
const definition = journeyDefinitionSchema.parse({
  name: "Cart",
  trigger: { type: "activity", activity: "add_to_cart" },
  goal: { activity: "refund" },
  steps: [
    { id: "c", type: "condition", filter: [{ attribute: "COUNTRY", op: "eq", value: "IN" }], then: "w", else: "hook" },
    { id: "w", type: "wait_for_event", events: { activity: "purchase" }, within: "1d" },
    mail("thanks", { after: "w", on: "event" }),
    { id: "ab", type: "split", after: "w", on: "timeout", branches: [{ percent: 50, then: "mailA" }, { percent: 50, then: "smsB" }] },
    mail("mailA"),
    { id: "smsB", type: "sms", text: "Come back" },
    { id: "hook", type: "webhook", webhook: "wh_1" },
  ],
}) as JourneyDefinition;
const journey = { id: "jrn_sim", definition };

let nextId = 0;
const act = (contactId: number, name: string, at: number): WalkEvent => ({ id: ++nextId, contactId, channel: "custom_activity", name, params: {}, occurredAt: at, receivedAt: at });
// Each with an address, so the senders would send to it (domain/send-skips.ts).
const contact = (id: number, country: string): WalkContact => ({ id, attributes: { COUNTRY: country, NAME: `c${id}`, EMAIL: `c${id}@example.com` } });

describe("journey simulation over recorded events", () => {
  it("counts per step what the engine would have done, messages per channel, webhook calls and the waits at the end", () => {
    const contacts = new Map([contact(1, "IN"), contact(2, "IN"), contact(3, "US"), contact(4, "IN"), contact(6, "IN"), contact(7, "IN")].map((c) => [c.id, c]));
    const events = [
      act(1, "add_to_cart", T0),
      act(2, "add_to_cart", T0 + HOUR),
      act(3, "add_to_cart", T0 + 2 * HOUR),
      // Contact 1 buys within the day: the wait ends by its event, a thank-you goes.
      act(1, "purchase", T0 + 3 * HOUR),
      // Contact 4 buys without a cart: in no journey, nothing happens.
      act(4, "purchase", T0 + 4 * HOUR),
      act(7, "add_to_cart", T0 + 10 * HOUR),
      // Contact 7 reaches the goal: leaves, converted.
      act(7, "refund", T0 + 11 * HOUR),
      // Contact 1 again while still inside? It completed: enters anew.
      act(1, "add_to_cart", T0 + 2 * DAY),
      act(6, "add_to_cart", T0 + 3 * DAY - HOUR),
    ];
    const upTo = T0 + 3 * DAY;
    const state = newSimulationState();
    // Two pages, as queue steps read them, with the state carried as JSON between.
    const [first, second] = [events.slice(0, 5), events.slice(5)];
    simulate(journey, state, first, contacts, first.at(-1)!.occurredAt);
    const carried = JSON.parse(JSON.stringify(state));
    expect(contactsToLoad(journey, carried, second, upTo).sort()).toEqual([1, 2, 6, 7]);
    simulate(journey, carried, second, contacts, upTo);

    // Contact 2 waited the day out: the split sends it down its hashed branch.
    const branch = splitBranchOf(journey.id, definition.steps.find((s) => s.id === "ab") as SplitStep, 2) === 0 ? "mailA" : "smsB";
    const figures = simulationFigures(carried);
    expect(figures).toMatchObject({ entered: 6, completed: 3, exited: 1, converted: 1, active: 2, events: 9 });
    expect(figures.steps).toEqual({
      c: { acted: 6, waiting: 0 },
      w: { acted: 5, waiting: 2 },
      thanks: { acted: 1, waiting: 0 },
      ab: { acted: 1, waiting: 0 },
      [branch]: { acted: 1, waiting: 0 },
      hook: { acted: 1, waiting: 0 },
    });
    expect(figures.messages).toEqual(branch === "mailA" ? { email: 2 } : { email: 1, sms: 1 });
    expect(figures.webhooks).toEqual({ hook: 1 });
    // Samples name the step, the contact, and the event the branch carried.
    const hook = carried.samples.find((s: { step: string }) => s.step === "hook");
    expect(hook).toMatchObject({ contactId: 3, event: { name: "add_to_cart", contactId: 3 } });
    const thanks = carried.samples.find((s: { step: string }) => s.step === "thanks");
    expect(thanks).toMatchObject({ contactId: 1, at: T0 + 3 * HOUR, event: { name: "purchase" } });
  });

  it("enters nobody on an activity received over a day after it happened, nor a contact the entry filter keeps out", () => {
    const filtered = { ...journey, definition: { ...definition, filter: [{ attribute: "COUNTRY", op: "eq" as const, value: "IN" }] } };
    const state = newSimulationState();
    const late = { ...act(1, "add_to_cart", T0), receivedAt: T0 + 2 * DAY };
    simulate(filtered, state, [late, act(3, "add_to_cart", T0 + HOUR)], new Map([contact(1, "IN"), contact(3, "US")].map((c) => [c.id, c])), T0 + DAY);
    expect(simulationFigures(state)).toMatchObject({ entered: 0, events: 2, steps: {} });
  });
});

describe("journey simulation under the panel's message rules", () => {
  const rules = (r: Partial<MessageRules>) => ({ rules: { caps: [], quiet_hours: [], ...r }, timezone: "UTC" });
  const welcome = (steps: unknown[]) => journeyDefinitionSchema.parse({ name: "Welcome", trigger: { type: "activity", activity: "signup" }, steps }) as JourneyDefinition;

  it("skips a contact's second email within a day under a cap of 1 email per day, counting recorded sends too", () => {
    const capped = { id: "jrn_cap", definition: welcome([mail("hello")]), rules: rules({ caps: [{ channel: "email", max: 1, days: 1 }] }) };
    const contacts = new Map<number, SimContact>([
      [1, contact(1, "IN")],
      // Contact 2 had a campaign email an hour before it signed up: counted against the cap.
      [2, { ...contact(2, "IN"), sentAt: { email: [T0 - HOUR, T0 + 30 * DAY] } }],
    ]);
    const state = newSimulationState();
    // Contact 1 enters three times: at once, 2 hours later (skipped: cap), and two days later (the day is over).
    simulate(capped, state, [act(1, "signup", T0), act(2, "signup", T0), act(1, "signup", T0 + 2 * HOUR), act(1, "signup", T0 + 2 * DAY)], contacts, T0 + 3 * DAY);
    const figures = simulationFigures(state);
    expect(figures.steps.hello).toEqual({ acted: 4, waiting: 0, skipped_cap: 2 });
    expect(figures).toMatchObject({ entered: 4, completed: 4, messages: { email: 2 }, skipped: { cap: 2, topic: 0 }, deferred: 0 });
    expect(state.samples.map((s) => [s.contactId, s.at])).toEqual([
      [1, T0],
      [1, T0 + 2 * DAY],
    ]);
  });

  it("holds a capped message with when_capped: wait until the cap allows it", () => {
    const capped = { id: "jrn_wait", definition: welcome([mail("hello", { when_capped: "wait" })]), rules: rules({ caps: [{ channel: "email", max: 1, days: 1 }] }) };
    const state = newSimulationState();
    simulate(capped, state, [act(1, "signup", T0), act(1, "signup", T0 + 2 * HOUR)], new Map([[1, contact(1, "IN")]]), T0 + 3 * DAY);
    expect(simulationFigures(state)).toMatchObject({ messages: { email: 2 }, deferred: 1, skipped: { cap: 0 }, steps: { hello: { acted: 2, waiting: 0, deferred: 1 } } });
    expect(state.samples.map((s) => s.at)).toEqual([T0, T0 + DAY]);
  });

  it("defers an SMS in quiet hours to their end on the contact's clock, and sends an exempt one at once", () => {
    const quiet = {
      id: "jrn_quiet",
      definition: welcome([
        { id: "text", type: "sms", text: "Welcome" },
        { id: "otp", type: "sms", text: "Your code", exempt: true },
      ]),
      rules: rules({ quiet_hours: [{ channel: "sms", from: "21:00", to: "09:00" }] }),
    };
    // 22:00 in Kolkata (16:30 UTC): the SMS goes at 09:00 there the next morning (03:30 UTC).
    const at = Date.UTC(2026, 10, 1, 16, 30);
    const state = newSimulationState();
    const contacts = new Map<number, SimContact>([[1, { id: 1, attributes: { TIMEZONE: "Asia/Kolkata", EMAIL: "c1@example.com" } }]]);
    simulate(quiet, state, [act(1, "signup", at)], contacts, at + HOUR);
    // Still held at the end of a range that ends before the morning: waiting at the step.
    expect(simulationFigures(state)).toMatchObject({ active: 1, deferred: 1, messages: { sms: 1 }, steps: { text: { acted: 0, waiting: 1, deferred: 1 }, otp: { acted: 1, waiting: 0 } } });
    simulate(quiet, state, [], contacts, at + DAY);
    expect(simulationFigures(state)).toMatchObject({ active: 0, completed: 1, deferred: 1, messages: { sms: 2 }, steps: { text: { acted: 1, waiting: 0, deferred: 1 } } });
    expect(state.samples.find((s) => s.step === "text")?.at).toBe(Date.UTC(2026, 10, 2, 3, 30));
  });

  it("does not count as deferred a message held by quiet hours that a full cap then skips", () => {
    const both = {
      id: "jrn_both",
      definition: welcome([{ id: "text", type: "sms", text: "Welcome" }]),
      rules: rules({ quiet_hours: [{ channel: "sms", from: "21:00", to: "09:00" }], caps: [{ channel: "sms", max: 1, days: 1 }] }),
    };
    // Entered at 22:00 UTC (held to 09:00), and an SMS was recorded at 08:00: at 09:00 the cap is full.
    const at = Date.UTC(2026, 10, 1, 22, 0);
    const contacts = new Map<number, SimContact>([[1, { id: 1, attributes: { EMAIL: "c1@example.com" }, sentAt: { sms: [Date.UTC(2026, 10, 2, 8, 0)] } }]]);
    const state = newSimulationState();
    simulate(both, state, [act(1, "signup", at)], contacts, at + DAY);
    expect(simulationFigures(state)).toMatchObject({ deferred: 0, skipped: { cap: 1 }, messages: {}, steps: { text: { acted: 1, waiting: 0, skipped_cap: 1 } } });
  });

  it("skips a contact who left the step's topic, and the journey goes on", () => {
    const topical = { id: "jrn_topic", definition: welcome([mail("news", { topic: "tpc_news" }), { id: "after", type: "sms", after: "news", text: "Hi" }]) };
    expect(topicsOf(topical.definition)).toEqual(["tpc_news"]);
    const state = newSimulationState();
    const contacts = new Map<number, SimContact>([
      [1, { ...contact(1, "IN"), topicsLeft: ["tpc_news"] }],
      [2, contact(2, "IN")],
    ]);
    simulate(topical, state, [act(1, "signup", T0), act(2, "signup", T0)], contacts, T0 + DAY);
    expect(simulationFigures(state)).toMatchObject({ messages: { email: 1, sms: 2 }, skipped: { cap: 0, topic: 1 }, steps: { news: { acted: 2, waiting: 0, skipped_topic: 1 }, after: { acted: 2 } } });
  });
});

describe("journey simulation of a list trigger", () => {
  it("enters the list's members at the time each was added, in time order with the activities, through the entry filter", () => {
    const listed = {
      id: "jrn_list",
      definition: journeyDefinitionSchema.parse({
        name: "Joined",
        trigger: { type: "list", listid: 7 },
        filter: [{ attribute: "COUNTRY", op: "eq", value: "IN" }],
        steps: [
          { id: "w", type: "wait_for_event", events: { activity: "purchase" }, within: "1d" },
          mail("thanks", { after: "w", on: "event" }),
        ],
      }) as JourneyDefinition,
    };
    const contacts = new Map([contact(1, "IN"), contact(2, "IN"), contact(3, "US")].map((c) => [c.id, c]));
    const state = { ...newSimulationState(), entries: [[T0, 1], [T0 + HOUR, 3], [T0 + 3 * HOUR, 2]] as Array<[number, number]> };
    // Contact 2 buys before it joins the list (not waited for yet), contact 1 after: thanked.
    const events = [act(2, "purchase", T0 + 2 * HOUR), act(1, "purchase", T0 + 4 * HOUR)];
    // The first page loads those entering by then; 2 is in nothing yet.
    expect(contactsToLoad(listed, state, events.slice(0, 1), T0 + 2 * HOUR).sort()).toEqual([1, 3]);
    simulate(listed, state, events.slice(0, 1), contacts, T0 + 2 * HOUR);
    simulate(listed, state, events.slice(1), contacts, T0 + 2 * DAY);
    expect(simulationFigures(state)).toMatchObject({ entered: 2, completed: 2, messages: { email: 1 }, steps: { w: { acted: 2, waiting: 0 }, thanks: { acted: 1 } } });
    expect(state.samples).toEqual([expect.objectContaining({ step: "thanks", contactId: 1, at: T0 + 4 * HOUR })]);
  });
});

describe("journey simulation of a saved segment trigger", () => {
  it("orders the recorded joins in time, each contact once at its first join (the engine's `segment:<contact>` entry key)", () => {
    const joins: Array<[number, number]> = [[T0 + 3 * HOUR, 2], [T0 + HOUR, 1], [T0 + 2 * HOUR, 2], [T0 + HOUR, 3], [T0, 2]];
    expect(entriesInOrder(joins, true)).toEqual([[T0, 2], [T0 + HOUR, 1], [T0 + HOUR, 3]]);
    // A list's entries are its members now, each once already: only ordered.
    expect(entriesInOrder(joins, false)).toHaveLength(5);
  });

  it("a member that rejoins after completing is not entered again", () => {
    const saved = { id: "jrn_seg", definition: journeyDefinitionSchema.parse({ name: "Joined", trigger: { type: "segment", segment: "seg_1" }, steps: [mail("hello")] }) as JourneyDefinition };
    const contacts = new Map([contact(1, "IN"), contact(2, "IN")].map((c) => [c.id, c]));
    const state = { ...newSimulationState(), entries: entriesInOrder([[T0, 1], [T0 + HOUR, 2], [T0 + 2 * HOUR, 1]], true) };
    simulate(saved, state, [], contacts, T0 + DAY);
    expect(simulationFigures(state)).toMatchObject({ entered: 2, completed: 2, messages: { email: 2 } });
    expect(state.samples.map((s) => [s.contactId, s.at])).toEqual([[1, T0], [2, T0 + HOUR]]);
  });
});

describe("journey simulation of an A/B split's goal", () => {
  /** Cart, then a split: A gets an email, B is a hold-out (its instance ends at once); the goal: a purchase within 2 days of the split. */
  const split = (goal: Record<string, unknown>) => ({
    id: "jrn_ab",
    definition: journeyDefinitionSchema.parse({
      name: "AB",
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "ab", type: "split", branches: [{ percent: 50, then: "mailA" }, { percent: 50 }], goal }, mail("mailA")],
    }) as JourneyDefinition,
  });
  const abOf = (definition: JourneyDefinition) => definition.steps.find((s) => s.id === "ab") as SplitStep;
  /** Contacts 1..40 by the branch the split sends them down. */
  const byBranch = (definition: JourneyDefinition) => {
    const ids = Array.from({ length: 40 }, (_, i) => i + 1);
    return [0, 1].map((b) => ids.filter((id) => splitBranchOf("jrn_ab", abOf(definition), id) === b));
  };

  it("counts per branch the contacts that did the goal's activity within its window after the split, hold-outs included, with the live report's rate and confidence", () => {
    const journey = split({ activity: "Purchase", within: "2d" });
    const [a, b] = byBranch(journey.definition) as [number[], number[]];
    const contacts = new Map([...a.slice(0, 3), ...b.slice(0, 3)].map((id) => [id, contact(id, "IN")]));
    const events = [
      ...[...a.slice(0, 3), ...b.slice(0, 3)].map((id) => act(id, "add_to_cart", T0)),
      // A's first two buy within the window (the second at its very end), its third after it; B's
      // first within, its second after, its third twice within (one conversion). A view converts nothing.
      act(a[0]!, "purchase", T0 + HOUR),
      act(b[1]!, "view", T0 + HOUR),
      act(b[0]!, "purchase", T0 + DAY),
      act(b[2]!, "purchase", T0 + DAY),
      act(b[2]!, "purchase", T0 + DAY + HOUR),
      act(a[1]!, "PURCHASE", T0 + 2 * DAY),
      act(a[2]!, "purchase", T0 + 2 * DAY + 1),
      act(b[1]!, "purchase", T0 + 3 * DAY),
    ];
    const state = newSimulationState();
    // In two calls with the state carried as JSON, as queue steps keep it in R2.
    simulate(journey, state, events.slice(0, 11), contacts, events[10]!.occurredAt);
    // The entries still open are kept past their instances' end (all completed: A's email sent, B's a hold-out).
    expect(Object.keys(state.instances)).toEqual([]);
    expect(Object.keys(state.splitGoals ?? {}).map(Number).sort((x, y) => x - y)).toEqual([a[1]!, a[2]!, b[1]!].sort((x, y) => x - y));
    const carried = JSON.parse(JSON.stringify(state));
    simulate(journey, carried, events.slice(11), contacts, T0 + 5 * DAY);
    // Windows over by the end: nothing kept.
    expect(carried.splitGoals).toEqual({});
    const [ab] = simulationFigures(carried, journey.definition).splits!;
    expect(ab).toMatchObject({ step_id: "ab", goal: { activity: "Purchase", within: "2d" }, winner: null, method: "two_proportion_z_test_vs_a", conversions_unknown: null });
    expect(ab!.branches.map(({ label, entered, converted }) => ({ label, entered, converted }))).toEqual([
      { label: "A", entered: 3, converted: 2 },
      { label: "B", entered: 3, converted: 2 },
    ]);
    // The live report's figures (branchFigures): the same rates, no difference to speak of.
    expect(ab!.branches.map(({ entered, converted, rate, confidence }) => ({ entered, converted, rate, confidence }))).toEqual(branchFigures([{ entered: 3, converted: 2 }, { entered: 3, converted: 2 }]));
    expect(ab!.branches[0]).toMatchObject({ rate: 2 / 3, confidence: null });
    expect(ab!.branches[1]!.confidence).toBeCloseTo(0, 6);
  });

  it("does not convert the split on the activity that entered the contact, nor on one before the split", () => {
    const journey = split({ activity: "add_to_cart", within: "1d" });
    const [a] = byBranch(journey.definition) as [number[]];
    const state = newSimulationState();
    simulate(journey, state, [act(a[0]!, "add_to_cart", T0), act(a[1]!, "add_to_cart", T0), act(a[1]!, "add_to_cart", T0 + HOUR)], new Map(a.slice(0, 2).map((id) => [id, contact(id, "IN")])), T0 + 2 * DAY);
    // a[1]'s second cart, after its split, converts it (and enters it anew: it had completed).
    expect(simulationFigures(state, journey.definition).splits![0]!.branches[0]).toMatchObject({ entered: 3, converted: 1 });
  });

  it("reports an open or click goal's conversions as unknown, with the reason, and keeps no entry for it", () => {
    for (const event of ["open", "click"] as const) {
      const journey = split({ message_event: event, within: "2d" });
      const [a, b] = byBranch(journey.definition) as [number[], number[]];
      const state = newSimulationState();
      const ids = [a[0]!, b[0]!, b[1]!];
      simulate(journey, state, ids.map((id) => act(id, "add_to_cart", T0)), new Map(ids.map((id) => [id, contact(id, "IN")])), T0 + 3 * DAY);
      expect(state.splitGoals ?? {}).toEqual({});
      const [ab] = simulationFigures(state, journey.definition).splits!;
      expect(ab!.conversions_unknown).toContain(event === "open" ? "would have been opened is not known" : "would have been clicked is not known");
      expect(ab!.branches).toEqual([
        { label: "A", percent: 50, then: "mailA", entered: 1, converted: null, rate: null, confidence: null },
        { label: "B", percent: 50, then: null, entered: 2, converted: null, rate: null, confidence: null },
      ]);
    }
  });
});
