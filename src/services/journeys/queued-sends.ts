import { panelHome, shardTask } from "../access/shards";
import { namedPanelShard } from "../access/partitions";
import type { NewEvent } from "../../domain/events";
import { sendAll, type CronTask } from "../../lib/tasks";
import { getMessages, overdueQueued, skipWaitingOfJourney, waitingOfJourney, type ClaimedMessage, type QueuedOutcome } from "../../store/journeys/messages";
import { JOURNEY_STOPPED_SKIP } from "../../domain/send-skips";
import type { Journey } from "../../store/journeys/definitions";
import type { ShardDb } from "../../store/shards";

/**
 * What SMS and push share once a provider sends them: the step records the message as waiting
 * (`sending`, no claim) and a nudge on the SENDS queue names it; the consumer claims it (so a
 * redelivered nudge finds nothing to send), calls the provider, and records the outcome. A 5xx
 * or 429 hands the message back with a delay; an attempt whose outcome is unknown (a timeout,
 * a consumer that died) is never resent, since no provider here takes an idempotency key.
 */

/** Messages of one panel waiting for their provider: the SENDS queue's nudge to send them. */
export interface QueuedNudge<K extends string = "sms" | "push"> {
  kind: K;
  panelId: string;
  msgids: string[];
  /** The shard holding the messages (their contacts' partition's, decision 0038); absent: the panel's home. */
  shard?: number;
}

/**
 * Messages per nudge: a consumer takes up to 10 nudges, so at most 1,000 messages per
 * invocation (the Workers Paid limit is 10,000 subrequests; a push message may go to a few
 * devices). Fewer, fuller invocations: with 25 a nudge, bench:channels measured 41% of the bare
 * loop (median of 5 rounds), with 100 74%.
 */
export const MESSAGES_PER_NUDGE = 100;

export function isQueuedNudge<K extends string>(body: unknown, kind: K): body is QueuedNudge<K> {
  const b = body as QueuedNudge | null;
  return (
    typeof b === "object" &&
    b !== null &&
    b.kind === kind &&
    typeof b.panelId === "string" &&
    Array.isArray(b.msgids) &&
    b.msgids.length <= MESSAGES_PER_NUDGE &&
    b.msgids.every((m) => typeof m === "string") &&
    (b.shard === undefined || Number.isInteger(b.shard))
  );
}

/** Nudges for these messages of one panel, MESSAGES_PER_NUDGE to a nudge. */
export async function enqueueNudges(env: Pick<Env, "SENDS">, kind: "sms" | "push", panelId: string, msgids: readonly string[], delaySeconds = 0, shard?: number): Promise<void> {
  const nudges: QueuedNudge[] = [];
  for (let i = 0; i < msgids.length; i += MESSAGES_PER_NUDGE) nudges.push({ kind, panelId, msgids: msgids.slice(i, i + MESSAGES_PER_NUDGE), ...(shard === undefined ? {} : { shard }) });
  if (nudges.length) await sendAll(env.SENDS, nudges, delaySeconds);
}

/** One nudge taken from the queue, and how many times the queue has delivered it. */
export interface NudgeDelivery<K extends string = "sms" | "push"> {
  nudge: QueuedNudge<K>;
  attempt: number;
}

/** A claim not renewed for this long belongs to an attempt that died; its outcome is unknown. */
export const QUEUED_CLAIM_MS = 60_000;

/** How long a message may wait for its nudge before the cron sends another. */
export const NUDGE_OVERDUE_MS = 2 * 60_000;

/** Retry delays after throttling or a provider error: 5 s doubling up to 5 minutes. */
export function sendRetryDelaySeconds(attempt: number): number {
  return Math.min(300, 5 * 2 ** Math.max(0, attempt - 1));
}

/** Provider calls at a time within one consumer invocation. */
export const SEND_CONCURRENCY = 25;

