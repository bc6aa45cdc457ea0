import { retryFailedBatches } from "../../store/event-batches";
import { panelShardPlaces, type PanelPlace } from "../access/partitions";
import { nudgeEventBatches } from "./nudge";

/**
 * Puts up to `limit` of the panel's batches whose pipeline failed for good through it again
 * (steps they passed are not run again); returns their ids. Batches are on the home and, for a
 * panel with a partition map, on each partition's shard (decision 0038): each shard is asked in
 * turn for what the limit leaves, and its nudge names its shard.
 */
export async function retryFailedEventBatches(env: Env, panel: PanelPlace & { id: string }, limit: number): Promise<number[]> {
  const retried: number[] = [];
  for (const place of panelShardPlaces(env, panel)) {
    if (retried.length >= limit) break;
    const ids = await retryFailedBatches(place.db, panel.id, Date.now(), limit - retried.length);
    if (ids.length) await nudgeEventBatches(env.EVENTS, panel.id, ids, undefined, place.home ? undefined : place.shard);
    retried.push(...ids);
  }
  return retried;
}
