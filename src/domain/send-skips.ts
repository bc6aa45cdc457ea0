import type { AttributeValue } from "./attributes";
import { isEmailAddress } from "./email";
import type { MessageChannel } from "./journey";
import { SUPPRESSION_SKIPS, type SuppressionReason } from "./preferences";
import { phoneDigits } from "./sms";

/**
 * Why a journey message is recorded `skipped` at send time, past the panel's rules: the contact
 * has no address on the channel, or the address is stopped. The live senders (services/journeys
 * messages.ts, sms.ts, push.ts) record these texts; the simulation (journey-simulation.ts) asks
 * `sendSkipOf` with what it read of the contact, so both say the same.
 */
export const NO_EMAIL = "the contact has no valid EMAIL";
export const NO_MOBILE = "the contact has no valid MOBILE";
export const PHONE_STOPPED = "the number is suppressed (it replied STOP or was stopped)";
export const PUSH_TURNED_OFF = "the contact turned push notifications off";
/** A queued SMS or push whose journey was stopped before its send: never sent (as a cancelled campaign's queued recipients). */
export const JOURNEY_STOPPED_SKIP = "not sent: the journey was stopped";
/** A queued SMS or push whose contact left the journey before its send (it reached the goal): a goal stops further messages. */
export const JOURNEY_LEFT_SKIP = "not sent: the contact left the journey (it reached the goal)";
/**
 * A queued SMS or push of an instance its last step completed, whose contact reached the journey's
 * goal before its send (a pause held it, or its nudge had not come yet): a goal stops the
 * messages not sent yet.
 */
export const JOURNEY_GOAL_SKIP = "not sent: the contact reached the journey's goal";
export const emailSuppressed = (reason: SuppressionReason) => `the address is suppressed (${SUPPRESSION_SKIPS[reason]})`;
export const noPushDevice = (channel: "apn" | "bpn") => (channel === "bpn" ? "the contact has no web push subscription" : "the contact has no app install registered (FCM token)");

/** The address a journey message goes to, as the engine records it (its `recipient`): the channel's attribute, else the contact's key. */
export function messageRecipient(channel: MessageChannel, attributes: Readonly<Record<string, AttributeValue>>, key: string): string {
  const address = (name: string) => (typeof attributes[name] === "string" || typeof attributes[name] === "number" ? String(attributes[name]) : null);
  return (channel === "email" ? address("EMAIL") : channel === "sms" ? address("MOBILE") : address("PUSH_TOKEN")) ?? key;
}

/** The PUSH_TOKEN an app push goes to beside the contact's FCM installs: a token that is none of them (null when absent or among them). */
export function tokenBeyondInstalls(installs: readonly { address: string }[], token: unknown): string | null {
  return typeof token === "string" && token && !installs.some((device) => device.address === token) ? token : null;
}

/** The address an email goes to, as suppressions key it. */
export const emailAddressOf = (recipient: string) => recipient.trim().toLowerCase();

/** What the panel sends through (absent: the outbox, which records the message without an address check). */
export interface PanelSenders {
  sms: boolean;
  webPush: boolean;
  fcm: boolean;
}

/** A panel that sends SMS and push through none (its outbox records them). */
export const NO_SENDERS: PanelSenders = { sms: false, webPush: false, fcm: false };

/** What a send reads of its contact: the stop of its address on the channel, and its push devices. */
export interface ContactReach {
  emailSuppression?: SuppressionReason | null;
  phoneStopped?: boolean;
  pushTurnedOff?: boolean;
  /** Web push subscriptions; FCM app installs (the PUSH_TOKEN attribute counted in). */
  webDevices?: number;
  appDevices?: number;
}

export type SendSkip = { kind: "address" | "suppressed"; error: string };

/**
 * Whether the live senders would skip this message, and why: email without a valid address or
 * to a suppressed one; SMS to a stopped number, or with a provider and no valid number (the
 * outbox records it without); push the contact turned off, or with the channel set up and no
 * device to send to.
 */
export function sendSkipOf(channel: MessageChannel, recipient: string, reach: ContactReach, senders: PanelSenders): SendSkip | null {
  switch (channel) {
    case "email":
      if (!isEmailAddress(emailAddressOf(recipient))) return { kind: "address", error: NO_EMAIL };
      return reach.emailSuppression ? { kind: "suppressed", error: emailSuppressed(reach.emailSuppression) } : null;
    case "sms": {
      const phone = phoneDigits(recipient);
      if (phone && reach.phoneStopped) return { kind: "suppressed", error: PHONE_STOPPED };
      return senders.sms && !phone ? { kind: "address", error: NO_MOBILE } : null;
    }
    case "apn":
    case "bpn": {
      if (reach.pushTurnedOff) return { kind: "suppressed", error: PUSH_TURNED_OFF };
      const setUp = channel === "bpn" ? senders.webPush : senders.fcm;
      const devices = channel === "bpn" ? reach.webDevices : reach.appDevices;
      return setUp && !devices ? { kind: "address", error: noPushDevice(channel) } : null;
    }
  }
}
