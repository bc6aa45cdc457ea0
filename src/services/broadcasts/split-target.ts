import type { ShardDb } from "../../store/shards";
import { campaignsCancelledSince, carryCampaignPart, publishedCampaignsUnderWay, recordCarriedShard, skipQueuedRecipients, sourceAbCounters } from "../../store/campaigns/parts";
import { completeCampaignIfDone } from "../../store/campaigns/sends";
import { settleCampaignShard } from "./campaign-shards";
import { nudgeUnsentBatches } from "./unsent";

/**
 * A partition split of a panel with campaigns under way (decision 0047, "Campaigns under way").
 * Every part of such a campaign has published (the split waits for one still publishing), so its
 * queued recipients on the source are rows that move with their contacts (campaign_messages is
 * bucketed), keeping their batch numbers: a batch of the source is then sent in two halves, each
 * shard claiming its own rows under that number from a nudge naming it, and a row lives on one
 * shard only from the switch (the source's copy is fenced until it goes, and claims pass over it).
 * What the target lacks is the campaign's part: its campaign_parts row there and its
 * campaign_shards row on the home, written here in the switch's wake, so the resume, the
 * stalled-campaign re-drive and the send path send its batches, and the campaign is not sent
 * before it is done there.
 */
export interface SplitPlaces {
  panelId: string;
  home: { shard: number; db: ShardDb };
  source: { shard: number; db: ShardDb };
  target: { shard: number; db: ShardDb };
  /** When the split started: a campaign cancelled since may have left queued recipients on the target. */
  startedAt: number;
}

/** The panel's campaigns under way and published, with when the split's source ended publishing its part. */
function campaignsUnderWay(split: SplitPlaces) {
  return publishedCampaignsUnderWay(split.home.db, split.panelId, split.source.shard, split.source.shard === split.home.shard);
}

/**
 * Gives the split's target its part of each campaign under way, once (a repeat changes nothing
 * but a winner the part lacked). With `nudge` (right after the switch), a sending campaign's
 * unsent batches there are nudged, or with nothing to send there the target is settled; a paused
 * one's wait for its resume. Before the source's old rows go the parts are written again without
 * nudges: a step that died after the switch leaves no campaign without its target's part.
 */
export async function carryCampaignsToTarget(env: Env, split: SplitPlaces, now: number, nudge: boolean): Promise<void> {
  const sourceIsHome = split.source.shard === split.home.shard;
  for (const campaign of await campaignsUnderWay(split)) {
    // The part first: a campaign_shards row without one would have the re-drive publish the target afresh.
    await carryCampaignPart(split.target.db, campaign, await sourceAbCounters(split.source.db, campaign.id, !sourceIsHome), now);
    await recordCarriedShard(split.home.db, campaign, split.target.shard);
    if (!nudge || campaign.status !== "sending") continue;
    if (!(await nudgeUnsentBatches(env, split.target.db, campaign, { shard: split.target.shard }))) await settleCampaignShard(split.home.db, split.target, campaign, now);
  }
  // A cancel made meanwhile skipped the shards its caller's map named (the fenced copies on the
  // source kept queued, then deleted): the target's copies of its queued recipients are skipped here.
  for (const cancelled of await campaignsCancelledSince(split.home.db, split.panelId, split.startedAt)) await skipQueuedRecipients(split.target.db, split.panelId, cancelled);
}

/**
 * Once the source's old rows are gone: the campaigns under way are settled there (the source's
 * part finished, or the campaign sent, where nothing is left), as the old rows kept both from
 * happening until now; the stalled-campaign re-drive would do it a minute later.
 */
export async function settleSplitSource(split: SplitPlaces, now: number): Promise<void> {
  const sourceIsHome = split.source.shard === split.home.shard;
  for (const campaign of await campaignsUnderWay(split)) {
    if (sourceIsHome) await completeCampaignIfDone(split.home.db, campaign.panelId, campaign.id, now, true);
    else await settleCampaignShard(split.home.db, split.source, campaign, now);
  }
}

/**
 * A whole panel moved (decision 0031) with campaigns sending: the batch nudges its senders took
 * during the pause claimed nothing (claims pass over fenced rows), so the new home's unsent
 * batches are nudged at the switch rather than left to the stalled-campaign re-drive a minute
 * later; a batch nudged twice claims nothing the second time.
 */
export async function nudgeMovedCampaigns(env: Env, home: ShardDb, panelId: string, from: number): Promise<void> {
  for (const campaign of await publishedCampaignsUnderWay(home, panelId, from, true)) {
    if (campaign.status === "sending") await nudgeUnsentBatches(env, home, campaign);
  }
}
