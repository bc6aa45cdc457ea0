import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { enterJourneys, messageIdOf, POINT_LEASE_MS } from "../../../src/services/journeys/engine";
import { countSendIfAllowed } from "../../../src/store/contact-sends";
import { enterInstances } from "../../../src/store/journeys/instances";
import { admin, apiFor, contactsOf, countRows, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { cartPanel, cronAt, messagesOf, MINUTE, startJourney } from "../../support/journeys";

const DAY = 24 * 60 * MINUTE;
/** A fixed clock: Tuesday 2026-11-24 12:00 UTC (17:30 in Kolkata, 07:00 in New York). */
const NOON = Date.UTC(2026, 10, 24, 12, 0);

/** A panel with the cart activity the journeys here are triggered by. */
async function cartShop(options: { timezone?: string } = {}): Promise<TestPanel> {
  const panel = await createPanel(options);
  await cartPanel(panel);
  // TIMEZONE and PUSH_TOKEN are attributes of the contacts' own.
  expect((await admin("PATCH", `/panels/${panel.id}`, { unknown_attributes: "create" })).status).toBe(200);
  return panel;
}

async function setRules(panel: TestPanel, rules: unknown) {
  const answer = await admin("PATCH", `/panels/${panel.id}`, { message_rules: rules });
  expect(answer.status).toBe(200);
  return answer.body;
}

async function contact(panel: TestPanel, attributes: Record<string, unknown>): Promise<number> {
  await apiFor(panel)("contact", "add", { data: attributes });
  const found = (await contactsOf(panel.id)).find((c) => c.attributes.EMAIL === attributes.EMAIL);
  return found!.id;
}

/** Enters the contact into the journey at `now` as a trigger would, continuing from its start. */
async function enter(panel: TestPanel, journeyId: string, contactId: number, now: number, key = `test:${contactId}`) {
  await enterJourneys(env, panelData, [{ panelId: panel.id, journeyId, contactId, entryKey: key, eventId: null, version: 1 }], now);
}

const smsSteps = (second: Record<string, unknown> = {}) => [
  { id: "first", type: "sms", text: "One" },
  { id: "second", type: "sms", text: "Two", after: "first", ...second },
  { id: "receipt", type: "sms", text: "Your receipt", after: "second", exempt: true },
];

async function smsJourney(panel: TestPanel, second: Record<string, unknown> = {}) {
  return startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: smsSteps(second) });
}

const byStep = (messages: any[]) => Object.fromEntries(messages.map((m) => [m.msgid.split(".").pop(), { status: m.status, error: m.error }]));

describe("panel message rules: settings", () => {
  it("refuses bad caps and quiet hours naming each field, changing nothing; keeps and shows good ones", async () => {
    const panel = await createPanel();
    const bad = await admin("PATCH", `/panels/${panel.id}`, {
      message_rules: {
        caps: [
          { channel: "fax", max: 1, days: 1 },
          { channel: "sms", max: 0, days: 1 },
          { channel: "email", max: 3, days: 91 },
          { channel: "email", max: 2, days: 7 },
          { channel: "email", max: 3, days: 7 },
        ],
        quiet_hours: [{ channel: "sms", from: "25:00", to: "09:00" }, { channel: "push", from: "21:00", to: "21:00" }],
      },
    });
    expect(bad.status).toBe(400);
    const fields = bad.body.errors.map((e: any) => e.field);
    expect(fields).toEqual(
      expect.arrayContaining([
        "message_rules.caps.0.channel",
        "message_rules.caps.1.max",
        "message_rules.caps.2.days",
        "message_rules.quiet_hours.0.from",
      ]),
    );
    expect((await admin("GET", `/panels/${panel.id}`)).body.message_rules).toEqual({ caps: [], quiet_hours: [] });

    const twice = await admin("PATCH", `/panels/${panel.id}`, {
      message_rules: { caps: [{ channel: "email", max: 2, days: 7 }, { channel: "email", max: 3, days: 7 }], quiet_hours: [{ channel: "push", from: "21:00", to: "21:00" }] },
    });
    expect(twice.status).toBe(400);
    expect(twice.body.errors.map((e: any) => e.field).sort()).toEqual(["message_rules.caps.1.days", "message_rules.quiet_hours.0.to"]);

    const rules = { caps: [{ channel: "email", max: 3, days: 7 }, { channel: "sms", max: 1, days: 1 }], quiet_hours: [{ channel: "sms", from: "21:00", to: "09:00" }] };
    expect((await setRules(panel, rules)).message_rules).toEqual(rules);
    expect((await admin("GET", `/panels/${panel.id}`)).body.message_rules).toEqual(rules);
  });
});

