import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { collectingQueue, runCron, withBindings } from "./cron";
import { journeyTimers } from "../../src/services/journeys/timers";
import { defineActivity, eventSettled, postActivity } from "./activity";
import { admin, apiFor, call, type TestPanel, panelData } from "./helpers";
import { advance, createWebhook, deliveries, drive, eventsOf } from "./webhooks";

export { createWebhook, eventsOf };

/** Creates a journey and sets it running (unless `status` says otherwise); returns its admin path. */
export async function startJourney(panel: TestPanel, definition: Record<string, unknown>, status: string | null = "running") {
  const created = await admin("POST", `/panels/${panel.id}/journeys`, { name: "Cart reminder", ...definition });
  if (created.status !== 201) throw new Error(`journey not created: ${JSON.stringify(created.body)}`);
  const path = `/panels/${panel.id}/journeys/${created.body.id}`;
  if (status) {
    const moved = await admin("POST", `${path}/status`, { status });
    expect(moved.status).toBe(200);
  }
  return { id: created.body.id as string, path };
}

/** Posts an activity and waits until the pipeline (journeys included) is done with it. */
export async function act(panel: TestPanel, activityid: string, identity: string, extra: Record<string, unknown> = {}) {
  const posted = await postActivity(panel.clientId, { activityid, identity, ...extra });
  expect(posted.status).toBe(200);
  await settled(panel, posted.body.guid);
  return posted.body.guid as string;
}

export async function settled(panel: TestPanel, guid: string) {
  await eventSettled(panel.id, guid);
}

/** Reports a channel event for a journey message, as an SMS gateway or push service does. */
export async function report(panel: TestPanel, channel: string, body: Record<string, unknown>) {
  const response = await call(`/v1/events/${channel}/${encodeURIComponent(panel.clientId)}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = { status: response.status, body: (await response.json()) as any };
  if (answer.status === 200) await settled(panel, answer.body.guid);
  return answer;
}

/** Lets the webhook's batch window pass and delivers; returns every event the receiver got. */
export async function delivered(hook: { id: string; bucket: string }): Promise<any[]> {
  await advance(hook.id, 5_000);
  await drive(hook.id);
  return (await deliveries(hook.bucket)).flatMap(eventsOf);
}

/** Runs the journeys' cron task as the per-minute trigger would at `now`. */
export async function cronAt(now: number) {
  await journeyTimers.run(env, now);
}

export async function cronAllAt(now: number) {
  await runCron(now);
}

export async function messagesOf(panel: TestPanel, channel?: string): Promise<any[]> {
  const answer = await admin("GET", `/panels/${panel.id}/journey-messages${channel ? `?channel=${channel}` : ""}`);
  expect(answer.status).toBe(200);
  return answer.body.messages;
}

export async function countersOf(journey: { path: string }) {
  return (await admin("GET", journey.path)).body.counters;
}

export async function cartPanel(panel: TestPanel) {
  const cart = await defineActivity(panel, "add_to_cart", { name: "string", price: "float" });
  const buy = await defineActivity(panel, "purchase", { prid: "integer" });
  return { cart, buy };
}

export const MINUTE = 60_000;

/**
 * Ada (already a contact of `panel`, cartPanel's activities) adds to cart and enters a journey
 * whose goal is a purchase, of `steps` (a message of SMS or push due after an hour's delay); the
 * timers run two hours on and record it, its nudge collected, not sent; the journey is paused
 * and ada buys. The journey and the message's msgid.
 */
export async function goalReachedWhilePaused(panel: TestPanel, activities: { cart: string; buy: string }, steps: unknown[]) {
  const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, goal: { activity: "purchase" }, steps });
  await act(panel, activities.cart, "ada@example.com");
  const sends = collectingQueue();
  await journeyTimers.run(withBindings(env, { SENDS: sends }), Date.now() + 2 * 60 * MINUTE);
  const [msgid] = sends.bodies.flatMap((body: any) => body.msgids) as string[];
  expect((await admin("POST", `${journey.path}/status`, { status: "paused" })).status).toBe(200);
  await act(panel, activities.buy, "ada@example.com");
  return { journey, msgid: msgid! };
}

/**
 * An add-to-cart journey with a purchase goal: an hour's delay, an SMS of `text` (step "sms"),
 * then a day's delay, so the contact is still in the journey after its SMS (the last step would
 * complete it).
 */
export const cartSmsGoalJourney = (panel: TestPanel, text: string) =>
  startJourney(panel, {
    trigger: { type: "activity", activity: "add_to_cart" },
    goal: { activity: "purchase" },
    steps: [
      { id: "later", type: "delay", for: "1h" },
      { id: "sms", type: "sms", text, after: "later" },
      { id: "again", type: "delay", for: "1d", after: "sms" },
    ],
  });

/** A webhook call ("hello"), an hour's delay, then another call ("later"): a contact waits in between. */
export const helloPauseLater = (hookId: string) => [
  { id: "hello", type: "webhook", webhook: hookId, params: { Action: "hello" } },
  { id: "pause", type: "delay", for: "1h", after: "hello" },
  { id: "later", type: "webhook", webhook: hookId, after: "pause", params: { Action: "later" } },
];

/** Members written straight into D1: the membership's trigger leaves the entries, and no nudge is sent. */
export async function addMembersQuietly(panel: TestPanel, listId: number, emails: string[]): Promise<void> {
  const now = Date.now();
  await panelData.batch(
    emails.flatMap((email) => [
      panelData.prepare("INSERT OR IGNORE INTO contacts (panel_id, pk_value, attrs, created_at, updated_at) VALUES (?, ?, ?, ?, ?)").bind(panel.id, email, JSON.stringify({ EMAIL: email }), now, now),
      panelData.prepare(
        `INSERT OR IGNORE INTO list_members (list_id, contact_id, panel_id, added_at)
         SELECT ?, id, panel_id, ? FROM contacts WHERE panel_id = ? AND pk_value = ?`,
      ).bind(listId, now, panel.id, email),
    ]),
  );
}

/** A running segment journey of contacts in Pune that sends each an sms. */
export function puneSegmentJourney(panel: TestPanel) {
  return startJourney(panel, {
    trigger: { type: "segment", filter: [{ attribute: "CITY", op: "eq", value: "Pune" }] },
    steps: [{ id: "hello", type: "sms", text: "Namaste Pune" }],
  });
}

/** A list, and a running journey it triggers that sends each new member an sms. */
export async function smsListJourney(panel: TestPanel, listname = "VIP") {
  const listId = (await apiFor(panel)("lists", "add", { listname })).body.listid as number;
  return { listId, journey: await startJourney(panel, { trigger: { type: "list", listid: listId }, steps: [{ id: "hi", type: "sms", text: "Hi" }] }) };
}
