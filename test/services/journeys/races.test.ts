import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { journeyTimers } from "../../../src/services/journeys/timers";
import { scanSegment } from "../../../src/services/journeys/contact-triggers";
import { LIVE_JOURNEYS_CACHE_MS, liveJourneys } from "../../../src/services/journeys/live-journeys";
import { changeJourneyStatus } from "../../../src/store/journeys/definitions";
import { collectingQueue, withBindings } from "../../support/cron";
import { dbActingOnWrite, filesActingOnSend } from "../../support/interleave";
import { defineActivity, pipelineSettled, postBatch } from "../../support/activity";
import { EMAIL_GROUP } from "../../../src/services/journeys/email-groups";
import { admin, apiFor, createPanel, panelData, type TestPanel } from "../../support/helpers";
import { act, cartPanel, cartSmsGoalJourney, countersOf, createWebhook, delivered, MINUTE, startJourney } from "../../support/journeys";

// Background journey steps against what clients do while a step is under way.

const mail = (id: string, subject: string) => ({ id, type: "email", subject, html: `<p>${subject}</p>`, sender_name: "Shop", sender_email: "shop@example.com" });

/** A delay, a nudge, a day's delay, a second nudge. */
const TWO_NUDGES = [
  { id: "later", type: "delay", for: "1h" },
  { ...mail("nudge", "Come back"), after: "later" },
  { id: "again", type: "delay", for: "1d", after: "nudge" },
  { ...mail("second", "Still there?"), after: "again" },
];

async function stepsSentTo(panel: TestPanel, email: string): Promise<string[]> {
  const { results } = await panelData
    .prepare("SELECT m.step_id FROM journey_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.panel_id = ? AND c.pk_value = ? ORDER BY m.step_id")
    .bind(panel.id, email)
    .all<{ step_id: string }>();
  return results.map((r) => r.step_id);
}

/** A delay, a nudge, a webhook call right after it (the same continuation), a day's delay. */
const mailThenHook = (webhook: string) => [
  TWO_NUDGES[0],
  TWO_NUDGES[1],
  { id: "hook", type: "webhook", webhook, after: "nudge", attributes: ["EMAIL"], params: { Action: "nudged" } },
  { id: "again", type: "delay", for: "1d", after: "hook" },
];

/** Two contacts in a journey mailing then calling the panel's webhook, the delay before the email about to end. */
async function mailThenHookJourney(goal?: { activity: string }) {
  const panel = await createPanel();
  const { cart, buy } = await cartPanel(panel);
  const hook = await createWebhook(panel);
  const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, ...(goal ? { goal } : {}), steps: mailThenHook(hook.id) });
  for (const email of ["buyer@example.com", "browser@example.com"]) await act(panel, cart, email);
  return { panel, hook, journey, buy };
}

/** Who the webhook's events were about, sorted. */
async function calledFor(hook: { id: string; bucket: string }): Promise<string[]> {
  return (await delivered(hook)).map((e) => e.att_params.EMAIL as string).sort();
}

/** How many contacts the journey report counts at `step` (its step runs), up to a day ahead (the timers ran ahead of the clock). */
async function reportedAt(journey: { path: string }, step: string): Promise<number> {
  const report = await admin("GET", `${journey.path}/report?to=${new Date(Date.now() + 24 * 60 * MINUTE).toISOString()}`);
  expect(report.status).toBe(200);
  return report.body.steps[step]?.entered ?? 0;
}

/** Contacts waiting together in an hour's delay before one email: more than a few groups of sends. */
async function manyDelayedMails(goal?: { activity: string }) {
  const panel = await createPanel();
  const { cart, buy } = await cartPanel(panel);
  const journey = await startJourney(panel, {
    trigger: { type: "activity", activity: "add_to_cart" },
    ...(goal ? { goal } : {}),
    steps: TWO_NUDGES.slice(0, 2),
  });
  const emails = Array.from({ length: 3 * EMAIL_GROUP }, (_, i) => `shopper${i}@example.com`);
  expect((await postBatch(panel.clientId, emails.map((identity) => ({ activityid: cart, identity })))).status).toBe(200);
  await pipelineSettled(panel.id, 60_000);
  expect(await countersOf(journey)).toMatchObject({ entered: emails.length, active: emails.length });
  return { panel, journey, emails, buy };
}

