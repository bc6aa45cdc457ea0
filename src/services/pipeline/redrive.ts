import { forEachShard, panelDb } from "../access/shards";
import type { ShardDb } from "../../store/shards";
import type { CronTask } from "../../lib/tasks";
import { markRedriven, stalledBatches } from "../../store/event-batches";
import { nudgeEventBatches } from "./nudge";

/**
 * A pending batch that no pass holds and that nobody nudged or attempted for this long has
 * lost its queue message: the send after recording failed, the consumer died holding it (its
 * lease ran out first), or the message was dead-lettered. A message waiting for a retry moves
 * the batch's nudge time to the retry, so it is not taken for lost meanwhile. Each re-drive of
 * the same batch waits twice as long as the one before.
 */
export const REDRIVE_AFTER_MS = 60_000;
/** Re-drives per batch before it is marked failed and left for an operator's retry (admin/events.ts). */
export const MAX_REDRIVES = 5;
const REDRIVE_LIMIT = 1000;

/**
 * Nudges the stalled batches (of all panels, or the given ones of one panel: a dead-lettered
 * message), counting a re-drive once the nudge is sent; a batch re-driven MAX_REDRIVES times
 * already is marked failed.
 */
export async function redriveEventBatches(env: Env, now: number, only?: { panelId: string; ids: readonly number[] }): Promise<{ nudged: number; failed: number }> {
  if (only) return redriveOnShard(env, await panelDb(env, only.panelId), now, only);
  const total = { nudged: 0, failed: 0 };
  await forEachShard(env, "events.redrive", async (db) => {
    const { nudged, failed } = await redriveOnShard(env, db, now);
    total.nudged += nudged;
    total.failed += failed;
  });
  return total;
}

async function redriveOnShard(env: Env, db: ShardDb, now: number, only?: { panelId: string; ids: readonly number[] }): Promise<{ nudged: number; failed: number }> {
  const stalled = await stalledBatches(db, now, REDRIVE_AFTER_MS, MAX_REDRIVES, REDRIVE_LIMIT, only);
  const givenUp = stalled.filter((batch) => batch.redrives >= MAX_REDRIVES);
  for (const batch of givenUp) {
    console.error(`event batch ${batch.id} of panel ${batch.panelId} failed its pipeline after ${MAX_REDRIVES} re-drives; POST /admin/v1/panels/${batch.panelId}/events/retry puts it through again`);
  }
  await markRedriven(db, givenUp.map((batch) => batch.id), now, true);
  const byPanel = new Map<string, number[]>();
  for (const batch of stalled) if (batch.redrives < MAX_REDRIVES) byPanel.set(batch.panelId, [...(byPanel.get(batch.panelId) ?? []), batch.id]);
  const failures: unknown[] = [];
  let nudged = 0;
  for (const [panelId, ids] of byPanel) {
    try {
      await nudgeEventBatches(env.EVENTS, panelId, ids.sort((a, b) => a - b));
      await markRedriven(db, ids, now, false);
      nudged += ids.length;
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length) throw failures[0];
  return { nudged, failed: givenUp.length };
}

export const redriveStalledEvents: CronTask = {
  name: "events-redrive",
  async run(env, now) {
    await redriveEventBatches(env, now);
  },
};
