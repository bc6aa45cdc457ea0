/** A panel as a cron sweep of its shard sees it (the directory's entry). */
export interface PanelOnShard {
  id: string;
  eventRetentionDays: number;
}

/**
 * A job of the per-minute Cron Trigger; the wiring in src/jobs runs each independently.
 * `run` is the whole sweep in one invocation (every shard, every panel). A task whose work is
 * per shard also has `shard`, and one whose work is per panel `panels`: the cron then makes no
 * shard query itself but hands each shard, and each batch of a shard's panels, its own queue
 * message (src/jobs/cron.ts), so no invocation's D1 queries grow with the number of panels.
 */
export interface CronTask {
  name: string;
  run(env: Env, now: number): Promise<void>;
  /** The work of one shard (by its number): bounded whatever the shard holds. */
  shard?(env: Env, shard: number, now: number): Promise<void>;
  /** The work of a batch of a shard's panels (at most PANELS_PER_CRON_BATCH): bounded per panel. */
  panels?(env: Env, shard: number, panels: readonly PanelOnShard[], now: number): Promise<void>;
  /**
   * Of a shard's panels (at most PANELS_PER_DUE_CHECK), in one query, those `panels` has work
   * for now: only they are handed out, so an idle panel costs no message. Without it, all are.
   */
  due?(env: Env, shard: number, panels: readonly PanelOnShard[], now: number): Promise<ReadonlySet<string>>;
}

/** Panels one cron message of a per-panel task names: each costs a query or two when idle. */
export const PANELS_PER_CRON_BATCH = 100;

/** Panels one `due` query looks at: an index probe or a few each, one bound JSON of some 50 kB. */
export const PANELS_PER_DUE_CHECK = 1000;

/** The panels `due` keeps, asked PANELS_PER_DUE_CHECK at a time (all of them when there is no `due`). */
export async function duePanels<P extends PanelOnShard>(panels: readonly P[], due?: (chunk: readonly P[]) => Promise<ReadonlySet<string>>): Promise<P[]> {
  if (!due) return [...panels];
  const kept: P[] = [];
  for (let i = 0; i < panels.length; i += PANELS_PER_DUE_CHECK) {
    const chunk = panels.slice(i, i + PANELS_PER_DUE_CHECK);
    const ids = await due(chunk);
    kept.push(...chunk.filter((panel) => ids.has(panel.id)));
  }
  return kept;
}

/**
 * A message of the CRON queue: one task's work on one shard, or (`panels`) on a batch of the
 * shard's panels. `now` is the tick's time, so the work is the tick's wherever it runs.
 */
export interface CronMessage {
  cron: string;
  shard: number;
  now: number;
  panels?: string[];
}

export function readCronMessage(body: unknown): CronMessage | null {
  if (typeof body !== "object" || body === null) return null;
  const { cron, shard, now, panels } = body as Record<string, unknown>;
  if (typeof cron !== "string" || !Number.isInteger(shard) || typeof now !== "number") return null;
  if (panels !== undefined && !(Array.isArray(panels) && panels.every((id) => typeof id === "string"))) return null;
  return { cron, shard: shard as number, now, ...(panels ? { panels: panels as string[] } : {}) };
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
