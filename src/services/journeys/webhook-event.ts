import type { WebhookStep } from "../../domain/journey";
import type { StoredEvent } from "../../store/events";
import type { KeyedContact } from "../../store/contacts";
import type { JourneyMessage } from "../../store/journeys/messages";
import { payloadParamsOf, type EventDetails, type JsonValue, type MessageEvent, type WebhookEvent } from "../../domain/webhooks/payload";

/**
 * The webhook event a journey's webhook step sends (spec 2.8, CONTRACT 6), built from the
 * real event the branch carries: the awaited message event, or the custom activity that
 * triggered the journey (also what a timeout reports: the action that was not followed).
 * Without any event (list and segment triggers) it is a custom_activity named after the
 * trigger. The guid is `<instance>:<step>`, so handing it over twice queues it once.
 */
export interface WebhookEventInput {
  journeyName: string;
  /** Counted in the journey report's webhook deliveries (not rendered). */
  journeyId?: string;
  triggerType: string;
  instanceId: string;
  step: WebhookStep;
  contact: KeyedContact;
  event: StoredEvent | null;
  message: JourneyMessage | null;
  now: number;
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : typeof value === "number" ? String(value) : undefined;
}

function selectedAttributes(contact: KeyedContact, names: readonly string[]): Record<string, JsonValue> {
  const picked: Record<string, JsonValue> = {};
  for (const name of names) picked[name] = contact.attributes[name] ?? "";
  return picked;
}

/**
 * event_params of a message event: the channel's members, then (not a spec 2.8 member) the
 * clicked link of a click that carries it, as tracked email links always do.
 */
function messageDetails(input: WebhookEventInput, event: StoredEvent): EventDetails {
  const details = channelDetails(input, event);
  const url = event.name === "click" ? text(event.params.url) : undefined;
  if (url !== undefined) details.url = url;
  return details;
}

/** event_params members of a message channel, from the contact, the message and the event. */
function channelDetails(input: WebhookEventInput, event: StoredEvent): EventDetails {
  const { contact, message } = input;
  const params = event.params;
  const attrs = contact.attributes;
  const details: EventDetails = { foreignkey: contact.key };
  const ip = text(params.ip_addr);
  const agent = text(params.user_agent) ?? text(params.useragent);
  if (ip !== undefined) details.ip_addr = ip;
  if (event.channel === "email") {
    const content = message?.content ?? {};
    details.email = text(attrs.EMAIL) ?? message?.recipient ?? contact.key;
    details.subject = text(content.subject) ?? "";
    details.fromfield = text(content.sender_name) && text(content.sender_email) ? `${text(content.sender_name)} <${text(content.sender_email)}>` : (text(content.sender_email) ?? "");
    details.camp_name = input.journeyName;
    details.tags = "";
    if (agent !== undefined) details.useragent = agent;
    return details;
  }
  details.name = text(attrs.NAME) ?? text(attrs.FIRSTNAME) ?? null;
  if (agent !== undefined) details.user_agent = agent;
  if (event.channel === "sms") {
    details.mobile = text(attrs.MOBILE) ?? message?.recipient ?? "";
  } else {
    const token = text(params.token) ?? message?.recipient;
    details.token = token ? [token] : [];
    details.token_id = null;
  }
  return details;
}

export function journeyWebhookEvent(input: WebhookEventInput): WebhookEvent {
  const { step, contact, event } = input;
  const base = {
    journeyName: input.journeyName,
    ...(input.journeyId ? { journeyId: input.journeyId } : {}),
    guid: `${input.instanceId}:${step.id}`,
    customParams: { ...step.params },
    attributes: selectedAttributes(contact, step.attributes),
  };
  if (event && event.channel !== "custom_activity") {
    const linkid = event.params.linkid;
    return {
      ...base,
      channel: event.channel,
      event: event.name as MessageEvent,
      msgid: event.msgid ?? input.message?.msgid ?? "",
      occurredAt: event.occurredAt,
      details: messageDetails(input, event),
      ...(event.name === "click" && Number.isInteger(linkid) ? { linkId: linkid as number } : {}),
    };
  }
  if (event) {
    return {
      ...base,
      channel: "custom_activity",
      occurredAt: event.occurredAt,
      details: {
        activity_name: event.name,
        activity_id: event.activityId ?? -1,
        // Passed on as sent; an event stored without a source reports none (CONTRACT 10).
        ...(event.source !== null ? { activity_source: event.source } : {}),
        identity: contact.key,
        foreignkey: contact.key,
      },
      payload: payloadParamsOf(event.params),
    };
  }
  return {
    ...base,
    channel: "custom_activity",
    occurredAt: input.now,
    details: { activity_name: input.triggerType, activity_id: -1, activity_source: "journey", identity: contact.key, foreignkey: contact.key },
  };
}
