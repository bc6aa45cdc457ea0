import { retryFailedBatches } from "../../store/event-batches";
import type { ShardDb } from "../../store/shards";
import { nudgeEventBatches } from "./nudge";

/**
 * Puts up to `limit` of the panel's batches whose pipeline failed for good through it again
 * (steps they passed are not run again); returns their ids.
 */
export async function retryFailedEventBatches(env: Pick<Env, "EVENTS">, db: ShardDb, panelId: string, limit: number): Promise<number[]> {
  const ids = await retryFailedBatches(db, panelId, Date.now(), limit);
  if (ids.length) await nudgeEventBatches(env.EVENTS, panelId, ids);
  return ids;
}
