import { findPanelHome } from "../access/shards";
import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { TtlCache } from "../../lib/ttl-cache";
import { getWebhookWithPanel, type WebhookWithPanel } from "../../store/webhooks";
import { MAX_EVENT_BYTES } from "../../domain/webhooks/batching";
import type { EncodedEvent } from "./dispatcher";
import { buildEventObject, webhookEventProblem, type JsonValue, type WebhookEvent } from "../../domain/webhooks/payload";

/** The Durable Object that holds a webhook's backlog. */
export function webhookDispatcher(env: Pick<Env, "WEBHOOKS">, webhookId: string) {
  return env.WEBHOOKS.get(env.WEBHOOKS.idFromName(webhookId));
}

/**
 * How long an isolate trusts a webhook lookup for hand-overs. Without it every hand-over pays a
 * D1 read first (a fifth of the hand-over's cost in bench:webhooks, and D1 serves about 1,000
 * small queries/s per database). The cost: a label, payload version or panel time zone changed
 * through another isolate reaches new events within this time; events handed to a webhook
 * deleted through another isolate meanwhile are accepted and dropped with its backlog. The
 * panel name (the payload's key) and the webhook's URL, credentials and state are read afresh
 * by the Durable Object for every delivery run.
 */
export const WEBHOOK_CACHE_MS = 10_000;
const webhooks = new TtlCache<WebhookWithPanel>(WEBHOOK_CACHE_MS, 1000);

/** Drops the cached lookups; admin changes to a webhook call it. Failed lookups are never cached. */
export function forgetWebhooks(): void {
  webhooks.clear();
}

async function loadWebhook(env: Env, panelId: string, webhookId: string): Promise<WebhookWithPanel | null> {
  const key = `${panelId}/${webhookId}`;
  const cached = webhooks.get(key);
  if (cached) return cached;
  const home = await findPanelHome(env, panelId);
  const webhook = home ? await getWebhookWithPanel(home.db, home.panel, webhookId) : null;
  if (webhook) webhooks.set(key, webhook);
  return webhook;
}

export type EnqueueOutcome = Result<{ accepted: number; duplicates: number }>;

/**
 * THE way to hand events to a webhook (the admin `events` route, journeys). Each event is
 * rendered in the webhook's payload version, then all are stored in the webhook's backlog;
 * the promise resolves only once they are durably stored, in the order given. Delivery
 * follows whatever the webhook's state: a configured or disabled webhook keeps them until it
 * is operational. An event whose caller-given `guid` was handed over within the last 7 days
 * is skipped (counted in `duplicates`), so repeating a hand-over after a crash is harmless;
 * without a guid one is generated (and such events are never taken for repeats).
 *
 * `events` may also be a function of the webhook (with its panel's name and time zone) that
 * makes them, for callers that need those to describe the events; it saves a second lookup.
 *
 * Refused (nothing stored) as not_found when the webhook does not exist in this panel, and as
 * invalid, naming `events.<index>.<field>`, when an event is not valid or too large.
 */
export async function enqueueWebhookEvents(
  env: Env,
  panelId: string,
  webhookId: string,
  events: readonly WebhookEvent[] | ((webhook: WebhookWithPanel) => readonly WebhookEvent[]),
): Promise<EnqueueOutcome> {
  const webhook = await loadWebhook(env, panelId, webhookId);
  if (!webhook) return refused("not_found", [], `No webhook with id "${webhookId}" in this panel`);
  const described = typeof events === "function" ? events(webhook) : events;
  const encoded: EncodedEvent[] = [];
  for (const [index, event] of described.entries()) {
    const outcome = encodeEvent(event, webhook);
    if ("problem" in outcome) return refusedField("invalid", `events.${index}.${outcome.problem.field}`, outcome.problem.message);
    encoded.push(outcome);
  }
  if (encoded.length === 0) return succeeded({ accepted: 0, duplicates: 0 });
  const stored = await webhookDispatcher(env, webhookId).enqueue({ panelId, webhookId, envelopeKey: webhook.panelName }, encoded);
  return succeeded(stored);
}

