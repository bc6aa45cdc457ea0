import { findPanelHome, forEachShard, panelHome, shardTask } from "../access/shards";
import { namedPanelShard } from "../access/partitions";
import type { ShardDb } from "../../store/shards";
import { markRedriven, stalledBatches } from "../../store/event-batches";
import { nudgeEventBatches } from "./nudge";

/**
 * A pending batch that no pass holds and that nobody nudged or attempted for this long has
 * lost its queue message: the send after recording failed, the consumer died holding it (its
 * lease ran out first), the message was dead-lettered, or a crash took the message before any
 * consumer took it. A message waiting for a retry moves the batch's nudge time to the retry, so
 * it is not taken for lost meanwhile.
 *
 * Only a re-drive whose batch a consumer took since the previous one counts (and doubles the
 * next wait): a nudge lost before any consumer took the lease, however often (repeated
 * crashes, a queue outage), costs nothing, so such a batch is nudged again at the first cron
 * tick a minute after its last nudge, never later than the second tick after the service is
 * healthy (docs/operations.md, recovery).
 */
export const REDRIVE_AFTER_MS = 60_000;
/** Counted re-drives per batch before it is marked failed and left for an operator's retry (admin/events.ts). */
export const MAX_REDRIVES = 5;
const REDRIVE_LIMIT = 1000;

/**
 * Nudges the stalled batches (of all panels, or the given ones of one panel: a dead-lettered
 * message), recording the re-drive once the nudge is sent. It counts when a consumer took the
 * batch since the last re-drive, and always for a dead-lettered message (the queue delivered
 * it to a consumer every time); a batch whose count would pass MAX_REDRIVES is marked failed.
 */
export async function redriveEventBatches(env: Env, now: number, only?: { panelId: string; ids: readonly number[]; shard?: number }): Promise<{ nudged: number; failed: number }> {
  if (only) {
    // The shard the dead message named (a partition's batches), else the home.
    const place = namedPanelShard(env, (await panelHome(env, only.panelId)).panel, only.shard);
    return redriveOnShard(env, place.db, place.shard, now, only);
  }
  const total = { nudged: 0, failed: 0 };
  await forEachShard(env, "events.redrive", async (db, index) => {
    const { nudged, failed } = await redriveOnShard(env, db, index, now);
    total.nudged += nudged;
    total.failed += failed;
  });
  return total;
}

/**
 * The shard to name in a re-drive's nudge of a panel's batches found on shard `index`: none when
 * it is the panel's home (as every nudge was before partition maps), else `index`, a partition's
 * shard (decision 0038), whose batches the consumer then takes there. An unknown panel: none.
 */
async function shardToName(env: Env, panelId: string, index: number): Promise<number | undefined> {
  const home = await findPanelHome(env, panelId);
  return home && home.panel.shard !== index ? index : undefined;
}

async function redriveOnShard(env: Env, db: ShardDb, index: number, now: number, only?: { panelId: string; ids: readonly number[] }): Promise<{ nudged: number; failed: number }> {
  const stalled = (await stalledBatches(db, now, REDRIVE_AFTER_MS, MAX_REDRIVES, REDRIVE_LIMIT, only)).map((batch) => ({ ...batch, counts: only !== undefined || batch.taken }));
  const givenUp = stalled.filter((batch) => batch.counts && batch.redrives >= MAX_REDRIVES);
  for (const batch of givenUp) {
    console.error(`event batch ${batch.id} of panel ${batch.panelId} failed its pipeline after ${MAX_REDRIVES} re-drives; POST /admin/v1/panels/${batch.panelId}/events/retry puts it through again`);
  }
  await markRedriven(db, givenUp.map((batch) => batch.id), now, { fail: true, count: true });
  // Per panel, the batches whose re-drive counts and those whose last nudge never reached a consumer.
  const byPanel = new Map<string, { counted: number[]; free: number[] }>();
  for (const batch of stalled) {
    if (givenUp.includes(batch)) continue;
    const group = byPanel.get(batch.panelId) ?? { counted: [], free: [] };
    (batch.counts ? group.counted : group.free).push(batch.id);
    byPanel.set(batch.panelId, group);
  }
  const failures: unknown[] = [];
  let nudged = 0;
  for (const [panelId, { counted, free }] of byPanel) {
    try {
      await nudgeEventBatches(env.EVENTS, panelId, [...counted, ...free].sort((a, b) => a - b), undefined, await shardToName(env, panelId, index));
      await markRedriven(db, counted, now, { count: true });
      await markRedriven(db, free, now, { count: false });
      nudged += counted.length + free.length;
    } catch (error) {
      failures.push(error);
    }
  }
  if (failures.length) throw failures[0];
  return { nudged, failed: givenUp.length };
}

export const redriveStalledEvents = shardTask("events-redrive", async (env, db, index, now) => {
  await redriveOnShard(env, db, index, now);
});
