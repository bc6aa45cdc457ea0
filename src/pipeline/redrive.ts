import type { CronTask } from "../jobs/cron";
import { claimStalledEvents } from "../store/events";
import { nudgeEvents } from "./nudge";

/**
 * A pending event nobody touched for this long has lost its queue message: the send after
 * storing failed, or the queue dead-lettered it after its retries. Longer than the longest
 * consumer backoff (5 min), so events still being retried by the queue are left alone.
 */
export const REDRIVE_AFTER_MS = 10 * 60_000;
/** Re-drives per event before it is marked failed and left for an operator. */
export const MAX_REDRIVES = 5;
const REDRIVE_LIMIT = 1000;

export const redriveStalledEvents: CronTask = {
  name: "events-redrive",
  async run(env, now) {
    const claimed = await claimStalledEvents(env.DB, now - REDRIVE_AFTER_MS, now, REDRIVE_LIMIT, MAX_REDRIVES);
    const byPanel = new Map<string, number[]>();
    for (const event of claimed) {
      if (event.state === "failed") {
        console.error(`event ${event.id} of panel ${event.panelId} failed its pipeline after ${MAX_REDRIVES} re-drives`);
        continue;
      }
      byPanel.set(event.panelId, [...(byPanel.get(event.panelId) ?? []), event.id]);
    }
    for (const [panelId, ids] of byPanel) await nudgeEvents(env.EVENTS, panelId, ids.sort((a, b) => a - b));
  },
};
