import { hasContactsBeyondHome, type PanelPlace } from "../access/partitions";
import { campaignPart, recordShardProgress } from "../../store/campaigns/parts";
import { type PublishScope } from "../../store/campaigns/publish";
import { completeCampaignIfDone } from "../../store/campaigns/sends";
import type { ShardDb } from "../../store/shards";
import { bucketRangesOn } from "../../domain/partitions";

/**
 * A campaign of a panel whose contacts are split over partitions on several shards (decision
 * 0038 step 4). The campaign stays on the panel's home (its configuration); each shard holding
 * some of the panel's partitions inserts the recipients among its own contacts (its publish
 * steps, its progress in campaign_parts; the home's on the campaign row) and sends them (send
 * batches numbered per shard, each nudge naming its shard). The home keeps, per other shard,
 * whether its publishing ended (its recipients then added to the campaign's, once) and whether
 * it has finished (campaign_shards): the campaign is sent once the home and every shard are.
 * An A/B test is split per shard, each over its own recipients; its winner is picked on the home
 * from every shard's figures summed and released to each shard's rest by a nudge (ab-decision.ts).
 * A panel without partitions elsewhere (every panel without a map) runs none of this.
 */

/**
 * What a publish step on `shard` reads: the bucket ranges of the panel's partitions there (a
 * shard may still hold rows of buckets a split moved away), and whether it is not the home.
 * Undefined for a panel without partitions elsewhere: the home's statements, unchanged.
 */
export function publishScope(panel: PanelPlace, shard: number): PublishScope | undefined {
  if (!hasContactsBeyondHome(panel)) return undefined;
  return { buckets: bucketRangesOn(panel.partitions, shard), part: shard !== panel.shard };
}

/**
 * After a step or a batch on a shard other than the home: what that shard did is recorded on
 * the home (its recipients once its publishing ended, finished once nothing is left there), and
 * the campaign is finished if every shard is. Repeating it changes nothing.
 */
export async function settleCampaignShard(home: ShardDb, place: { shard: number; db: ShardDb }, campaign: { id: string; panelId: string }, now: number): Promise<void> {
  const part = await campaignPart(place.db, campaign.id);
  if (!part || part.publishing) return;
  await recordShardProgress(home, campaign.id, place.shard, part, now);
  if (part.idle) await completeCampaignIfDone(home, campaign.panelId, campaign.id, now, true);
}
