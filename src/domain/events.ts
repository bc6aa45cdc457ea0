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
  /**
   * The event's parameters, JSON-serialisable, by bare name: a custom activity's
   * `activity_params` checked against its definition (array parameters whole), a channel
   * event's details (url, ip_addr, …). One name from here to the webhook: `params` of NewEvent,
   * of the stored row (column `params`) and of StoredEvent; `p` only inside a batch's JSON
   * (store/event-batches.ts RECORDED_KEYS); `payload_params.items[0]` on the wire (payloadParamsOf).
   */
  params?: Record<string, unknown>;
  /** Unique within the panel; a second event with the same guid is not stored. Generated when absent. */
  guid?: string;
  msgid?: string;
  campaignId?: string;
  journeyId?: string;
  /** Custom activities: the web or app property of the panel it came from (Activity API v2 `asset_id`). */
  assetId?: string;
}

export const MAX_GUID_LENGTH = 255;
export const MAX_ASSET_ID_LENGTH = 255;

/**
 * An event that happened longer ago than this before it was received is recorded but starts
 * no journey (the hosted service's rule): a late import of last month's purchases must not
 * send "thanks for your purchase" today.
 */
export const JOURNEY_MAX_EVENT_AGE_MS = 24 * 3_600_000;

/** What the answer of a call says when some of its events start no journey for their age. */
export const JOURNEYS_SKIPPED_OLD = "skipped: older than 24 hours";

/** Whether an event received at `receivedAt` may start journeys. */
export function startsJourneys(event: { occurredAt: number }, receivedAt: number): boolean {
  return receivedAt - event.occurredAt <= JOURNEY_MAX_EVENT_AGE_MS;
}
