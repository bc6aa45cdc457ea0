import { sendAll } from "../../lib/tasks";

/**
 * A message on the EVENTS queue names recorded event batches, it does not carry them
 * (DESIGN: a message is a nudge naming work recorded in D1). A call's events are one batch,
 * or a few when they are large, so one message names them all; a re-drive names up to
 * BATCHES_PER_MESSAGE per message, so a consumer invocation (100 messages) stays within
 * D1's queries per invocation.
 */
const BATCHES_PER_MESSAGE = 5;

export interface EventsNudge {
  panel: string;
  batches: number[];
  /** The events each batch holds, in the same order, when the sender knew them (the consumer sizes its passes by them). */
  events?: number[];
  /**
   * The shard holding the batches when it is not the panel's home: a partition's (decision
   * 0038), where recordEvents put the events of that partition's contacts. Absent: the home.
   */
  shard?: number;
}

export function isEventsNudge(body: unknown): body is EventsNudge {
  if (typeof body !== "object" || body === null) return false;
  const { panel, batches, events, shard } = body as Record<string, unknown>;
  if (typeof panel !== "string" || !Array.isArray(batches) || !batches.every((id) => Number.isSafeInteger(id))) return false;
  if (shard !== undefined && !(Number.isSafeInteger(shard) && (shard as number) >= 0)) return false;
  return events === undefined || (Array.isArray(events) && events.length === batches.length && events.every((n) => Number.isSafeInteger(n) && n >= 0));
}

/** Logs a send that failed: the batches are stored and pending, so the re-drive cron nudges them again (redrive.ts). */
export function logNotEnqueued(panelId: string, batchIds: readonly number[]): (error: unknown) => void {
  return (error) => console.error(`event batches ${batchIds.join(", ")} of panel ${panelId} stored but not enqueued; the re-drive will`, error);
}

/**
 * Nudges the batches; `sizes` (events in each, same order) when the caller knows them, `shard`
 * when they are on a shard other than the panel's home (EventsNudge.shard).
 */
export async function nudgeEventBatches(queue: Queue, panelId: string, batchIds: readonly number[], sizes?: readonly number[], shard?: number): Promise<void> {
  const messages: EventsNudge[] = [];
  for (let i = 0; i < batchIds.length; i += BATCHES_PER_MESSAGE) {
    const batches = batchIds.slice(i, i + BATCHES_PER_MESSAGE);
    const message: EventsNudge = sizes ? { panel: panelId, batches, events: sizes.slice(i, i + BATCHES_PER_MESSAGE) } : { panel: panelId, batches };
    if (shard !== undefined) message.shard = shard;
    messages.push(message);
  }
  if (messages.length === 1) await queue.send(messages[0]);
  else await sendAll(queue, messages);
}

/**
 * How long an isolate gathers the batches its calls record before one send nudges them all.
 * A message per call made single-activity posts pay a queue send each, and the consumer a
 * delivery each; the queue's own batching (max_batch_timeout, 1 s) dwarfs this wait.
 */
export const NUDGE_GATHER_MS = 20;

/**
 * A gathering whose send has not started this long after it began is taken for dead (its call's
 * context ended before the timer fired): later calls start a new one. Its ids are left to the re-drive.
 */
const GATHERING_STALE_MS = 1000;

/** Per panel (and shard, for a partition's batches), the batch ids (and their sizes) that this isolate's send, already waiting, will name. */
const gathering = new Map<string, { ids: number[]; sizes: number[]; since: number }>();

/**
 * Nudges the batches within NUDGE_GATHER_MS, in one send with the batches other calls of this
 * isolate record meanwhile. The first call's `defer` (its waitUntil) holds the send; later calls
 * only add their ids, so no call waits on another's I/O. A send that fails is logged (logNotEnqueued).
 */
export function nudgeEventBatchesSoon(
  queue: Queue,
  panelId: string,
  batchIds: readonly number[],
  sizes: readonly number[],
  defer: (work: Promise<unknown>) => void,
  shard?: number,
): void {
  const now = Date.now();
  const key = shard === undefined ? panelId : `${panelId}@${shard}`;
  const waiting = gathering.get(key);
  if (waiting && now - waiting.since < GATHERING_STALE_MS) {
    waiting.ids.push(...batchIds);
    waiting.sizes.push(...sizes);
    return;
  }
  const mine = { ids: [...batchIds], sizes: [...sizes], since: now };
  gathering.set(key, mine);
  const send = async () => {
    try {
      await scheduler.wait(NUDGE_GATHER_MS);
    } finally {
      if (gathering.get(key) === mine) gathering.delete(key);
    }
    await nudgeEventBatches(queue, panelId, mine.ids, mine.sizes, shard);
  };
  defer(send().catch(logNotEnqueued(panelId, mine.ids)));
}
