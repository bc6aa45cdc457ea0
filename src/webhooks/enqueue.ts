import { getWebhookWithPanel } from "../store/webhooks";
import { MAX_EVENT_BYTES } from "./batching";
import type { EncodedEvent } from "./dispatcher";
import { buildEventObject, webhookEventProblem, type WebhookEvent } from "./payload";

/** The Durable Object that holds a webhook's backlog. */
export function webhookDispatcher(env: Pick<Env, "WEBHOOKS">, webhookId: string) {
  return env.WEBHOOKS.get(env.WEBHOOKS.idFromName(webhookId));
}

/** An event that cannot be sent; `index` is its position in the hand-over. */
export class WebhookEventError extends Error {
  constructor(
    readonly index: number,
    readonly field: string,
    readonly reason: string,
  ) {
    super(`events.${index}.${field}: ${reason}`);
  }
}

export type EnqueueOutcome = { found: false } | { found: true; accepted: number; duplicates: number };

/**
 * THE way to hand events to a webhook (the admin `events` route, journeys). Each event is
 * rendered in the webhook's payload version, then all are stored in the webhook's backlog;
 * the promise resolves only once they are durably stored, in the order given. Delivery
 * follows whatever the webhook's state: a configured or disabled webhook keeps them until it
 * is operational. An event whose guid was handed over within the last 7 days is skipped
 * (counted in `duplicates`), so repeating a hand-over after a crash is harmless.
 *
 * `found: false` when the webhook does not exist in this panel. Throws WebhookEventError
 * (nothing stored) when an event is not valid or too large.
 */
export async function enqueueWebhookEvents(
  env: Pick<Env, "DB" | "WEBHOOKS">,
  panelId: string,
  webhookId: string,
  events: readonly WebhookEvent[],
): Promise<EnqueueOutcome> {
  const webhook = await getWebhookWithPanel(env.DB, panelId, webhookId);
  if (!webhook) return { found: false };
  const context = { version: webhook.version, webhookName: webhook.label, timeZone: webhook.panelTimeZone };
  const encoded: EncodedEvent[] = events.map((event, index) => {
    const problem = webhookEventProblem(event);
    if (problem) throw new WebhookEventError(index, problem.field, problem.message);
    const guid = event.guid ?? crypto.randomUUID();
    const payload = encodeURIComponent(JSON.stringify(buildEventObject({ ...event, guid }, context)));
    if (payload.length > MAX_EVENT_BYTES) {
      throw new WebhookEventError(index, "event", `is ${payload.length} bytes URL-encoded; an event may take at most ${MAX_EVENT_BYTES}`);
    }
    return { guid, payload };
  });
  if (encoded.length === 0) return { found: true, accepted: 0, duplicates: 0 };
  const stored = await webhookDispatcher(env, webhookId).enqueue({ panelId, webhookId, envelopeKey: webhook.panelName }, encoded);
  return { found: true, ...stored };
}
