import { z } from "../lib/z";
import { emailAddress, type InputRules } from "./fields";
import { signingSecret, url as webhookUrl } from "./webhooks/config";

/**
 * The deployment's operations view and its alerts (issue 47): the kinds of alert, the rules that
 * decide when a condition holds, and how a check's findings turn into announcements. Pure.
 */

export const ALERT_KINDS = ["webhook_disabled", "sender_domain_unverified", "dead_letters", "shard_full", "cron_late"] as const;
export type AlertKind = (typeof ALERT_KINDS)[number];

/** D1's largest database (Workers Paid): a shard's size is shown against it. */
export const D1_MAX_BYTES = 10 * 1024 ** 3;
/** A shard past this share of D1_MAX_BYTES raises `shard_full`. */
export const SHARD_FULL_SHARE = 0.8;
/** The cron runs every minute; a tick or a handed-out sweep this much later than due is late. */
export const CRON_LATE_MS = 5 * 60_000;
/** Dead letters received this recently make the `dead_letters` condition hold. */
export const DEAD_LETTER_WINDOW_MS = 60 * 60_000;
/** Work with no progress for this long is stuck (its lease and the cron's re-drive did not move it). */
export const STUCK_IMPORT_MS = 60 * 60_000;
export const STUCK_MOVE_MS = 30 * 60_000;
/** A scheduled campaign not yet published this long after its time, or a sending one untouched this long. */
export const LATE_PUBLISH_MS = 10 * 60_000;
export const STALLED_SENDING_MS = 60 * 60_000;
/** Findings of one kind one check lists (the view shows them, an alert names each). */
export const FINDINGS_PER_KIND = 100;
/** Subscriptions a deployment may hold: each alert is delivered to every one, in the cron. */
export const MAX_ALERT_SUBSCRIPTIONS = 20;
/**
 * Subscriptions one check tells at most: a delivery is a subrequest (a mail, a webhook post), and
 * a late cron concerns every panel's subscriptions. Those past it are logged, not told.
 */
export const MAX_ALERT_DELIVERIES = 200;
/** Subscriptions one panel's owners may hold (a late cron reaches every panel's, in one check). */
export const MAX_PANEL_ALERT_SUBSCRIPTIONS = 5;

/** One condition that holds now: its key is the same every time a check finds it. */
export interface AlertCondition {
  key: string;
  kind: AlertKind;
  panelId: string | null;
  detail: string;
  /** The shard a `shard_full` is of (its owners' panels are told). */
  shard?: number;
}

/** Who a subscription speaks for: the deployment (panel null), or one panel and the shards its data is on. */
export interface AlertAudience {
  panelId: string | null;
  shards: readonly number[];
}

/**
 * Whether a condition is told to a subscription. The deployment's hear every condition but a
 * panel's own dead letters (they hear the deployment's, which counts them); a panel's owners
 * hear their panel's conditions, their shards' being full, and a late cron (everyone's).
 */
export function concerns(condition: AlertCondition, audience: AlertAudience): boolean {
  if (audience.panelId === null) return !(condition.kind === "dead_letters" && condition.panelId !== null);
  if (condition.kind === "cron_late") return true;
  if (condition.kind === "shard_full") return condition.shard !== undefined && audience.shards.includes(condition.shard);
  return condition.panelId === audience.panelId;
}

/** What an announcement asks the recipients' query for: panels named, shards full, and whether every panel is concerned. */
export function alertReach(conditions: readonly AlertCondition[]): { panels: string[]; shards: number[]; everyPanel: boolean } {
  return {
    panels: [...new Set(conditions.flatMap((c) => (c.panelId === null ? [] : [c.panelId])))],
    shards: [...new Set(conditions.flatMap((c) => (c.kind === "shard_full" && c.shard !== undefined ? [c.shard] : [])))],
    everyPanel: conditions.some((c) => c.kind === "cron_late"),
  };
}

/** Whether a shard of `sizeBytes` is past the share of `limitBytes` that alerts. */
export function shardFull(sizeBytes: number, limitBytes: number): boolean {
  return sizeBytes > limitBytes * SHARD_FULL_SHARE;
}

/**
 * How late the cron is, in ms, as a tick sees it: its own start after its scheduled time, or
 * the gap since the tick before (ticks that never ran) beyond the minute it should be, or the
 * oldest message waiting on the CRON queue (its sweeps not run). 0 when on time.
 */
export function cronLateness(tick: { scheduledAt: number; startedAt: number }, previousStartedAt: number | null, oldestCronMessageAt: number | null): number {
  const own = tick.startedAt - tick.scheduledAt;
  const gap = previousStartedAt === null ? 0 : tick.startedAt - previousStartedAt - 60_000;
  const queued = oldestCronMessageAt === null ? 0 : tick.startedAt - oldestCronMessageAt;
  return Math.max(0, own, gap, queued);
}

/**
 * What a check's findings change: conditions found now that were not held (announced, then
 * kept) and held ones not found now (cleared: forgotten, so their return is announced again).
 */
export function conditionChanges(held: readonly string[], found: readonly AlertCondition[]): { raised: AlertCondition[]; cleared: string[] } {
  const heldKeys = new Set(held);
  const foundKeys = new Set(found.map((condition) => condition.key));
  return { raised: found.filter((condition) => !heldKeys.has(condition.key)), cleared: held.filter((key) => !foundKeys.has(key)) };
}

const kinds = z
  .array(z.enum(ALERT_KINDS, { error: `must be one of ${ALERT_KINDS.join(", ")}` }))
  .min(1, { error: "must name at least one kind" })
  .max(ALERT_KINDS.length)
  .transform((list) => [...new Set(list)])
  .meta({ example: ["webhook_disabled", "dead_letters"] });

/** POST /admin/v1/alerts/subscriptions (and a panel's): an email address or a webhook, and the kinds it hears of. */
export const alertSubscriptionBody = (rules: InputRules) =>
  z
    .object({
      kinds,
      email: emailAddress.optional(),
      webhook: z.object({ url: webhookUrl(rules), signing_secret: signingSecret.optional() }).strict().optional(),
    })
    .strict()
    .refine((body) => (body.email === undefined) !== (body.webhook === undefined), { error: "give either email or webhook, not both and not neither", path: ["email"] });
export type AlertSubscriptionBody = z.output<ReturnType<typeof alertSubscriptionBody>>;