function encodeEvent(event: WebhookEvent, webhook: WebhookWithPanel, replay?: string): EncodedEvent | { problem: { field: string; message: string } } {
  const problem = webhookEventProblem(event);
  if (problem) return { problem };
  const context = { version: webhook.version, webhookName: webhook.label, timeZone: webhook.panelTimeZone };
  const guid = event.guid ?? crypto.randomUUID();
  const object = buildEventObject({ ...event, guid }, context);
  // A replayed event says so in its own object; live events are rendered exactly as before.
  if (replay !== undefined) object.replay = true;
  const payload = encodeURIComponent(JSON.stringify(object));
  if (payload.length > MAX_EVENT_BYTES) return { problem: { field: "event", message: `is ${payload.length} bytes URL-encoded; an event may take at most ${MAX_EVENT_BYTES}` } };
  return { guid, payload, dedupe: event.guid !== undefined, source: event.journeyId ?? null, ...(replay !== undefined ? { replay } : {}) };
}

/**
 * The event object the webhook would be sent for `event`, rendered as a hand-over renders it,
 * with nothing queued (a journey simulation's sample); null when the webhook is not the panel's.
 */
export async function renderWebhookEvent(env: Env, panelId: string, webhookId: string, event: WebhookEvent & { guid: string }): Promise<Record<string, JsonValue> | null> {
  const webhook = await loadWebhook(env, panelId, webhookId);
  if (!webhook) return null;
  return buildEventObject(event, { version: webhook.version, webhookName: webhook.label, timeZone: webhook.panelTimeZone });
}

/** What became of one event of a hand-over made event by event. */
export type HandOverResult = { kind: "queued" } | { kind: "webhook_missing" } | { kind: "refused"; reason: string };

/**
 * Hands many independent events to one webhook in one call to its Durable Object (journeys
 * hand over an event per contact; one call each would queue thousands of calls at once). Unlike
 * `enqueueWebhookEvents`, an event that cannot be sent is refused alone, the others are stored.
 * Throws when the backlog could not store them (nothing is then known to be stored).
 */
export async function enqueueWebhookEventsEach(
  env: Env,
  panelId: string,
  webhookId: string,
  events: readonly WebhookEvent[],
): Promise<HandOverResult[]> {
  const webhook = await loadWebhook(env, panelId, webhookId);
  if (!webhook) return events.map(() => ({ kind: "webhook_missing" }));
  const outcomes = events.map((event) => encodeEvent(event, webhook));
  const encoded = outcomes.filter((outcome): outcome is EncodedEvent => !("problem" in outcome));
  if (encoded.length > 0) await webhookDispatcher(env, webhookId).enqueue({ panelId, webhookId, envelopeKey: webhook.panelName }, encoded);
  return outcomes.map((outcome) => ("problem" in outcome ? { kind: "refused", reason: `${outcome.problem.field}: ${outcome.problem.message}` } : { kind: "queued" }));
}

/** What a replay step's hand-over came to: events queued, repeats skipped, events that cannot be sent. */
export type ReplayHandOver = { kind: "webhook_missing" } | { kind: "stored"; queued: number; duplicates: number; refused: number };

/**
 * Hands a page of a replay's events to the webhook's Durable Object, each marked as the
 * replay's (`replay: true` in the event, `X-Webhook-Replay` on its batches). Every event must
 * carry a guid made from the replay and the event, so handing a page over again (a step
 * retried after a crash) queues nothing twice. An event that cannot be sent (too large) is
 * skipped and counted; the others are stored. Throws when the backlog could not store them.
 */
export async function enqueueReplayEvents(
  env: Env,
  panelId: string,
  webhookId: string,
  replayId: string,
  events: (webhook: WebhookWithPanel) => ReadonlyArray<WebhookEvent & { guid: string }>,
): Promise<ReplayHandOver> {
  const webhook = await loadWebhook(env, panelId, webhookId);
  if (!webhook) return { kind: "webhook_missing" };
  const outcomes = events(webhook).map((event) => encodeEvent(event, webhook, replayId));
  const encoded = outcomes.filter((outcome): outcome is EncodedEvent => !("problem" in outcome));
  const refused = outcomes.length - encoded.length;
  if (encoded.length === 0) return { kind: "stored", queued: 0, duplicates: 0, refused };
  const stored = await webhookDispatcher(env, webhookId).enqueue({ panelId, webhookId, envelopeKey: webhook.panelName }, encoded);
  return { kind: "stored", queued: stored.accepted, duplicates: stored.duplicates, refused };
}
