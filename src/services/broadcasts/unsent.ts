import { config } from "../../lib/config";
import { getCampaign } from "../../store/campaigns/definitions";
import { unsentBatches } from "../../store/campaigns/sends";
import type { ShardDb } from "../../store/shards";
import { namedPanelShard, panelHomeNaming } from "../access/partitions";
import { enqueueSendBatches } from "./send";

/**
 * The continuation on the IMPORTS queue of a campaign's unsent batches on a shard (decision
 * 0058): nudge the next page of them, after batch `after`.
 */
export interface UnsentNudge {
  type: "campaign_unsent";
  panelId: string;
  campaignId: string;
  /** The batches' shard; absent: the panel's home (as its send nudges name none). */
  shard?: number;
  after: number;
  /** Only batches with a recipient due by then (the stalled-campaign sweep's `now`); absent: every unsent one. */
  dueBy?: number;
}

export function readUnsentNudge(body: unknown): UnsentNudge | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, campaignId, shard, after, dueBy } = body as Record<string, unknown>;
  if (type !== "campaign_unsent" || typeof panelId !== "string" || typeof campaignId !== "string" || !Number.isInteger(after)) return null;
  if ((shard !== undefined && !Number.isInteger(shard)) || (dueBy !== undefined && !Number.isInteger(dueBy))) return null;
  const nudge: UnsentNudge = { type, panelId, campaignId, after: after as number };
  if (shard !== undefined) nudge.shard = shard as number;
  if (dueBy !== undefined) nudge.dueBy = dueBy as number;
  return nudge;
}

/**
 * Nudges the campaign's unsent batches on `db` (the shard `shard`; absent: the home) on the sends
 * queue, one page (UNSENT_PAGE_BATCHES) at a time: a full page hands the rest on in one
 * continuation, so no invocation reads or enqueues more than a page however large the campaign.
 * With `dueBy`, only batches with a recipient due by then. Returns whether there was any; a
 * batch nudged twice claims nothing the second time.
 */
export async function nudgeUnsentBatches(
  env: Env,
  db: ShardDb,
  campaign: { id: string; panelId: string },
  from: { shard?: number; dueBy?: number; after?: number } = {},
): Promise<boolean> {
  const after = from.after ?? -1;
  const page = config(env).unsentPageBatches;
  const batches = await unsentBatches(db, campaign.id, from.dueBy, after, page);
  if (batches.length === 0) return false;
  await enqueueSendBatches(env, campaign, batches, 0, from.shard);
  if (batches.length === page) {
    const next: UnsentNudge = { type: "campaign_unsent", panelId: campaign.panelId, campaignId: campaign.id, after: batches[batches.length - 1]! };
    if (from.shard !== undefined) next.shard = from.shard;
    if (from.dueBy !== undefined) next.dueBy = from.dueBy;
    await env.IMPORTS.send(next);
  }
  return true;
}

/** A continuation: the next page of the campaign's unsent batches on the shard it names, while the campaign sends (a paused one's are nudged by its resume). */
export async function handleUnsentNudge(env: Env, nudge: UnsentNudge): Promise<void> {
  const { panel, db: home } = await panelHomeNaming(env, nudge.panelId, nudge.shard);
  const campaign = await getCampaign(home, nudge.panelId, nudge.campaignId);
  if (!campaign || campaign.status !== "sending") return;
  const place = namedPanelShard(env, panel, nudge.shard);
  // A named shard the map no longer names (a split moved its partition away) has nothing to send.
  if (nudge.shard !== undefined && place.home) return;
  await nudgeUnsentBatches(env, place.db, campaign, { shard: nudge.shard, dueBy: nudge.dueBy, after: nudge.after });
}