/** The contacts the panel's journey emails were recorded for (sent or not), sorted. */
async function mailedContacts(panel: TestPanel): Promise<string[]> {
  const { results } = await panelData
    .prepare("SELECT c.pk_value FROM journey_messages m JOIN contacts c ON c.id = m.contact_id WHERE m.panel_id = ? AND m.channel = 'email' ORDER BY c.pk_value")
    .bind(panel.id)
    .all<{ pk_value: string }>();
  return results.map((r) => r.pk_value);
}

/** The journey's status set through the admin API: what `during` does in the stop and pause races. */
const statusTo = (journey: { path: string }, status: string) => async () => {
  expect((await admin("POST", `${journey.path}/status`, { status })).status).toBe(200);
};

/** Runs the timers past the delay, `during` acting while the first email is with the provider; the contacts mailed then. */
async function mailedWhileSending(panel: TestPanel, during: () => Promise<void>): Promise<string[]> {
  await journeyTimers.run(withBindings(env, { FILES: filesActingOnSend(during, panel.id) }), Date.now() + 2 * 60 * MINUTE);
  return mailedContacts(panel);
}

describe("journey steps under way", () => {
  it("a contact who reaches the goal while a step of its instance runs leaves for good: the step's next delay is not left to mail it later", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      goal: { activity: "purchase" },
      steps: TWO_NUDGES,
    });
    await act(panel, cart, "buyer@example.com");
    // The delay ends; while its nudge is being sent, the contact buys (the goal).
    const racing = withBindings(env, { FILES: filesActingOnSend(async () => void (await act(panel, buy, "buyer@example.com"))) });
    await journeyTimers.run(racing, Date.now() + 2 * 60 * MINUTE);
    expect(await stepsSentTo(panel, "buyer@example.com")).toEqual(["nudge"]);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, active: 0, exited: 1, converted: 1 });
    // The email went and is counted; the delay after it, which the contact never entered, is not.
    expect({ nudge: (await countersOf(journey)).steps?.nudge?.acted, again: (await countersOf(journey)).steps?.again?.acted ?? 0 }).toEqual({ nudge: 1, again: 0 });
    // A day later: the converted contact gets nothing more, and waits nowhere.
    await journeyTimers.run(env, Date.now() + 2 * 24 * 60 * MINUTE);
    expect(await stepsSentTo(panel, "buyer@example.com")).toEqual(["nudge"]);
    const counters = await countersOf(journey);
    expect(counters.steps?.again?.waiting ?? 0).toBe(0);
  });

  it("a journey stopped while a step runs leaves no contact waiting in it", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: TWO_NUDGES,
    });
    await act(panel, cart, "browser@example.com");
    const racing = withBindings(env, {
      FILES: filesActingOnSend(async () => {
        expect((await admin("POST", `${journey.path}/status`, { status: "stopped" })).status).toBe(200);
      }),
    });
    await journeyTimers.run(racing, Date.now() + 2 * 60 * MINUTE);
    const counters = await countersOf(journey);
    expect(counters).toMatchObject({ entered: 1, active: 0, exited: 1 });
    expect(counters.steps?.again?.waiting ?? 0).toBe(0);
    const pending = await panelData.prepare("SELECT COUNT(*) AS n FROM journey_points WHERE journey_id = ? AND outcome IS NULL").bind(journey.id).first<{ n: number }>();
    expect(pending!.n).toBe(0);
  });

  it("a journey stopped while its emails go out sends no further group: the contacts not reached yet get nothing", async () => {
    const { panel, journey, emails } = await manyDelayedMails();
    const mailed = await mailedWhileSending(panel, statusTo(journey, "stopped"));
    expect(mailed.length).toBeGreaterThan(0);
    expect(mailed.length).toBeLessThanOrEqual(EMAIL_GROUP);
    expect(await countersOf(journey)).toMatchObject({ entered: emails.length, active: 0, exited: emails.length });
  });

  it("a journey paused while its emails go out holds the contacts not reached yet; each gets its email once when it runs again", async () => {
    const { panel, journey, emails } = await manyDelayedMails();
    const mailed = await mailedWhileSending(panel, statusTo(journey, "paused"));
    expect(mailed.length).toBeLessThanOrEqual(EMAIL_GROUP);
    expect(await countersOf(journey)).toMatchObject({ entered: emails.length, active: emails.length - mailed.length });

    expect((await admin("POST", `${journey.path}/status`, { status: "running" })).status).toBe(200);
    expect(await mailedContacts(panel)).toEqual([...emails].sort());
    expect(await countersOf(journey)).toMatchObject({ active: 0, completed: emails.length });
  });

  it("contacts who reach the goal while the journey's emails go out are not mailed by a later group", async () => {
    const { panel, journey, emails, buy } = await manyDelayedMails({ activity: "purchase" });
    const mailed = await mailedWhileSending(panel, async () => {
      expect((await postBatch(panel.clientId, emails.map((identity) => ({ activityid: buy, identity })))).status).toBe(200);
      await pipelineSettled(panel.id, 60_000);
    });
    expect(mailed.length).toBeGreaterThan(0);
    expect(mailed.length).toBeLessThanOrEqual(EMAIL_GROUP);
    expect(await countersOf(journey)).toMatchObject({ entered: emails.length, active: 0, converted: emails.length });
  });

  it("a contact who reaches the goal while its SMS step runs (no email in it) gets no SMS recorded, nor one of a journey stopped then", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    // A delay, then an SMS and a web push: the outbox records them (no provider set up).
    const steps = [
      { id: "later", type: "delay", for: "1h" },
      { id: "text", type: "sms", text: "Still thinking it over?", after: "later" },
      { id: "push", type: "bpn", text: "Still thinking it over?", after: "text" },
    ];
    const converting = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, goal: { activity: "purchase" }, steps });
    const browse = await defineActivity(panel, "browse");
    const stopping = await startJourney(panel, { name: "Stopped", trigger: { type: "activity", activity: "browse" }, steps });
    await act(panel, cart, "buyer@example.com");
    await act(panel, browse, "browser@example.com");
    const messagesOfPanel = () => panelData.prepare("SELECT step_id FROM journey_messages WHERE panel_id = ?").bind(panel.id).all();
    // The steps have read their contacts and planned their messages; the goal and the stop land before they are written.
    const writes = (sql: string, values: unknown[]) => sql.includes("INTO journey_messages") && values[1] === panel.id;
    const racing = withBindings(env, {
      SHARD_1: dbActingOnWrite(env.SHARD_1, writes, async () => {
        await act(panel, buy, "buyer@example.com");
        expect((await admin("POST", `${stopping.path}/status`, { status: "stopped" })).status).toBe(200);
      }),
    });
    await journeyTimers.run(racing, Date.now() + 2 * 60 * MINUTE);
    for (const journey of [converting, stopping]) expect(await countersOf(journey)).toMatchObject({ entered: 1, active: 0, exited: 1 });
    expect((await messagesOfPanel()).results).toEqual([]);
    expect(await countersOf(converting)).toMatchObject({ converted: 1 });
  });

  it("a contact who reaches the goal after its email group's re-check, before the email's claim, is not mailed", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, goal: { activity: "purchase" }, steps: TWO_NUDGES });
    await act(panel, cart, "buyer@example.com");
    // The group has read the instance as going; the goal lands as the email's message row is claimed.
    const claims = (sql: string, values: unknown[]) => sql.includes("INTO journey_messages") && values[1] === panel.id && values[5] === "email";
    const racing = withBindings(env, { SHARD_1: dbActingOnWrite(env.SHARD_1, claims, async () => void (await act(panel, buy, "buyer@example.com"))) });
    await journeyTimers.run(racing, Date.now() + 2 * 60 * MINUTE);
    expect(await stepsSentTo(panel, "buyer@example.com")).toEqual([]);
    expect((await env.FILES.list({ prefix: `outbox/${panel.id}/` })).objects).toEqual([]);
    const counters = await countersOf(journey);
    expect(counters).toMatchObject({ entered: 1, active: 0, exited: 1, converted: 1 });
    expect(counters.steps?.nudge?.acted ?? 0).toBe(0);
  });

  it("a contact who reaches the goal while its SMS step runs, with a provider: no message, no nudge, no short link, and the step is not counted as acted", async () => {
    const panel = await createPanel();
    const twilio = await admin("PUT", `/panels/${panel.id}/sms`, { provider: "twilio", account_sid: `AC${"2".repeat(32)}`, auth_token: "tok-race", from: "+15005550006" });
    expect(twilio.status).toBe(200);
    const { cart, buy } = await cartPanel(panel);
    const journey = await cartSmsGoalJourney(panel, "Your cart: https://shop.example.com/cart");
    expect((await apiFor(panel)("contact", "add", { data: { EMAIL: "buyer@example.com", MOBILE: "+14155550123" } })).status).toBe(200);
    await act(panel, cart, "buyer@example.com");
    const sends = collectingQueue();
    const writes = (sql: string, values: unknown[]) => sql.includes("INTO journey_messages") && values[1] === panel.id;
    const racing = withBindings(env, { SENDS: sends, SHARD_1: dbActingOnWrite(env.SHARD_1, writes, async () => void (await act(panel, buy, "buyer@example.com"))) });
    await journeyTimers.run(racing, Date.now() + 2 * 60 * MINUTE);
    expect(await stepsSentTo(panel, "buyer@example.com")).toEqual([]);
    const counters = await countersOf(journey);
    expect(counters).toMatchObject({ entered: 1, active: 0, exited: 1, converted: 1 });
    const links = await panelData.prepare("SELECT COUNT(*) AS n FROM sms_links WHERE panel_id = ?").bind(panel.id).first("n");
    expect({ nudged: sends.bodies.length, links, acted: counters.steps?.sms?.acted ?? 0 }).toEqual({ nudged: 0, links: 0, acted: 0 });
  });

  it("a contact who reaches the goal while its email goes out is not handed to the webhook step after it, nor counted at that step or the next", async () => {
    const { panel, hook, journey, buy } = await mailThenHookJourney({ activity: "purchase" });
    const mailed = await mailedWhileSending(panel, async () => void (await act(panel, buy, "buyer@example.com")));
    expect(mailed).toContain("browser@example.com");
    expect(await calledFor(hook)).toEqual(["browser@example.com"]);
    const counters = await countersOf(journey);
    expect(counters).toMatchObject({ entered: 2, active: 1, exited: 1, converted: 1 });
    expect({ hook: counters.steps?.hook?.acted, again: counters.steps?.again?.acted, reported: await reportedAt(journey, "hook") }).toEqual({ hook: 1, again: 1, reported: 1 });
  });

  it("a contact who reaches the goal while its email goes out is not entered in the split after it: neither the split's figures nor its step count it", async () => {
    const panel = await createPanel();
    const { cart, buy } = await cartPanel(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "activity", activity: "add_to_cart" },
      goal: { activity: "purchase" },
      steps: [
        ...TWO_NUDGES.slice(0, 2),
        { id: "ab", type: "split", after: "nudge", branches: [{ percent: 50, then: "a" }, { percent: 50, then: "b" }] },
        { id: "a", type: "delay", for: "1d" },
        { id: "b", type: "delay", for: "1d" },
      ],
    });
    await act(panel, cart, "buyer@example.com");
    expect(await mailedWhileSending(panel, async () => void (await act(panel, buy, "buyer@example.com")))).toEqual(["buyer@example.com"]);
    const [split] = (await admin("GET", `${journey.path}/splits`)).body.splits;
    const counters = await countersOf(journey);
    expect(counters).toMatchObject({ entered: 1, active: 0, exited: 1, converted: 1 });
    expect({ entered: split.branches.map((b: { entered: number }) => b.entered), ab: counters.steps?.ab?.acted ?? 0 }).toEqual({ entered: [0, 0], ab: 0 });
  });

  it("a journey stopped while its email goes out hands no contact to the webhook step after it, nor counts that step", async () => {
    const { panel, hook, journey } = await mailThenHookJourney();
    const mailed = await mailedWhileSending(panel, statusTo(journey, "stopped"));
    expect(mailed.length).toBeGreaterThan(0);
    expect(await calledFor(hook)).toEqual([]);
    const counters = await countersOf(journey);
    expect(counters).toMatchObject({ entered: 2, active: 0, exited: 2 });
    expect({ hook: counters.steps?.hook?.acted ?? 0, again: counters.steps?.again?.acted ?? 0, reported: await reportedAt(journey, "hook") }).toEqual({ hook: 0, again: 0, reported: 0 });
  });

  it("a journey paused while its email goes out hands nobody to the webhook step after it until it runs again; then each contact once, mailed once", async () => {
    const { panel, hook, journey } = await mailThenHookJourney();
    const mailed = await mailedWhileSending(panel, statusTo(journey, "paused"));
    expect(mailed.length).toBeGreaterThan(0);
    expect(await calledFor(hook)).toEqual([]);
    expect((await countersOf(journey)).steps?.hook?.acted ?? 0).toBe(0);

    expect((await admin("POST", `${journey.path}/status`, { status: "running" })).status).toBe(200);
    const both = ["browser@example.com", "buyer@example.com"];
    expect(await calledFor(hook)).toEqual(both);
    expect(await mailedContacts(panel)).toEqual(both);
    expect((await env.FILES.list({ prefix: `outbox/${panel.id}/` })).objects).toHaveLength(2);
    const counters = await countersOf(journey);
    expect(counters).toMatchObject({ entered: 2, active: 2 });
    expect({ nudge: counters.steps?.nudge?.acted, hook: counters.steps?.hook?.acted, waiting: counters.steps?.again?.waiting }).toEqual({ nudge: 2, hook: 2, waiting: 2 });
  });

  it("a journey paused while its email goes out, run again in the email's quiet hours: the webhook step after the sent email is not held to their end", async () => {
    const { panel, hook, journey } = await mailThenHookJourney();
    // Quiet hours for email around the resume (now, on the panel's UTC clock), over by the time the delay ends.
    const clock = (at: number) => new Date(at).toISOString().slice(11, 16);
    const rules = { caps: [], quiet_hours: [{ channel: "email", from: clock(Date.now() - 30 * MINUTE), to: clock(Date.now() + 60 * MINUTE) }] };
    expect((await admin("PATCH", `/panels/${panel.id}`, { message_rules: rules })).status).toBe(200);
    const mailed = await mailedWhileSending(panel, statusTo(journey, "paused"));
    expect(mailed.length).toBeGreaterThan(0);
    expect(await calledFor(hook)).toEqual([]);

    expect((await admin("POST", `${journey.path}/status`, { status: "running" })).status).toBe(200);
    // The contact mailed before the pause goes on to the webhook now; the one not mailed yet waits out the quiet hours.
    expect(await calledFor(hook)).toEqual(mailed);
    expect(await mailedContacts(panel)).toEqual(mailed);
    expect((await env.FILES.list({ prefix: `outbox/${panel.id}/` })).objects).toHaveLength(mailed.length);
    const counters = await countersOf(journey);
    expect({ nudge: counters.steps?.nudge?.acted, hook: counters.steps?.hook?.acted, waiting: counters.steps?.again?.waiting }).toEqual({
      nudge: mailed.length,
      hook: mailed.length,
      waiting: mailed.length,
    });
  });

  it("a segment journey started through another isolate: a contact written here to match, after the entry scan passed it, enters", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "ada@example.com", CITY: "Pune" } });
    await api("contact", "add", { data: { EMAIL: "bob@example.com", CITY: "Delhi" } });
    const journey = await startJourney(panel, { trigger: { type: "segment", filter: [{ attribute: "CITY", op: "eq", value: "Pune" }] }, steps: [{ id: "hi", type: "sms", text: "Namaste" }] }, null);
    // This isolate's answer: no live journey (kept up to LIVE_JOURNEYS_CACHE_MS).
    expect(await liveJourneys(panelData, panel.id)).toEqual([]);
    // Another isolate runs it and scans its first page at once, as setJourneyStatus does there.
    const started = Date.now();
    const running = (await changeJourneyStatus(panelData, panel.id, journey.id, ["draft"], "running", started))!;
    await scanSegment(env, running, started);
    expect(await countersOf(journey)).toMatchObject({ entered: 1 });
    // Bob moves to Pune through this isolate, whose write does not know the journey yet.
    expect((await api("contact", "update", { data: { EMAIL: "bob@example.com", CITY: "Pune" } })).status).toBe(200);
    // Not before every isolate knows the journey; then the cron looks again at what the scan passed meanwhile: Bob enters.
    await journeyTimers.run(env, started + LIVE_JOURNEYS_CACHE_MS - 1_000);
    expect(await countersOf(journey)).toMatchObject({ entered: 1 });
    await journeyTimers.run(env, started + LIVE_JOURNEYS_CACHE_MS + 1_000);
    expect(await countersOf(journey)).toMatchObject({ entered: 2 });
    expect(await panelData.prepare("SELECT rescan_upto FROM journeys WHERE id = ?").bind(journey.id).first("rescan_upto")).toBeNull();
  });
});
