import { config, type ConfigSource } from "../../../lib/config";
import { parseCallerJson } from "../../../lib/json";
import type { ProviderBounce, ProviderComplaint } from "./provider";
import { isSnsUrl, verifySnsMessage } from "./sns-messages";

/**
 * Reads what Amazon SNS posts for SES (a subscription confirmation, or a notification whose
 * Message is the SES event JSON). Bounces and complaints matter here; deliveries and the rest
 * are acknowledged and ignored. Nothing but the message's type is read before its SNS
 * signature checks out: `refused` when it does not, `unverifiable` when SNS's certificate could
 * not be had (sns-messages.ts).
 */
export type SesNotification =
  | { kind: "subscribe"; subscribeUrl: string }
  | { kind: "events"; bounces: ProviderBounce[]; complaints: ProviderComplaint[] }
  | { kind: "invalid"; reason: string }
  | { kind: "refused"; reason: string }
  | { kind: "unverifiable"; reason: string };

/** The value if it is an object; null for anything else (`null`, arrays, scalars). */
function asObject(value: unknown): Record<string, any> | null {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, any>) : null;
}

/** Parses JSON text that must hold an object; null for anything else. */
function parseObject(text: string): Record<string, any> | null {
  const parsed = parseCallerJson(text);
  return parsed.ok ? asObject(parsed.value) : null;
}

export async function readSesNotification(env: ConfigSource, text: string): Promise<SesNotification> {
  const envelope = parseObject(text);
  if (!envelope) return { kind: "invalid", reason: "the body is not a JSON object" };
  if (envelope.Type !== "SubscriptionConfirmation" && envelope.Type !== "Notification") return { kind: "invalid", reason: "not an SNS notification" };
  const { snsOrigin, snsTopics } = config(env).ses;
  // Before the signature: a topic not the deployment's is refused without fetching a certificate.
  if (snsTopics && !snsTopics.includes(envelope.TopicArn)) return { kind: "refused", reason: `TopicArn ${JSON.stringify(envelope.TopicArn ?? null)} is not one of SES_SNS_TOPICS` };
  const verdict = await verifySnsMessage(envelope, snsOrigin);
  if (!verdict.ok) return { kind: verdict.kind, reason: verdict.reason };
  return sesNotificationOf(envelope, snsOrigin);
}

/** What a message SNS signed says; `snsOrigin` as configured (lib/config.ts). */
export function sesNotificationOf(envelope: Record<string, any>, snsOrigin: string | undefined): SesNotification {
  if (envelope.Type === "SubscriptionConfirmation") {
    const url = typeof envelope.SubscribeURL === "string" ? envelope.SubscribeURL : "";
    // SNS signed it, but it is still the one URL the service fetches on a message's word.
    if (isSnsUrl(url, snsOrigin)) return { kind: "subscribe", subscribeUrl: url };
    return { kind: "invalid", reason: "SubscribeURL is not an Amazon SNS URL" };
  }
  if (envelope.Type !== "Notification" || typeof envelope.Message !== "string") return { kind: "invalid", reason: "not an SNS notification" };
  const event = parseObject(envelope.Message);
  if (!event) return { kind: "invalid", reason: "the SNS Message is not a JSON object" };
  // notificationType from an identity's notification topic, eventType from a configuration set's event destination.
  const type = event.notificationType ?? event.eventType;
  if (type !== "Bounce" && type !== "Complaint") return { kind: "events", bounces: [], complaints: [] };
  const messageId = event.mail?.messageId;
  if (typeof messageId !== "string") return { kind: "invalid", reason: `the ${type.toLowerCase()} has no mail.messageId` };
  if (type === "Complaint") {
    const complaint = asObject(event.complaint) ?? {};
    const detail = { complaint_feedback_type: complaint.complaintFeedbackType ?? null, complaint_subtype: complaint.complaintSubType ?? null, provider: "ses" };
    return { kind: "events", bounces: [], complaints: [{ providerMessageId: messageId, addresses: addressesOf(complaint.complainedRecipients), detail }] };
  }
  const bounce = asObject(event.bounce) ?? {};
  return {
    kind: "events",
    bounces: [
      {
        providerMessageId: messageId,
        permanent: bounce.bounceType === "Permanent",
        addresses: addressesOf(bounce.bouncedRecipients),
        detail: { bounce_type: bounce.bounceType ?? null, bounce_subtype: bounce.bounceSubType ?? null, provider: "ses" },
      },
    ],
    complaints: [],
  };
}

/** The `emailAddress` of each recipient SES lists (bouncedRecipients, complainedRecipients), lower-cased. */
function addressesOf(recipients: unknown): string[] {
  return (Array.isArray(recipients) ? recipients : [])
    .map((r) => asObject(r)?.emailAddress)
    .filter((a): a is string => typeof a === "string")
    .map((a) => a.trim().toLowerCase());
}
