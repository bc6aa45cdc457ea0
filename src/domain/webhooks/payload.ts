import { formatCts, formatLocalIso, resolveEventTime } from "../time";

/**
 * Webhook event objects (spec 2.8, CONTRACT 6) for the two documented payload versions.
 * Callers (journeys, the admin `events` route) describe an event once, version-neutrally, as a
 * `WebhookEvent`; `buildEventObject` renders the exact object of a webhook's version:
 *
 * - 2.0 (current): `msgid`, `udt_params` and `event_params.timestamp` are present; bpn/apn
 *   report `delivered`.
 * - 1.0 (older): no `msgid`, no `udt_params`, no `timestamp`; bpn/apn report `view` instead of
 *   `delivered`; click events carry `event_params.linkid` (-1 when the link is unknown).
 */

export const PAYLOAD_VERSIONS = ["2.0", "1.0"] as const;
export type PayloadVersion = (typeof PAYLOAD_VERSIONS)[number];

export const WEBHOOK_CHANNELS = ["email", "sms", "bpn", "apn", "custom_activity"] as const;
export type WebhookChannel = (typeof WEBHOOK_CHANNELS)[number];
export type MessageChannel = Exclude<WebhookChannel, "custom_activity">;

export const MESSAGE_EVENTS = ["open", "click", "bounce", "delivered"] as const;
export type MessageEvent = (typeof MESSAGE_EVENTS)[number];

/** Tracked activities per channel (spec 6.2, current names). */
export const CHANNEL_EVENTS: Record<MessageChannel, readonly MessageEvent[]> = {
  email: ["open", "click", "bounce"],
  sms: ["delivered", "click"],
  bpn: ["delivered", "click"],
  apn: ["delivered", "click"],
};

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * `event_params` members a caller provides (spec 2.8); which ones depend on the channel.
 * `ts`, `timestamp`, `guid` and `linkid` are not among them: the builder writes those.
 */
export interface EventDetails {
  foreignkey?: string;
  identity?: string;
  ip_addr?: string;
  user_agent?: string;
  useragent?: string;
  name?: string | null;
  mobile?: string;
  email?: string;
  subject?: string;
  fromfield?: string;
  camp_name?: string;
  tags?: string;
  token?: string[];
  token_id?: null;
  activity_name?: string;
  activity_id?: string | number;
  activity_source?: string;
  asset_name?: string;
  asset_id?: string;
  [member: string]: JsonValue | undefined;
}

/** One journey event, described independently of the payload version. */
export interface WebhookEvent {
  channel: WebhookChannel;
  /** The tracked activity; required for message channels, absent for custom_activity. */
  event?: MessageEvent;
  /** The message id (2.0 only); custom_activity always sends "-1". */
  msgid?: string;
  journeyName: string;
  /** The journey that sends it (not rendered): its report counts the event's deliveries. */
  journeyId?: string;
  /** When the event happened (epoch ms); rendered as `ts` and (2.0) `timestamp` in the panel's zone. */
  occurredAt: number;
  /**
   * Unique id of the event (`event_params.guid`). Handing the same guid to a webhook twice
   * within the dedupe window queues it once, so a repeated hand-over is harmless; a random
   * one is generated when absent.
   */
  guid?: string;
  /** custom_params: parameters chosen in the journey ({} when none). */
  customParams?: Record<string, JsonValue>;
  /** att_params: the contact attributes selected for the webhook. */
  attributes?: Record<string, JsonValue>;
  /** udt_params (2.0 only): user-defined attributes. */
  userAttributes?: Record<string, string>;
  /** event_params members of the channel (foreignkey, ip_addr, useragent, activity_name, ...). */
  details?: EventDetails;
  /** The clicked link (click events); 1.0 sends it as `event_params.linkid`. */
  linkId?: number;
  /** payload_params (custom_activity only), as sent: for a journey's event, payloadParamsOf(its params). */
  payload?: Record<string, JsonValue>;
}

export interface RenderContext {
  version: PayloadVersion;
  /** The webhook's label (`webhook_name`). */
  webhookName: string;
  /** The panel's time zone, in which `ts` and `timestamp` are written. */
  timeZone: string;
}

