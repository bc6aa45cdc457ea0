/** A job of the per-minute Cron Trigger; the wiring in src/jobs runs each independently. */
export interface CronTask {
  name: string;
  run(env: Env, now: number): Promise<void>;
}

/** A queue consumer; a message is a nudge naming work recorded in D1 (DESIGN). */
export type QueueHandler = (batch: MessageBatch<unknown>, env: Env, exec: ExecutionContext) => Promise<void>;
