import { z } from "../lib/z";
import { EMAIL_ATTRIBUTE } from "./email";
import { phoneDigits } from "./sms";

/**
 * Why email to an address is stopped in a panel (email_suppressions.reason), mildest first: the
 * recipient unsubscribed; the recipient complained (marked the mail as spam, as the provider
 * reported); the address hard-bounced. A stricter reason replaces a milder one
 * (store/suppressions.ts), so a complaint after an unsubscribe holds as a complaint.
 */
export const SUPPRESSION_REASONS = ["unsubscribe", "complaint", "hard_bounce"] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** Of two stops of one address (kept on two shards of a partitioned panel), the one that holds: the stricter. */
export function stricterStop<T extends { reason: SuppressionReason }>(a: T | null | undefined, b: T | null | undefined): T | null {
  if (!a || !b) return a ?? b ?? null;
  return SUPPRESSION_REASONS.indexOf(b.reason) > SUPPRESSION_REASONS.indexOf(a.reason) ? b : a;
}

/** What a send skipped for a suppression records as the message's error. */
export const SUPPRESSION_SKIPS: Record<SuppressionReason, string> = { unsubscribe: "unsubscribed", complaint: "complaint (marked as spam)", hard_bounce: "hard bounce" };

/**
 * Who changes a contact's preferences: the recipient, from the unsubscribe or preference page
 * their own message links to; or an operator (admin API, panel).
 */
export type PreferenceActor = "recipient" | "operator";

/**
 * The email suppressions each may lift. Mailbox providers' bulk-sender rules require honouring a
 * complaint, so only the recipient takes it back (they asked); a hard bounce no one lifts.
 */
export const LIFTABLE_SUPPRESSIONS: Record<PreferenceActor, readonly SuppressionReason[]> = { recipient: ["unsubscribe", "complaint"], operator: ["unsubscribe"] };

/**
 * A contact's subscription per channel (issue 19): what the hosted preference page and the
 * admin API show and change. Email and SMS are their suppressions (an unsubscribe or complaint,
 * a STOP); push is its own opt-out. States a recipient cannot undo (a hard bounce, a number the
 * provider or an operator stopped) are shown but not changed here; a complaint only the
 * recipient may undo.
 */
export const PREFERENCE_CHANNELS = ["email", "sms", "push"] as const;
export type PreferenceChannel = (typeof PREFERENCE_CHANNELS)[number];

/**
 * subscribed/unsubscribed: the contact's choice; complained: the contact marked email as spam
 * (only they may subscribe again); bounced/stopped: held by the service; unreachable: no address
 * or number.
 */
export const CHANNEL_STATES = ["subscribed", "unsubscribed", "complained", "bounced", "stopped", "unreachable"] as const;
export type ChannelState = (typeof CHANNEL_STATES)[number];
export type ChannelPreferences = Record<PreferenceChannel, ChannelState>;

const choice = z.enum(["subscribed", "unsubscribed"], { error: "must be subscribed or unsubscribed" }).optional();

/** PUT /panels/{panel}/contacts/{key}/preferences: the channels to change, at least one. */
export const preferencesBody = z
  .strictObject({ email: choice, sms: choice, push: choice })
  .refine((body) => PREFERENCE_CHANNELS.some((channel) => body[channel] !== undefined), { error: "name at least one of email, sms, push" });
export type PreferencesChange = z.output<typeof preferencesBody>;

/** The preference page of a message: its unsubscribe link's token under /t/p/. */
export function preferencesUrlOf(unsubscribeUrl: string): string {
  return unsubscribeUrl.replace("/t/u/", "/t/p/");
}

/**
 * Where a contact's email and SMS go: its EMAIL as suppressions key it (trimmed, lower case) and
 * its MOBILE as digits with the country code; null where it has none (or no valid number).
 */
export function contactReach(attributes: Readonly<Record<string, unknown>>): { address: string | null; phone: string | null } {
  const email = attributes[EMAIL_ATTRIBUTE];
  const mobile = attributes.MOBILE;
  return {
    address: typeof email === "string" && email.trim() ? email.trim().toLowerCase() : null,
    phone: phoneDigits(typeof mobile === "string" || typeof mobile === "number" ? String(mobile) : null),
  };
}