describe("frequency caps in journeys", () => {
  it("records a capped message skipped: cap and goes on; an exempt (transactional) message is not capped", async () => {
    const panel = await cartShop();
    await setRules(panel, { caps: [{ channel: "sms", max: 1, days: 1 }] });
    const journey = await smsJourney(panel);
    const ada = await contact(panel, { EMAIL: "ada@example.com", MOBILE: "+919800000001" });
    await enter(panel, journey.id, ada, NOON);
    expect(byStep(await messagesOf(panel, "sms"))).toEqual({
      first: { status: "recorded", error: null },
      second: { status: "skipped", error: "cap: at most 1 sms per day" },
      receipt: { status: "recorded", error: null },
    });
    expect((await admin("GET", journey.path)).body.counters).toMatchObject({ completed: 1 });
  });

  it("with when_capped: wait, the point waits until the cap allows, then sends", async () => {
    const panel = await cartShop();
    await setRules(panel, { caps: [{ channel: "sms", max: 1, days: 1 }] });
    const journey = await smsJourney(panel, { when_capped: "wait" });
    const ada = await contact(panel, { EMAIL: "ada@example.com", MOBILE: "+919800000001" });
    await enter(panel, journey.id, ada, NOON);
    expect(Object.keys(byStep(await messagesOf(panel, "sms")))).toEqual(["first"]);
    const waiting = await panelData.prepare("SELECT step_id, due_at FROM journey_points WHERE journey_id = ? AND outcome IS NULL").bind(journey.id).all();
    expect(waiting.results).toEqual([{ step_id: "second#1", due_at: NOON + DAY }]);
    // The canvas counts it as waiting at its step.
    const report = (await admin("GET", `${journey.path}/report`)).body;
    expect(report.steps.second).toMatchObject({ waiting: 1 });
    expect(Object.keys(report.steps)).toEqual(["first", "second", "receipt"]);

    await cronAt(NOON + DAY - MINUTE);
    expect(Object.keys(byStep(await messagesOf(panel, "sms")))).toEqual(["first"]);
    await cronAt(NOON + DAY);
    expect(byStep(await messagesOf(panel, "sms"))).toMatchObject({ first: { status: "recorded" }, second: { status: "recorded" }, receipt: { status: "recorded" } });
    expect((await admin("GET", journey.path)).body.counters).toMatchObject({ completed: 1 });
  });

  it("a contact at its cap gets one message when two journeys send at once, never two", async () => {
    const panel = await cartShop();
    await setRules(panel, { caps: [{ channel: "sms", max: 1, days: 7 }] });
    const one = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "a", type: "sms", text: "A" }] });
    const two = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "b", type: "sms", text: "B" }] });
    const ada = await contact(panel, { EMAIL: "ada@example.com", MOBILE: "+919800000001" });
    await Promise.all([enter(panel, one.id, ada, NOON), enter(panel, two.id, ada, NOON)]);
    const statuses = (await messagesOf(panel, "sms")).map((m) => m.status).sort();
    expect(statuses).toEqual(["recorded", "skipped"]);
    expect(await countRows("SELECT COUNT(*) AS n FROM contact_sends WHERE panel_id = ?", panel.id)).toBe(1);
  });

  it("a point counted by an attempt that died sends its message once when the cron continues it (its room kept, not lost, not doubled)", async () => {
    const panel = await cartShop();
    await setRules(panel, { caps: [{ channel: "sms", max: 1, days: 1 }] });
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    const ada = await contact(panel, { EMAIL: "ada@example.com", MOBILE: "+919800000001" });
    // The first attempt entered the contact and counted the message against the cap, then died.
    const crash = NOON;
    const instanceId = `jin_${crypto.randomUUID()}`;
    await enterInstances(panelData, [{ instanceId, panelId: panel.id, journeyId: journey.id, contactId: ada, entryKey: "crash", eventId: null, version: 1 }], crash, crash + POINT_LEASE_MS);
    const counted = await countSendIfAllowed(panelData, { panelId: panel.id, contactId: ada, channel: "sms", key: messageIdOf(instanceId, "hi") }, [{ channel: "sms", max: 1, days: 1 }], crash);
    expect(counted).toEqual({ allowed: true });

    // Within the lease nothing happens; after it the cron continues the point: the room was its own.
    await cronAt(crash + POINT_LEASE_MS - 1000);
    expect(await messagesOf(panel, "sms")).toEqual([]);
    await cronAt(crash + 2 * MINUTE);
    await cronAt(crash + 3 * MINUTE);
    expect(byStep(await messagesOf(panel, "sms"))).toEqual({ hi: { status: "recorded", error: null } });
    expect(await countRows("SELECT COUNT(*) AS n FROM contact_sends WHERE panel_id = ?", panel.id)).toBe(1);
  });
});

