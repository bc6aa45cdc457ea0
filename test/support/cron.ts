import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { runCronTasks } from "../../src/jobs/cron";
import { handleQueue } from "../../src/jobs/queues";
import type { CronTask } from "../../src/lib/tasks";

/** A queue binding that keeps what is sent to it, for a test to hand to the consumer itself. */
export interface CollectingQueue extends Queue {
  bodies: unknown[];
}

export function collectingQueue(): CollectingQueue {
  const bodies: unknown[] = [];
  return {
    bodies,
    async send(body: unknown) {
      bodies.push(body);
    },
    async sendBatch(messages: Iterable<MessageSendRequest>) {
      for (const message of messages) bodies.push(message.body);
    },
  } as unknown as CollectingQueue;
}

/** `base` with some bindings replaced (every other property read through). */
export function withBindings(base: Env, overrides: Partial<Env>): Env {
  return new Proxy(base, {
    get: (target, key, receiver) => (Object.prototype.hasOwnProperty.call(overrides, key) ? overrides[key as keyof Env] : Reflect.get(target, key, receiver)),
  });
}

/**
 * Hands the CRON messages `queue` holds to the queue's consumer (through handleQueue, as the
 * queue does), and the messages those send, until none is left. Returns how many ran.
 */
export function drainCron(tickEnv: Env, queue: CollectingQueue): Promise<number> {
  return drainQueue("cron", tickEnv, queue);
}

/** The same for any queue of the Worker (`name`: cron, imports, events, sends…): what `queue` holds, and what its consumer sends to it, until none is left. */
export async function drainQueue(name: string, tickEnv: Env, queue: CollectingQueue): Promise<number> {
  let ran = 0;
  while (queue.bodies.length) {
    const bodies = queue.bodies.splice(0);
    const batch = createMessageBatch(`apiv2-${name}-default`, bodies.map((body, i) => ({ id: `${name}-${ran + i}`, timestamp: new Date(), attempts: 1, body })));
    const exec = createExecutionContext();
    await handleQueue(batch, tickEnv, exec);
    await getQueueResult(batch, exec);
    ran += bodies.length;
  }
  return ran;
}

/**
 * A cron tick at `now`, and then the work it handed out, done before this returns: what the
 * Cron Trigger and the CRON queue's consumer do together, without waiting for the queue.
 */
export async function runCron(now: number, tasks?: readonly CronTask[], base: Env = env): Promise<void> {
  const queue = collectingQueue();
  const tickEnv = withBindings(base, { CRON: queue });
  await runCronTasks(tickEnv, now, tasks);
  await drainCron(tickEnv, queue);
}
