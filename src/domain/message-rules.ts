import { z } from "../lib/z";
import type { AttributeValue } from "./attributes";
import { DAY_MS, instantOf, isValidTimeZone, wallClockAt } from "./time";

/**
 * A panel's rules that protect contacts from too many messages (issue 46): frequency caps per
 * channel (at most `max` messages per `days` days) and quiet hours per channel (no message
 * from `from` to `to`, on the contact's clock). Pure: the engines read the panel's rules and a
 * contact's recent sends and ask these functions what to do.
 */

/** The channels rules speak of; apn and bpn (journey push) are both `push`. */
export const RULE_CHANNELS = ["email", "sms", "push"] as const;
export type RuleChannel = (typeof RULE_CHANNELS)[number];

export function ruleChannelOf(channel: "email" | "sms" | "apn" | "bpn"): RuleChannel {
  return channel === "apn" || channel === "bpn" ? "push" : channel;
}

const channel = z.enum(RULE_CHANNELS, { error: "must be email, sms or push" });
const clock = z
  .string({ error: "must be a time of day, HH:MM" })
  .max(5, { abort: true, error: "must be a time of day, HH:MM (00:00 to 23:59)" })
  .regex(/^([01]\d|2[0-3]):[0-5]\d$/, { error: "must be a time of day, HH:MM (00:00 to 23:59)" })
  .meta({ example: "21:00" });

/** The longest window a cap may count over: a counted send older than this counts for no cap. */
export const MAX_CAP_DAYS = 90;

const capSchema = z
  .object({
    channel,
    max: z.int({ error: "must be a whole number of messages" }).min(1, { error: "must be at least 1" }).max(1000, { error: "must be at most 1000" }),
    days: z.int({ error: "must be a whole number of days" }).min(1, { error: "must be at least 1 day" }).max(MAX_CAP_DAYS, { error: `must be at most ${MAX_CAP_DAYS} days` }),
  })
  .strict();

const quietSchema = z.object({ channel, from: clock, to: clock }).strict();

/** PATCH /panels/{panel} `message_rules`; what the panel keeps. */
export const messageRulesSchema = z
  .object({
    caps: z.array(capSchema).max(9, { error: "at most 9 caps" }).default([]).meta({ description: "At most `max` marketing messages of a channel to a contact per `days` days" }),
    quiet_hours: z
      .array(quietSchema)
      .max(3, { error: "at most one window per channel" })
      .default([])
      .meta({ description: "No message of the channel from `from` to `to` on the contact's clock (its TIMEZONE attribute, else the panel's zone); sends wait for the window's end" }),
  })
  .strict()
  .superRefine((rules, ctx) => {
    const caps = new Set<string>();
    rules.caps.forEach((cap, i) => {
      const key = `${cap.channel}/${cap.days}`;
      if (caps.has(key)) ctx.addIssue({ code: "custom", path: ["caps", i, "days"], message: `a cap of ${cap.channel} per ${cap.days} day(s) is already set` });
      caps.add(key);
    });
    const quiet = new Set<string>();
    rules.quiet_hours.forEach((q, i) => {
      if (quiet.has(q.channel)) ctx.addIssue({ code: "custom", path: ["quiet_hours", i, "channel"], message: `${q.channel} already has quiet hours` });
      quiet.add(q.channel);
      if (q.from === q.to) ctx.addIssue({ code: "custom", path: ["quiet_hours", i, "to"], message: "must differ from from" });
    });
  });

export type MessageRules = z.output<typeof messageRulesSchema>;
export type FrequencyCap = MessageRules["caps"][number];
export const NO_RULES: MessageRules = { caps: [], quiet_hours: [] };

/** The rules as stored (JSON); nothing usable reads as no rules. */
export function readMessageRules(json: string | null | undefined): MessageRules {
  if (!json) return NO_RULES;
  try {
    const parsed = messageRulesSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : NO_RULES;
  } catch {
    return NO_RULES;
  }
}

export function capsOf(rules: MessageRules, ch: RuleChannel): FrequencyCap[] {
  return rules.caps.filter((c) => c.channel === ch);
}

/** The longest window of these caps, ms (0: none). */
export function longestWindow(caps: readonly FrequencyCap[]): number {
  return Math.max(0, ...caps.map((c) => c.days * DAY_MS));
}

/**
 * When the caps allow one more message, given the times of the contact's counted sends of the
 * channel: null when they allow it now. A send at `at` counts while `at > now - window`, so it
 * stops counting at `at + window`.
 */
export function capAllowsAt(caps: readonly FrequencyCap[], sentAt: readonly number[], now: number): number | null {
  const sorted = [...sentAt].sort((a, b) => a - b);
  let at: number | null = null;
  for (const cap of caps) {
    const window = cap.days * DAY_MS;
    const inWindow = sorted.filter((t) => t > now - window);
    if (inWindow.length < cap.max) continue;
    const frees = inWindow[inWindow.length - cap.max]! + window;
    at = Math.max(at ?? 0, frees);
  }
  return at;
}

