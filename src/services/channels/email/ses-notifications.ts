import { parseCallerJson } from "../../../lib/json";
import type { ProviderBounce } from "./provider";

/**
 * Reads what Amazon SNS posts for SES (a subscription confirmation, or a notification whose
 * Message is the SES event JSON). Only bounces matter here; deliveries and complaints are
 * acknowledged and ignored.
 */
export type SesNotification =
  | { kind: "subscribe"; subscribeUrl: string }
  | { kind: "events"; bounces: ProviderBounce[] }
  | { kind: "invalid"; reason: string };

/** SNS's own hosts; a SubscribeURL anywhere else is refused. */
const SNS_HOST = /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/;

/** Parses JSON text that must hold an object; null for anything else (`null`, arrays, scalars). */
function parseObject(text: string): Record<string, any> | null {
  const parsed = parseCallerJson(text);
  if (!parsed.ok) return null;
  const value = parsed.value;
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, any>) : null;
}

export function parseSesNotification(text: string): SesNotification {
  const envelope = parseObject(text);
  if (!envelope) return { kind: "invalid", reason: "the body is not a JSON object" };
  if (envelope.Type === "SubscriptionConfirmation") {
    const url = typeof envelope.SubscribeURL === "string" ? envelope.SubscribeURL : "";
    try {
      const parsed = new URL(url);
      if (parsed.protocol === "https:" && SNS_HOST.test(parsed.hostname)) return { kind: "subscribe", subscribeUrl: url };
    } catch {
      // refused below
    }
    return { kind: "invalid", reason: "SubscribeURL is not an Amazon SNS URL" };
  }
  if (envelope.Type !== "Notification" || typeof envelope.Message !== "string") return { kind: "invalid", reason: "not an SNS notification" };
  const event = parseObject(envelope.Message);
  if (!event) return { kind: "invalid", reason: "the SNS Message is not a JSON object" };
  const type = event.notificationType ?? event.eventType;
  if (type !== "Bounce") return { kind: "events", bounces: [] };
  const messageId = event.mail?.messageId;
  if (typeof messageId !== "string") return { kind: "invalid", reason: "the bounce has no mail.messageId" };
  const bounce = event.bounce ?? {};
  const recipients: unknown[] = Array.isArray(bounce.bouncedRecipients) ? bounce.bouncedRecipients : [];
  return {
    kind: "events",
    bounces: [
      {
        providerMessageId: messageId,
        permanent: bounce.bounceType === "Permanent",
        addresses: recipients
          .map((r) => (typeof r === "object" && r !== null ? (r as { emailAddress?: unknown }).emailAddress : undefined))
          .filter((a): a is string => typeof a === "string")
          .map((a) => a.trim().toLowerCase()),
        detail: { bounce_type: bounce.bounceType ?? null, bounce_subtype: bounce.bounceSubType ?? null, provider: "ses" },
      },
    ],
  };
}