/**
 * payload_params of a custom activity (spec 2.8): `{"items":[params]}`, the event's parameters
 * whole (array parameters included). The one place the event's `params` (the request's
 * `activity_params`, domain/events.ts) take their wire name.
 */
export function payloadParamsOf(params: Readonly<Record<string, unknown>>): Record<string, JsonValue> {
  return { items: [params as Record<string, JsonValue>] };
}

/** Members the builder owns; a caller's `details` cannot set them. */
export const RESERVED_EVENT_PARAMS = ["ts", "timestamp", "guid", "linkid"] as const;

/** Why the description is not a valid event, or null. */
export function webhookEventProblem(event: WebhookEvent): { field: string; message: string } | null {
  if (!WEBHOOK_CHANNELS.includes(event.channel)) return { field: "channel", message: `must be one of ${WEBHOOK_CHANNELS.join(", ")}` };
  if (event.channel === "custom_activity") {
    if (event.event !== undefined) return { field: "event", message: "must be absent for custom_activity" };
  } else {
    const allowed = CHANNEL_EVENTS[event.channel];
    if (!event.event || !allowed.includes(event.event)) return { field: "event", message: `must be one of ${allowed.join(", ")} for ${event.channel}` };
    if (event.payload !== undefined) return { field: "payload_params", message: "is only sent with custom_activity events" };
  }
  if (!event.journeyName.trim()) return { field: "journey_name", message: "must not be empty" };
  if (!Number.isFinite(event.occurredAt)) return { field: "occurred_at", message: "must be a time" };
  for (const member of RESERVED_EVENT_PARAMS) {
    if (event.details && member in event.details) return { field: `event_params.${member}`, message: "is written by the service" };
  }
  return null;
}

// Events handed over together usually share their second; formatting a time in a zone is the
// costliest step of building an event, so the last one is remembered.
let lastStamp: { second: number; timeZone: string; ts: number; timestamp: string } | null = null;

function stamps(epochMs: number, timeZone: string): { ts: number; timestamp: string } {
  const second = Math.floor(epochMs / 1000);
  if (lastStamp?.second !== second || lastStamp.timeZone !== timeZone) {
    lastStamp = { second, timeZone, ts: Number(formatCts(epochMs, timeZone)), timestamp: formatLocalIso(epochMs, timeZone) };
  }
  return lastStamp;
}

/** The event as the object of `version` (spec 2.8 and 9); `guid` must already be set. */
export function buildEventObject(event: WebhookEvent & { guid: string }, context: RenderContext): Record<string, JsonValue> {
  const v2 = context.version === "2.0";
  const custom = event.channel === "custom_activity";
  const object: Record<string, JsonValue> = { channel: event.channel };
  if (!custom) object.event = !v2 && event.event === "delivered" && (event.channel === "bpn" || event.channel === "apn") ? "view" : event.event!;
  object.webhook_name = context.webhookName;
  if (v2) object.msgid = custom ? "-1" : (event.msgid ?? "");
  object.journey_name = event.journeyName;
  object.custom_params = { ...(event.customParams ?? {}) };
  object.att_params = { ...(event.attributes ?? {}) };
  if (v2) object.udt_params = { ...(event.userAttributes ?? {}) };

  const params: Record<string, JsonValue> = {};
  for (const [name, value] of Object.entries(event.details ?? {})) {
    if (value !== undefined) params[name] = value;
  }
  const { ts, timestamp } = stamps(event.occurredAt, context.timeZone);
  if (v2) params.timestamp = timestamp;
  params.ts = ts;
  params.guid = event.guid;
  if (!v2 && event.event === "click") params.linkid = event.linkId ?? -1;
  object.event_params = params;

  if (custom && event.payload !== undefined) object.payload_params = event.payload;
  return object;
}