/** How a cap reads in a message log: `cap: at most 3 email per 7 days`. */
export function describeCap(cap: FrequencyCap): string {
  return `cap: at most ${cap.max} ${cap.channel} per ${cap.days === 1 ? "day" : `${cap.days} days`}`;
}

/** The contact's time zone: a valid IANA name in its TIMEZONE attribute, else the panel's. */
export function contactTimeZone(attributes: Readonly<Record<string, AttributeValue>>, panelZone: string): string {
  const value = attributes.TIMEZONE;
  return typeof value === "string" && value.trim() !== "" && isValidTimeZone(value.trim()) ? value.trim() : panelZone;
}

const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/**
 * The next instant, at or after `now`, at which `timeZone`'s clock shows `hhmm` (a time skipped
 * by a daylight-saving change reads as instantOf does).
 */
export function nextLocalTime(hhmm: string, now: number, timeZone: string): number {
  const today = wallClockAt(now, timeZone);
  const minutes = minutesOf(hhmm);
  for (let days = 0; days < 3; days++) {
    // Date.UTC rolls a day past the month's end over; only the calendar date is read from it.
    const date = new Date(Date.UTC(today.year, today.month - 1, today.day + days));
    const at = instantOf(
      { year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate(), hour: Math.floor(minutes / 60), minute: minutes % 60, second: 0 },
      timeZone,
    );
    if (at >= now) return at;
  }
  throw new Error(`no ${hhmm} in ${timeZone} within two days of ${new Date(now).toISOString()}`);
}

/**
 * Send at local time: `hhmm` on the calendar date `day` (the campaign's send date in the
 * panel's zone) on `timeZone`'s clock. Zones run from UTC+14 to UTC-12, so one date's `hhmm`
 * spans 26 hours of instants.
 */
export function localTimeOnDay(hhmm: string, day: { year: number; month: number; day: number }, timeZone: string): number {
  const minutes = minutesOf(hhmm);
  return instantOf({ year: day.year, month: day.month, day: day.day, hour: Math.floor(minutes / 60), minute: minutes % 60, second: 0 }, timeZone);
}

/**
 * When the channel's quiet hours end, if `now` falls inside them on `timeZone`'s clock; null
 * otherwise. A window may run over midnight (21:00 to 09:00).
 */
export function quietUntil(rules: MessageRules, ch: RuleChannel, now: number, timeZone: string): number | null {
  const quiet = rules.quiet_hours.find((q) => q.channel === ch);
  if (!quiet) return null;
  const clockNow = wallClockAt(now, timeZone);
  const minute = clockNow.hour * 60 + clockNow.minute;
  const from = minutesOf(quiet.from);
  const to = minutesOf(quiet.to);
  const inside = from < to ? minute >= from && minute < to : minute >= from || minute < to;
  return inside ? nextLocalTime(quiet.to, now, timeZone) : null;
}

/** What the caps answer for one more message: allowed, or the cap that is full and when the caps allow the next one. */
export type CapAnswer = { allowed: true } | { allowed: false; cap: FrequencyCap; allowsAt: number };

/** The caps' answer for one more message at `now`, given the times of the contact's counted sends of the channel. */
export function capAnswerOf(caps: readonly FrequencyCap[], sentAt: readonly number[], now: number): CapAnswer {
  const allowsAt = capAllowsAt(caps, sentAt, now);
  if (allowsAt === null) return { allowed: true };
  // The fullest cap names the refusal: the one that frees last.
  const cap = caps.find((c) => capAllowsAt([c], sentAt, now) === allowsAt) ?? caps[0]!;
  return { allowed: false, cap, allowsAt };
}

/** A journey message step as the rules read it. */
export interface RuledMessage {
  type: "email" | "sms" | "apn" | "bpn";
  exempt?: boolean;
  when_capped?: "skip" | "wait";
}

/** Whether a journey message goes now: it goes, is held until `holdUntil`, or is skipped for a full cap. */
export type MessageGate = { go: true } | { go: false; holdUntil: number } | { go: false; capped: FrequencyCap };

/**
 * The rules' decision for a journey message before its caps are counted: exempt steps go; in the
 * channel's quiet hours (on `timeZone`'s clock) it is held to their end; otherwise the caps of its
 * channel are to be asked (none: it goes). The engine counts against them in one conditional
 * insert; the simulation against its own sends. Then `gateOfCapAnswer`.
 */
export function gateBeforeCaps(step: RuledMessage, rules: MessageRules, timeZone: string, now: number): MessageGate | { caps: FrequencyCap[]; channel: RuleChannel } {
  if (step.exempt) return { go: true };
  const channel = ruleChannelOf(step.type);
  const quietEnds = quietUntil(rules, channel, now, timeZone);
  if (quietEnds !== null) return { go: false, holdUntil: quietEnds };
  const caps = capsOf(rules, channel);
  return caps.length === 0 ? { go: true } : { caps, channel };
}

/** A capped message is skipped, or with `when_capped: wait` held until the caps allow it. */
export function gateOfCapAnswer(step: RuledMessage, answer: CapAnswer): MessageGate {
  if (answer.allowed) return { go: true };
  return step.when_capped === "wait" ? { go: false, holdUntil: answer.allowsAt } : { go: false, capped: answer.cap };
}
