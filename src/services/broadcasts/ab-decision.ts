import { pickWinner } from "../../domain/ab-test";
import { panelHome } from "../access/shards";
import { namedPanelShard } from "../access/partitions";
import { abTestsDue, decideAbTest, releaseAbRest } from "../../store/campaigns/ab-tests";
import { getCampaign } from "../../store/campaigns/definitions";
import { completeCampaignIfDone } from "../../store/campaigns/sends";
import type { ShardDb } from "../../store/shards";
import { settleCampaignShard } from "./campaign-shards";
import { abTalliesAcross } from "./report";
import { nudgeUnsentBatches } from "./unsent";

/** Tests decided per cron minute and shard; the rest wait a minute. */
const DECIDE_PER_RUN = 20;

/**
 * The cron's decision step: each sending campaign whose test waited long enough gets its winner
 * (most unique opens or clicks among its test recipients, a tie to the first variant), and its
 * rest is released to it and nudged. The decision is the release: one row written once
 * (decideAbTest; the rest's rows take the winner as their batches are claimed, decision 0056, so
 * its cost does not grow with the rest); a crash before the nudges leaves batches the
 * stalled-campaign sweep nudges a minute later, and a repeated nudge finds nothing left to claim.
 *
 * A campaign published on other shards too (decision 0038 step 4) is due only once every shard
 * published (abTestsDue); its variants' figures are each shard's summed, the winner is picked
 * once on the home, and each other shard's held rest is released by a nudge naming that shard
 * (handleAbReleaseNudge), which the stalled-campaign re-drive sends again if it is lost.
 */
export async function decideDueAbTests(env: Env, db: ShardDb, now: number): Promise<number> {
  let decided = 0;
  for (const { campaign, shards } of await abTestsDue(db, now, DECIDE_PER_RUN)) {
    const test = campaign.abTest!;
    const places = shards.length ? await campaignShardPlaces(env, campaign.panelId, shards) : [];
    const tallies = await abTalliesAcross([db, ...places.map((p) => p.db)], campaign.panelId, campaign.id);
    const winner = pickWinner(tallies.filter((t) => t.group === "test").map((t) => ({ ...t, variant: t.variant! })), test.metric, test.variants.length);
    if (!(await decideAbTest(db, campaign.panelId, campaign.id, winner, now))) continue;
    decided++;
    for (const place of places) await nudgeAbRelease(env, campaign, place.shard);
    // The whole rest is sendable at once (decision 0056): a page of its batches, a continuation nudges the next (decision 0058).
    if (!(await nudgeUnsentBatches(env, db, campaign))) await completeCampaignIfDone(db, campaign.panelId, campaign.id, now, shards.length > 0);
  }
  return decided;
}

/** The shards other than its home a campaign was published on, still holding some of the panel's partitions (a shard the map no longer names has nothing of it). */
async function campaignShardPlaces(env: Env, panelId: string, shards: readonly number[]): Promise<Array<{ shard: number; db: ShardDb }>> {
  const { panel } = await panelHome(env, panelId);
  return shards.map((shard) => namedPanelShard(env, panel, shard)).filter((place) => !place.home);
}

/** The nudge on the IMPORTS queue that releases a decided A/B test's held rest on the shard it names (decision 0038 step 4). */
export interface AbReleaseNudge {
  type: "campaign_ab_release";
  panelId: string;
  campaignId: string;
  shard: number;
}

export function readAbReleaseNudge(body: unknown): AbReleaseNudge | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, campaignId, shard } = body as Record<string, unknown>;
  if (type !== "campaign_ab_release" || typeof panelId !== "string" || typeof campaignId !== "string" || !Number.isInteger(shard)) return null;
  return { type, panelId, campaignId, shard: shard as number };
}

export async function nudgeAbRelease(env: Pick<Env, "IMPORTS">, campaign: { id: string; panelId: string }, shard: number): Promise<void> {
  await env.IMPORTS.send({ type: "campaign_ab_release", panelId: campaign.panelId, campaignId: campaign.id, shard } satisfies AbReleaseNudge);
}

/**
 * A release nudge: the shard's part records the winner the home picked (one row: its held rest
 * takes it as its batches are claimed, decision 0056), and its batches are
 * nudged; with nothing left to send there, the shard is settled (the campaign finished if every
 * shard is). A paused campaign's rest is released all the same, its batches nudged by the resume;
 * a cancelled one's rest was skipped. Repeating it changes nothing.
 */
export async function handleAbReleaseNudge(env: Env, nudge: AbReleaseNudge, now = Date.now()): Promise<void> {
  const { panel, db: home } = await panelHome(env, nudge.panelId);
  const campaign = await getCampaign(home, nudge.panelId, nudge.campaignId);
  if (!campaign || campaign.abWinner === null || (campaign.status !== "sending" && campaign.status !== "paused")) return;
  const place = namedPanelShard(env, panel, nudge.shard);
  // The home's rest was released with the decision.
  if (place.home) return;
  await releaseAbRest(place.db, campaign.panelId, campaign.id, campaign.abWinner);
  if (campaign.status !== "sending") return;
  if (!(await nudgeUnsentBatches(env, place.db, campaign, { shard: place.shard }))) await settleCampaignShard(home, place, campaign, now);
}
