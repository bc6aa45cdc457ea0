import { z } from "../lib/z";
import { EMAIL_ATTRIBUTE } from "./email";
import { phoneDigits } from "./sms";

/**
 * A contact's subscription per channel (issue 19): what the hosted preference page and the
 * admin API show and change. Email and SMS are their suppressions (an unsubscribe, a STOP);
 * push is its own opt-out. States a recipient cannot undo (a hard bounce, a number the provider
 * or an operator stopped) are shown but not changed here.
 */
export const PREFERENCE_CHANNELS = ["email", "sms", "push"] as const;
export type PreferenceChannel = (typeof PREFERENCE_CHANNELS)[number];

/** subscribed/unsubscribed: the contact's choice; bounced/stopped: held by the service; unreachable: no address or number. */
export type ChannelState = "subscribed" | "unsubscribed" | "bounced" | "stopped" | "unreachable";
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