describe("quiet hours in journeys", () => {
  it("holds a message in the channel's quiet hours on the contact's clock (its TIMEZONE, else the panel's) until they end", async () => {
    const panel = await cartShop({ timezone: "Asia/Kolkata" });
    // 21:00-09:00 for SMS; email has no quiet hours.
    await setRules(panel, { quiet_hours: [{ channel: "sms", from: "21:00", to: "09:00" }] });
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    // At NOON it is 07:00 in New York (quiet until 09:00 there, 14:00Z) and 17:30 in Kolkata (not quiet).
    const ny = await contact(panel, { EMAIL: "ny@example.com", MOBILE: "+12125550101", TIMEZONE: "America/New_York" });
    const kolkata = await contact(panel, { EMAIL: "in@example.com", MOBILE: "+919800000002" });
    await enter(panel, journey.id, ny, NOON);
    await enter(panel, journey.id, kolkata, NOON);
    expect((await messagesOf(panel, "sms")).map((m) => m.recipient)).toEqual(["+919800000002"]);
    const held = await panelData.prepare("SELECT step_id, due_at FROM journey_points WHERE journey_id = ? AND outcome IS NULL").bind(journey.id).all();
    expect(held.results).toEqual([{ step_id: "hi#1", due_at: Date.UTC(2026, 10, 24, 14, 0) }]);

    await cronAt(Date.UTC(2026, 10, 24, 13, 59));
    expect(await messagesOf(panel, "sms")).toHaveLength(1);
    await cronAt(Date.UTC(2026, 10, 24, 14, 0));
    expect((await messagesOf(panel, "sms")).map((m) => m.recipient).sort()).toEqual(["+12125550101", "+919800000002"]);
  });

  it("a window over midnight in the panel's zone holds to the next morning; an exempt step goes at once", async () => {
    const panel = await cartShop({ timezone: "Asia/Kolkata" });
    await setRules(panel, { quiet_hours: [{ channel: "push", from: "21:00", to: "09:00" }] });
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [
        { id: "otp", type: "bpn", text: "Your code", exempt: true },
        { id: "promo", type: "bpn", text: "Sale", after: "otp" },
      ],
    });
    const ada = await contact(panel, { EMAIL: "ada@example.com", PUSH_TOKEN: "tok" });
    // 23:30 in Kolkata: quiet until 09:00 the next morning (03:30Z).
    const late = Date.UTC(2026, 10, 24, 18, 0);
    await enter(panel, journey.id, ada, late);
    expect(Object.keys(byStep(await messagesOf(panel, "bpn")))).toEqual(["otp"]);
    const held = await panelData.prepare("SELECT step_id, due_at FROM journey_points WHERE journey_id = ? AND outcome IS NULL").bind(journey.id).first();
    expect(held).toEqual({ step_id: "promo#1", due_at: Date.UTC(2026, 10, 25, 3, 30) });
  });
});
