import { contactBucket, partitionMapProblem, partitionOfBucket, wholePanelPartition, type Partition } from "../../domain/partitions";
import { refusedField, succeeded, type Result } from "../../lib/problems";
import { getPanel, type Panel } from "../../store/panels";
import { setPanelPartitions } from "../../store/panel-partitions";
import { allShards, shardByIndex, type ShardDb } from "../../store/shards";
import { forgetPanelPlaces } from "./shards";

/**
 * Where a panel's contact-keyed data lives (decision 0038): its partitions, each a bucket
 * range on one shard. The map comes with the directory entry (Panel.partitions, read in the
 * same statement and kept in the same per-isolate caches), so answering costs no read. A panel
 * without a map (every panel made before it) is one partition: every bucket on its home shard.
 */

/** A partition of a panel with its shard's database. */
export interface PanelPartition extends Partition {
  db: ShardDb;
}

function withDb(env: Env, partition: Partition): PanelPartition {
  const db = shardByIndex(env, partition.shard);
  if (!db) throw new Error(`the partition map names shard ${partition.shard}, which has no binding`);
  return { ...partition, db };
}

/** Every partition of the panel, in bucket order. */
export function partitionsOf(env: Env, panel: Pick<Panel, "shard" | "partitions">): PanelPartition[] {
  const map = panel.partitions.length ? panel.partitions : wholePanelPartition(panel.shard);
  return map.map((p) => withDb(env, p));
}

/** The partition holding the contact whose key (primary-key value, or an anonymous uniqueid) is `key`. */
export function partitionOfContact(env: Env, panel: Pick<Panel, "id" | "shard" | "partitions">, key: string): PanelPartition {
  if (panel.partitions.length === 0) return withDb(env, wholePanelPartition(panel.shard)[0]!);
  return withDb(env, partitionOfBucket(panel.partitions, contactBucket(panel.id, key)));
}

/**
 * Gives a panel a new partition map (an operator's layout of a panel across shards, before it
 * holds contacts: moving rows between partitions is the split of decision 0038 step 5, not
 * built). Refuses a map that does not cover every bucket once or names a shard the deployment
 * does not bind. An empty map makes the panel one partition on its home shard again.
 */
export async function setPartitionMap(env: Env, panelId: string, partitions: readonly Partition[]): Promise<Result<Panel>> {
  const shards = allShards(env).length;
  if (partitions.length) {
    const problem = partitionMapProblem(partitions);
    if (problem) return refusedField("invalid", "partitions", problem);
    const unbound = partitions.find((p) => shardByIndex(env, p.shard) === null);
    if (unbound) return refusedField("invalid", "partitions", `this deployment has no shard ${unbound.shard} (shards 0 to ${shards - 1})`);
  }
  if (!(await getPanel(env.DB, panelId))) return refusedField("not_found", "panel", `no panel with id "${panelId}"`);
  await setPanelPartitions(env.DB, panelId, partitions);
  // This isolate's cached directory entries carry the old map; others see the new one within their cache time.
  forgetPanelPlaces();
  return succeeded((await getPanel(env.DB, panelId))!);
}