/** At most `size` tasks at once, the others waiting their turn in order. */
export class Limit {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await task();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

/**
 * Sends the nudges of a batch side by side, so one's D1 round trips overlap others' provider
 * calls; the calls share one limit. Returns, per nudge, the seconds after which it is to be
 * retried, or null when all its messages are done with.
 */
export async function sendNudges<K extends string>(
  deliveries: readonly NudgeDelivery<K>[],
  sendPanel: (panelId: string, attempts: ReadonlyMap<string, number>, limit: Limit, shard: number | undefined) => Promise<Map<string, number>>,
): Promise<Array<number | null>> {
  const limit = new Limit(SEND_CONCURRENCY);
  return Promise.all(
    deliveries.map(async ({ nudge, attempt }) => {
      const retries = await sendPanel(nudge.panelId, new Map(nudge.msgids.map((m) => [m, attempt])), limit, nudge.shard);
      return retries.size ? Math.max(...retries.values()) : null;
    }),
  );
}

/** A dead-lettered nudge: what still waits is handed back to the queue after a pause. */
export async function redriveDeadNudge(env: Env, nudge: QueuedNudge): Promise<string> {
  const { db } = namedPanelShard(env, (await panelHome(env, nudge.panelId)).panel, nudge.shard);
  const messages = await getMessages(db, nudge.panelId, nudge.msgids);
  const waiting = nudge.msgids.filter((m) => messages.get(m)?.status === "sending");
  if (waiting.length === 0) return "nothing left: no message of it is waiting";
  await enqueueNudges(env, nudge.kind, nudge.panelId, waiting, 60, nudge.shard);
  return `${waiting.length} message(s) nudged again in 60 s`;
}

/** A cron task that nudges again the messages of `kind` whose nudge was lost (the step's send failed, or the queue dropped it). */
export function redriveWaiting(kind: "sms" | "push"): CronTask {
  return shardTask(`${kind}-redrive`, async (env, db, index, now) => {
    const overdue = await overdueQueued(db, kind, now - NUDGE_OVERDUE_MS, 500);
    const byPanel = new Map<string, string[]>();
    for (const m of overdue) byPanel.set(m.panelId, [...(byPanel.get(m.panelId) ?? []), m.msgid]);
    // Naming the shard swept: a partition's messages are there (for the home's, the same database).
    for (const [panelId, msgids] of byPanel) await enqueueNudges(env, kind, panelId, msgids, 0, index);
  });
}

/**
 * Messages of each kind a resume nudges at once on a shard: a request's worth of nudges. Any
 * more are overdue by then, and the cron's re-drive takes them (500 a minute) now that the
 * journey runs.
 */
const RESUME_NUDGES = 5_000;

/**
 * A paused journey running again: the SMS and push its pause held on `at` (the home, or a
 * partition's shard) are nudged now, not left to the cron. A nudge not sent is only logged:
 * the journey runs, so the cron's re-drive sends them.
 */
export async function nudgeHeldSends(env: Pick<Env, "SENDS">, journey: Pick<Journey, "id" | "panelId">, at: { shard: number; db: ShardDb }): Promise<void> {
  try {
    const waiting = await waitingOfJourney(at.db, journey.panelId, journey.id, RESUME_NUDGES);
    await Promise.all([enqueueNudges(env, "sms", journey.panelId, waiting.sms, 0, at.shard), enqueueNudges(env, "push", journey.panelId, waiting.push, 0, at.shard)]);
  } catch (error) {
    console.error(`journey ${journey.id}: held SMS or push not nudged at resume; the cron re-drives them`, error);
  }
}

/** Waiting messages of each kind a stop settles per statement, and the statements' round trips per shard. */
const STOP_PAGE = 500;
const STOP_PAGES = 10;

/**
 * A journey just stopped: its SMS and push waiting on `at` are settled skipped now, not at their
 * next nudge (a paused journey's have none coming: the cron's re-drive would take up to 2
 * minutes). Pages of STOP_PAGE, up to STOP_PAGES; any beyond, or a failure (only logged), are
 * left to the claim, which skips them when the re-drive nudges them.
 */
export async function skipStoppedSends(journey: Pick<Journey, "id" | "panelId">, at: { db: ShardDb }): Promise<void> {
  try {
    for (let page = 0; page < STOP_PAGES; page++) {
      const settled = await skipWaitingOfJourney(at.db, journey.panelId, journey.id, JOURNEY_STOPPED_SKIP, STOP_PAGE);
      if (settled.sms < STOP_PAGE && settled.push < STOP_PAGE) return;
    }
  } catch (error) {
    console.error(`journey ${journey.id}: waiting SMS or push not settled at the stop; their claim skips them`, error);
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The outcomes of one claim's attempts, gathered to be recorded in one statement (settleClaimedStatement). */
export function outcomeList(): { outcomes: QueuedOutcome[]; settle: (message: ClaimedMessage, outcome: DistributiveOmit<QueuedOutcome, "msgid">) => void } {
  const outcomes: QueuedOutcome[] = [];
  return { outcomes, settle: (message, outcome) => void outcomes.push({ msgid: message.msgid, ...outcome } as QueuedOutcome) };
}

/**
 * The event of a message's final outcome (`delivered`, `failed`): one per message and outcome,
 * its guid, however often the provider reports it or the send is redone.
 */
export function messageOutcomeEvent(
  message: Pick<ClaimedMessage, "msgid" | "contactId" | "journeyId" | "channel">,
  name: "delivered" | "failed",
  params: Record<string, unknown>,
  now: number,
): NewEvent {
  const { channel, msgid, contactId, journeyId } = message;
  return { channel, name, occurredAt: now, contactId, msgid, journeyId, source: "provider", params, guid: `${channel}:${msgid}:${name}` };
}
