import type { CronTask } from "../../lib/tasks";
import { claimStalledBatches } from "../../store/event-batches";
import { nudgeEventBatches } from "./nudge";

/**
 * A pending batch nobody touched for this long has lost its queue message: the send after
 * recording failed, or the queue dead-lettered it after its retries. Longer than the longest
 * consumer backoff (5 min), so batches still being retried by the queue are left alone.
 */
export const REDRIVE_AFTER_MS = 10 * 60_000;
/** Re-drives per batch before it is marked failed and left for an operator's retry (admin/events.ts). */
export const MAX_REDRIVES = 5;
const REDRIVE_LIMIT = 1000;

export const redriveStalledEvents: CronTask = {
  name: "events-redrive",
  async run(env, now) {
    const claimed = await claimStalledBatches(env.DB, now - REDRIVE_AFTER_MS, now, REDRIVE_LIMIT, MAX_REDRIVES);
    const byPanel = new Map<string, number[]>();
    for (const batch of claimed) {
      if (batch.failed) {
        console.error(`event batch ${batch.id} of panel ${batch.panelId} failed its pipeline after ${MAX_REDRIVES} re-drives; POST /admin/v1/panels/${batch.panelId}/events/retry puts it through again`);
        continue;
      }
      byPanel.set(batch.panelId, [...(byPanel.get(batch.panelId) ?? []), batch.id]);
    }
    for (const [panelId, ids] of byPanel) await nudgeEventBatches(env.EVENTS, panelId, ids.sort((a, b) => a - b));
  },
};
