import { newId } from "../lib/random";
import { insertEmailEvents } from "../store/email-events";

/**
 * SEAM (event pipeline). Every email event (open, click, bounce, unsubscribe) leaves the
 * broadcast code through recordEmailEvents and nowhere else. CONTRACT 7 wants all events in
 * one pipeline (stored, matched against journeys, handed to webhooks); until that pipeline is
 * merged, this stores them in the email_events table. To switch: make this function map each
 * EmailEvent to the pipeline's event shape and call its store-then-enqueue entry
 * (`recordEvents(env, events)`), then drop email_events and src/store/email-events.ts.
 *
 * The campaign counters do not depend on this: they live on campaign_messages.
 */
export type EmailEventKind = "open" | "click" | "bounce" | "unsubscribe";

export interface EmailEvent {
  panelId: string;
  event: EmailEventKind;
  /** The message the event is about (`<campaign id>.<contact id>` for campaign mail). */
  msgid: string;
  campaignId: string | null;
  contactId: number | null;
  /** The recipient address (the contact's EMAIL). */
  address: string | null;
  /** Event-specific details: the `url` of a click, the `bounce_type` of a bounce. */
  detail?: Record<string, unknown>;
  at: number;
}

export async function recordEmailEvents(env: Pick<Env, "DB">, events: readonly EmailEvent[]): Promise<void> {
  await insertEmailEvents(
    env.DB,
    events.map((e) => ({
      id: newId("evt"),
      panelId: e.panelId,
      event: e.event,
      msgid: e.msgid,
      campaignId: e.campaignId,
      contactId: e.contactId,
      address: e.address,
      detail: e.detail ?? null,
      at: e.at,
    })),
  );
}
