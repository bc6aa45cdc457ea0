import { recordEvents } from "./record";

/**
 * Every email event (open, click, bounce, unsubscribe, complaint) of campaign and journey mail leaves
 * the email code through recordEmailEvents and nowhere else (it lives here, below both
 * broadcasts and journeys, so neither imports the other for it), into the one pipeline of
 * CONTRACT 7 (stored, then matched against journeys, then handed to webhooks). The campaign
 * counters do not depend on it: they live on campaign_messages.
 */
export type EmailEventKind = "open" | "click" | "bounce" | "unsubscribe" | "complaint";

export interface EmailEvent {
  panelId: string;
  event: EmailEventKind;
  /** The message the event is about (`<campaign id>.<contact id>` for campaign mail, `<instance>.<step>` for journey mail). */
  msgid: string;
  campaignId: string | null;
  /** The journey of a journey message. */
  journeyId?: string;
  /** Set for an event that must be stored once whatever the repeats (an unsubscribe of a journey message, a complaint). */
  guid?: string;
  contactId: number | null;
  /** The recipient address (the contact's EMAIL). */
  address: string | null;
  /** Event-specific details: the `url` of a click, the `bounce_type` of a bounce. */
  detail?: Record<string, unknown>;
  at: number;
}

export async function recordEmailEvents(env: Env, events: readonly EmailEvent[]): Promise<void> {
  for (const panelId of new Set(events.map((e) => e.panelId))) {
    await recordEvents(
      env,
      { id: panelId },
      events
        .filter((e) => e.panelId === panelId && e.contactId !== null)
        .map((e) => ({
          channel: "email" as const,
          name: e.event,
          occurredAt: e.at,
          contactId: e.contactId!,
          source: "tracking",
          params: { ...(e.detail ?? {}), ...(e.address ? { email: e.address } : {}) },
          msgid: e.msgid,
          ...(e.campaignId ? { campaignId: e.campaignId } : {}),
          ...(e.journeyId ? { journeyId: e.journeyId } : {}),
          ...(e.guid ? { guid: e.guid } : {}),
        })),
    );
  }
}
