/**
 * The one event shape of the service (CONTRACT 7): custom activities posted by clients, and
 * the channel events (email open/click/bounce/unsubscribe, sms/apn/bpn delivered/click) that
 * tracking, providers and `POST /v1/events/{channel}` report. Every one is stored, then run
 * through the pipeline (src/services/pipeline).
 */
export const EVENT_CHANNELS = ["custom_activity", "email", "sms", "apn", "bpn"] as const;
export type EventChannel = (typeof EVENT_CHANNELS)[number];

/** An event about to be recorded; everything is already validated and normalised. */
export interface NewEvent {
  channel: EventChannel;
  /** The activity's name for custom activities; the event (open, click, delivered...) otherwise. */
  name: string;
  /** When it happened, UTC epoch ms. */
  occurredAt: number;
  /** Custom activities: the definition's id (`activityid`). */
  activityId?: number;
  /** Who did it, as the caller knows it; at least one of the three. */
  contactId?: number;
  /** The panel's normalised primary-key value; an unknown one creates the contact. */
  identity?: string;
  /** An anonymous visitor id; joined to the contact once an event carries both. */
  uniqueid?: string;
  /** Where it came from: `web`, `app`, `custom` for activities; e.g. `tracking` for opens. */
  source?: string;
  /** JSON-serialisable values, by bare parameter name. */
  params?: Record<string, unknown>;
  /** Unique within the panel; a second event with the same guid is not stored. Generated when absent. */
  guid?: string;
  msgid?: string;
  campaignId?: string;
  journeyId?: string;
}

export const MAX_GUID_LENGTH = 255;
