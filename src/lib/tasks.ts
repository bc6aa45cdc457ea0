/** A job of the per-minute Cron Trigger; the wiring in src/jobs runs each independently. */
export interface CronTask {
  name: string;
  run(env: Env, now: number): Promise<void>;
}

/** A queue consumer; a message is a nudge naming work recorded in D1 (DESIGN). */
export type QueueHandler = (batch: MessageBatch<unknown>, env: Env, exec: ExecutionContext) => Promise<void>;

// Queues accept at most 100 messages per sendBatch call.
const MESSAGES_PER_SEND = 100;

/** Sends every body, in sendBatch calls of up to 100: how re-drives hand a backlog to a queue. */
export async function sendAll(queue: Queue, bodies: readonly unknown[], delaySeconds = 0): Promise<void> {
  for (let i = 0; i < bodies.length; i += MESSAGES_PER_SEND) {
    await queue.sendBatch(bodies.slice(i, i + MESSAGES_PER_SEND).map((body) => (delaySeconds ? { body, delaySeconds } : { body })));
  }
}

/**
 * Runs `work` over the items with at most `limit` at a time, and settles every one (as
 * Promise.allSettled does), so a large page never starts thousands of I/O calls at once.
 */
export async function settleEach<T>(items: readonly T[], limit: number, work: (item: T) => Promise<unknown>): Promise<PromiseSettledResult<unknown>[]> {
  const results: PromiseSettledResult<unknown>[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        results[i] = { status: "fulfilled", value: await work(items[i]!) };
      } catch (reason) {
        results[i] = { status: "rejected", reason };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
