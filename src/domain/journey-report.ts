import { z } from "../lib/z";
import { isoDateMs } from "./segments";
import { DAY_MS } from "./time";

/** The journey report's period (GET /panels/{panel}/journeys/{journey}/report). */

export const DEFAULT_PERIOD_DAYS = 30;
export const MAX_PERIOD_DAYS = 366;

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const periodEnd = z
  .string({ error: "must be an ISO date (YYYY-MM-DD) or date-time (YYYY-MM-DDThh:mm:ssZ, UTC)" })
  .trim()
  .max(40)
  .refine((text) => Number.isFinite(isoDateMs(text)), { error: "must be an ISO date (YYYY-MM-DD) or date-time (YYYY-MM-DDThh:mm:ssZ, UTC)" });

/**
 * `from` and `to` as ISO dates or date-times (UTC); a date as `to` takes in that whole day.
 * Without `to` the period ends now; without `from` it starts 30 days before its end.
 */
export const journeyReportQuery = z
  .object({
    from: periodEnd.optional().meta({ description: "Start of the period (UTC): a date is its day's start. Default: 30 days before `to`" }),
    to: periodEnd.optional().meta({ description: "End of the period (UTC): a date takes in that whole day. Default: now" }),
  })
  .strict()
  .superRefine((q, ctx) => {
    if (q.from === undefined || q.to === undefined) return;
    const { from, to } = resolvePeriod(q, 0);
    if (to <= from) ctx.addIssue({ code: "custom", path: ["to"], message: "must be after from" });
    else if (to - from > MAX_PERIOD_DAYS * DAY_MS) ctx.addIssue({ code: "custom", path: ["to"], message: `must be at most ${MAX_PERIOD_DAYS} days after from` });
  });

export type JourneyReportQuery = z.output<typeof journeyReportQuery>;

/** The period in epoch ms, [from, to). A lone bound is checked against the span too (see periodProblem). */
export function resolvePeriod(q: JourneyReportQuery, now: number): { from: number; to: number } {
  const to = q.to === undefined ? now : isoDateMs(q.to) + (DATE_ONLY.test(q.to) ? DAY_MS : 0);
  const from = q.from === undefined ? to - DEFAULT_PERIOD_DAYS * DAY_MS : isoDateMs(q.from);
  return { from, to };
}

/** What is wrong with a period that only now (a bound left to default) can be judged; null when it is fine. */
export function periodProblem(period: { from: number; to: number }): { field: "from" | "to"; message: string } | null {
  if (period.to <= period.from) return { field: "from", message: "must be before to (default: now)" };
  if (period.to - period.from > MAX_PERIOD_DAYS * DAY_MS) return { field: "from", message: `must be at most ${MAX_PERIOD_DAYS} days before to (default: now)` };
  return null;
}

export const JOURNEY_CHANNELS = ["email", "sms", "apn", "bpn"] as const;
export type JourneyChannel = (typeof JOURNEY_CHANNELS)[number];

/** One step's funnel over the period (decision 0028 defines each figure). */
export interface JourneyStepFigures {
  /** The step's type in the journey's definition; null for a step the definition no longer has. */
  type: string | null;
  entered: number;
  /** Waiting at the step now, whatever the period. */
  waiting: number;
  passed: number;
  failed: number;
  /** Waits: of `passed`, those let go by the time limit rather than the event. */
  timed_out: number;
}

/** One channel's messages and what their recipients did, over the period. */
export interface JourneyChannelFigures {
  sent: number;
  failed: number;
  skipped: number;
  /** Messages reported delivered (email: sent and not bounced). */
  delivered: number;
  opens: number;
  /** Messages opened at least once. */
  opened: number;
  clicks: number;
  /** Messages clicked at least once. */
  clicked: number;
  /** Messages that bounced. */
  bounced: number;
}

/** Deliveries of this journey's webhook events in one hour, counted in events. */
export interface JourneyWebhookHour {
  /** The hour's start, ISO 8601 UTC. */
  hour: string;
  /** Events in a batch the receiver took (2xx). */
  delivered: number;
  /** Events in a failed attempt that gave up (the webhook was disabled; they wait for enable). */
  failed: number;
  /** Events in a failed attempt that is tried again. */
  retried: number;
}

export interface JourneyReport {
  journey_id: string;
  period: { from: string; to: string };
  entered: number;
  completed: number;
  exited: number;
  /** Instances that left on reaching the journey's goal in the period. */
  converted: number;
  steps: Record<string, JourneyStepFigures>;
  channels: Record<JourneyChannel, JourneyChannelFigures>;
  /** The webhooks the journey's webhook steps name. */
  webhook_ids: string[];
  /** Deliveries per hour of this journey's events to those webhooks, oldest first; hours with none left out. */
  webhooks: JourneyWebhookHour[];
}

/** One step an instance ran (GET /panels/{panel}/contacts/{id}/journeys). */
export interface ContactJourneyStep {
  step_id: string;
  type: string | null;
  at: string;
  /**
   * Messages: the message's status (sent, recorded, sending, failed, skipped); waits and
   * delays: waiting, event, timeout, elapsed or cancelled; conditions: then or else; webhooks:
   * queued, webhook_missing or refused: <why>.
   */
  result: string | null;
}

export interface ContactJourneyPath {
  journey_id: string;
  name: string;
  /** The instance's status: active, completed or exited. */
  status: string;
  entered_at: string;
  ended_at: string | null;
  steps: ContactJourneyStep[];
}

export interface ContactJourneys {
  journeys: ContactJourneyPath[];
}