/** A realistic sample batch for the test action: one event of each kind a journey sends. */
export function sampleEvents(now: number, primaryKey: string): Array<WebhookEvent & { guid: string }> {
  const email = "jane.doe@example.com";
  const foreignkey = primaryKey === "MOBILE" ? "919800000000" : email;
  const attributes = { FIRSTNAME: "Jane", LASTNAME: "Doe", EMAIL: email, MOBILE: "919800000000", CITY: "Pune", STATE: "Maharashtra" };
  const journeyName = "Webhook test";
  return [
    {
      channel: "email",
      event: "open",
      msgid: "test-email-1",
      journeyName,
      occurredAt: now,
      guid: crypto.randomUUID(),
      customParams: { Action: "test" },
      attributes,
      details: {
        foreignkey,
        email,
        subject: "Your weekly picks",
        fromfield: "Shop <shop@example.com>",
        camp_name: "Weekly picks",
        tags: "test",
        ip_addr: "203.0.113.7",
        useragent: "Mozilla/5.0",
      },
    },
    {
      channel: "sms",
      event: "click",
      msgid: "test-sms-1",
      journeyName,
      occurredAt: now,
      guid: crypto.randomUUID(),
      customParams: { Action: "test" },
      attributes,
      details: { foreignkey, mobile: "919800000000", ip_addr: "203.0.113.7", user_agent: "Mozilla/5.0" },
      linkId: -1,
    },
    {
      channel: "custom_activity",
      journeyName,
      occurredAt: now,
      guid: crypto.randomUUID(),
      attributes,
      // As a journey's live event is built (webhook-event.ts): a numeric activity id, the params under their own names and types.
      details: { activity_name: "add_to_cart", activity_id: 1, activity_source: "web", identity: foreignkey, foreignkey },
      payload: payloadParamsOf({ name: "Blue shirt", prid: "SKU-1", price: 499, prqt: 1 }),
    },
  ];
}

/**
 * Reads an event object as an operator writes it for the admin `events` route (the spec 2.8
 * shape, either version) into a description. `event_params.ts` (YYMMDDhhmmss in the panel's
 * zone) sets the time, else `now`; `event_params.guid` and `linkid` are kept; `timestamp` and
 * `webhook_name` are written by the service; the 1.0 name `view` means `delivered`.
 */
export function describeEventObject(
  object: {
    channel: WebhookChannel;
    event?: string;
    msgid?: string;
    journey_name: string;
    custom_params?: Record<string, unknown>;
    att_params?: Record<string, unknown>;
    udt_params?: Record<string, string>;
    event_params?: Record<string, unknown>;
    payload_params?: Record<string, unknown>;
  },
  timeZone: string,
  now: number,
): { ok: true; event: WebhookEvent } | { ok: false; field: string; message: string } {
  const { ts, timestamp: _derived, guid, linkid, ...details } = object.event_params ?? {};
  const occurredAt = resolveEventTime(ts, ["cts"], timeZone, now);
  if (!occurredAt.ok) return { ok: false, field: "event_params.ts", message: occurredAt.reason };
  if (guid !== undefined && (typeof guid !== "string" || !guid.trim() || guid.length > 200)) {
    return { ok: false, field: "event_params.guid", message: "must be a non-empty string of at most 200 characters" };
  }
  if (linkid !== undefined && !Number.isInteger(linkid)) return { ok: false, field: "event_params.linkid", message: "must be an integer" };
  const bpnOrApn = object.channel === "bpn" || object.channel === "apn";
  const event: WebhookEvent = {
    channel: object.channel,
    event: (bpnOrApn && object.event === "view" ? "delivered" : object.event) as MessageEvent | undefined,
    msgid: object.msgid,
    journeyName: object.journey_name,
    occurredAt: occurredAt.value,
    guid: guid as string | undefined,
    customParams: object.custom_params as Record<string, JsonValue> | undefined,
    attributes: object.att_params as Record<string, JsonValue> | undefined,
    userAttributes: object.udt_params,
    details: details as EventDetails,
    linkId: linkid as number | undefined,
    payload: object.payload_params as Record<string, JsonValue> | undefined,
  };
  const problem = webhookEventProblem(event);
  return problem ? { ok: false, ...problem } : { ok: true, event };
}
