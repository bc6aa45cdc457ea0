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
