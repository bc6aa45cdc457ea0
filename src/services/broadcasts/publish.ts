import { forEachShard, panelHome, shardTask } from "../access/shards";
import { hasContactsBeyondHome, mirrorShards, namedPanelShard, type PanelPlace } from "../access/partitions";
import type { Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { config } from "../../lib/config";
import { dueCampaigns, failCampaign, getCampaign, type Campaign } from "../../store/campaigns/definitions";
import { campaignPart, startPublishPart, unfinishedShards } from "../../store/campaigns/parts";
import { publishStep, startPublish, type PublishStep } from "../../store/campaigns/publish";
import { completeCampaignIfDone, stalledCampaigns } from "../../store/campaigns/sends";
import { publishScope, settleCampaignShard } from "./campaign-shards";
import { senderStanding } from "../channels/email/sender-domains";
import { decideDueAbTests, nudgeAbRelease } from "./ab-decision";
import { compileAudience } from "./audience";
import { contactImportStatus } from "./contact-import";
import { enqueueSendBatches, SEND_BATCH_SIZE } from "./send";
import { nudgeUnsentBatches } from "./unsent";

/** Campaigns published per cron minute; the rest wait a minute. */
const PUBLISH_PER_RUN = 20;
/**
 * A sending campaign in which no batch finished for this long gets its unsent batches nudged
 * again (a lost nudge, a crash). Batches finish every few seconds while a campaign sends, so a
 * minute of silence means its nudges are gone; a repeated nudge finds nothing to claim.
 */
export const STALLED_AFTER_MS = 60_000;

/** The nudge on the IMPORTS queue (one bounded step per message): insert the campaign's next recipients. */
export interface PublishNudge {
  type: "campaign_publish";
  panelId: string;
  campaignId: string;
  /** The shard whose recipients the step inserts (decision 0038 step 4); absent: the panel's home (every nudge before partitions). */
  shard?: number;
}

export function readPublishNudge(body: unknown): PublishNudge | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, campaignId, shard } = body as Record<string, unknown>;
  if (type !== "campaign_publish" || typeof panelId !== "string" || typeof campaignId !== "string") return null;
  return Number.isInteger(shard) ? { type, panelId, campaignId, shard: shard as number } : { type, panelId, campaignId };
}

/** Nudges the campaign's next publish step on `shard` (absent: the home); a step already taken makes it a no-op. */
export async function nudgePublish(env: Pick<Env, "IMPORTS">, campaign: { id: string; panelId: string }, shard?: number): Promise<void> {
  const nudge: PublishNudge = { type: "campaign_publish", panelId: campaign.panelId, campaignId: campaign.id };
  if (shard !== undefined) nudge.shard = shard;
  await env.IMPORTS.send(nudge);
}

/**
 * Publishes every campaign whose schedule has come: it moves to `sending`, and its recipients
 * are inserted in bounded steps (one here, the rest each from its own IMPORTS message), each
 * step's send batches nudged on the sends queue as soon as it commits. Two overlapping runs
 * cannot both publish one campaign (startPublish lets only the first through). Campaigns whose
 * nudges were lost are nudged again; the claims and the step's own guard make a repeat harmless.
 */
export async function publishDueBroadcasts(env: Env, now: number): Promise<void> {
  await forEachShard(env, "publish-broadcasts", (db) => publishDueOnShard(env, db, now));
}

async function publishDueOnShard(env: Env, db: ShardDb, now: number): Promise<void> {
  for (const campaign of await dueCampaigns(db, now, PUBLISH_PER_RUN)) {
    // A campaign with an audience has no import: its recipients are resolved now.
    const imported = campaign.audience ? "completed" : await contactImportStatus(db, campaign.panelId, campaign.importJobId);
    if (imported === "running") continue;
    if (imported === "failed") {
      await failCampaign(db, campaign.panelId, campaign.id, "the contact import failed", now);
      continue;
    }
    // The domain may have been removed, or failed a re-check, since the campaign was created.
    const sender = await senderStanding(env, db, campaign.panelId, campaign.senderEmail);
    if (sender.refusal) {
      await failCampaign(db, campaign.panelId, campaign.id, sender.refusal, now);
      continue;
    }
    // Its contacts may be on several shards (decision 0038 step 4): the directory entry, cached.
    const { panel } = await panelHome(env, campaign.panelId);
    const mirrors = mirrorShards(env, panel);
    // The campaign as it started: an edit between the read above and the start (its audience,
    // its A/B test) is what every step, this first one included, goes by; one rescheduled
    // meanwhile is not due any more and stays scheduled.
    const started = await startPublish(db, campaign, now, mirrors.map((m) => m.shard), now);
    if (!started) continue;
    // Each other shard inserts its own contacts' recipients, from its own nudges.
    for (const mirror of mirrors) await nudgePublish(env, started, mirror.shard);
    await publishNextStep(env, db, started, now, panel);
  }
  // A/B tests whose wait is over: the winner goes to the rest.
  await decideDueAbTests(env, db, now);
  for (const stalled of await stalledCampaigns(db, now - STALLED_AFTER_MS, now, PUBLISH_PER_RUN)) {
    // Its first page of due batches; a continuation nudges the rest (decision 0058).
    const unsent = await nudgeUnsentBatches(env, db, stalled, { dueBy: now });
    if (stalled.publishing) await nudgePublish(env, stalled);
    else if (!unsent) await completeCampaignIfDone(db, stalled.panelId, stalled.id, now, stalled.spread);
    if (stalled.spread) await nudgeUnfinishedShards(env, db, (await panelHome(env, stalled.panelId)).panel, stalled, now, stalled.abDecided);
  }
}

/**
 * The campaign's shards other than the home that have not finished (campaign_shards, as its
 * publishing began): each one's lost nudges are sent again (its next publish step, or its unsent
 * batches; with its A/B test decided, the release of its held rest), or, with nothing left there,
 * it is recorded finished. A repeated nudge finds nothing to do. A shard whose publish step ran
 * within STALLED_AFTER_MS is not nudged: its chain is alive (the home's campaign row stalls while
 * only that shard publishes), and a second chain beside it would run each step twice over until
 * the two collided. The stalled-campaign re-drive and a resume both go by it.
 */
export async function nudgeUnfinishedShards(env: Env, home: ShardDb, panel: PanelPlace, campaign: { id: string; panelId: string }, now: number, abDecided: boolean): Promise<void> {
  for (const shard of await unfinishedShards(home, campaign.id)) {
    const place = namedPanelShard(env, panel, shard);
    // A shard the map no longer names (a split moved its partition away) has nothing to send.
    if (place.home) continue;
    const part = await campaignPart(place.db, campaign.id);
    if (part?.publishing && part.updatedAt > now - STALLED_AFTER_MS) continue;
    if (!part || part.publishing) {
      await nudgePublish(env, campaign, shard);
      continue;
    }
    if (await nudgeUnsentBatches(env, place.db, campaign, { shard, dueBy: now })) continue;
    // Its held rest waits for the winner: a lost release nudge is sent again (it settles the shard after).
    if (abDecided) await nudgeAbRelease(env, campaign, shard);
    else await settleCampaignShard(home, place, campaign, now);
  }
}

/**
 * Nudges the send batches a publish step lets go: its own; with an A/B test, none before the
 * shard's last step has ranked its recipients into groups (they are held), then the batches of
 * its test recipients (the rest stays held until the winner), a page at a time (decision 0058).
 */
async function nudgeStepBatches(env: Env, db: ShardDb, campaign: Campaign, step: PublishStep, shard?: number): Promise<void> {
  if (campaign.abTest) {
    if (step.done) await nudgeUnsentBatches(env, db, campaign, { shard });
    return;
  }
  const batches = Array.from({ length: Math.max(0, step.nextBatch - step.firstBatch) }, (_, i) => step.firstBatch + i);
  if (batches.length) await enqueueSendBatches(env, campaign, batches, 0, shard);
}

/**
 * One step of a campaign's publishing (store/campaigns/publish.ts publishStep: the recipients among the
 * panel's next FANOUT_CHUNK_IDS contacts or list members, one statement): its send batches are nudged, then the next
 * step, or, after the last, the campaign is finished if nothing is left to send. The audience is
 * resolved as of the publish time in every step, so all steps agree on time windows.
 */
async function publishNextStep(env: Env, db: ShardDb, campaign: Campaign, now: number, panel: Pick<Panel, "shard" | "partitions">): Promise<void> {
  const at = campaign.publishedAt ?? now;
  const audience = campaign.audience ? await compileAudience(db, campaign.panelId, campaign.audience, at, "probe") : undefined;
  const step = await publishStep(db, campaign, SEND_BATCH_SIZE, config(env).fanoutChunkIds, now, audience, publishScope(panel, panel.shard));
  // Not publishing any more (cancelled), or another consumer took this step and nudges the next.
  if (!step) return;
  await nudgeStepBatches(env, db, campaign, step);
  if (step.done) await completeCampaignIfDone(db, campaign.panelId, campaign.id, now, hasContactsBeyondHome(panel));
  else await nudgePublish(env, campaign);
}

/**
 * One publish step on a shard other than the campaign's home (decision 0038 step 4): the
 * recipients among the panel's next contacts on that shard, in its own partitions' buckets, the audience
 * compiled against its mirror of the panel's lists and attributes (decision 0041). Its batches
 * are nudged naming the shard; after its last step the home records its recipients.
 */
async function publishShardStep(env: Env, home: ShardDb, place: { shard: number; db: ShardDb }, campaign: Campaign, now: number, panel: Pick<Panel, "shard" | "partitions">): Promise<void> {
  const at = campaign.publishedAt ?? now;
  // Its progress starts with its first nudge (once; a repeated nudge finds it there).
  await startPublishPart(place.db, campaign, at);
  const audience = campaign.audience ? await compileAudience(place.db, campaign.panelId, campaign.audience, at, "probe") : undefined;
  const step = await publishStep(place.db, campaign, SEND_BATCH_SIZE, config(env).fanoutChunkIds, now, audience, publishScope(panel, place.shard));
  if (!step) return;
  await nudgeStepBatches(env, place.db, campaign, step, place.shard);
  if (step.done) await settleCampaignShard(home, place, campaign, now);
  else await nudgePublish(env, campaign, place.shard);
}

/** The IMPORTS queue's publish nudge: the campaign's next step on the shard it names, while it is still publishing. */
export async function handlePublishNudge(env: Env, nudge: PublishNudge, now = Date.now()): Promise<void> {
  const { panel, db } = await panelHome(env, nudge.panelId);
  const campaign = await getCampaign(db, nudge.panelId, nudge.campaignId);
  if (!campaign || (campaign.status !== "sending" && campaign.status !== "paused")) return;
  const place = namedPanelShard(env, panel, nudge.shard);
  if (!place.home) return publishShardStep(env, db, place, campaign, now, panel);
  if (!campaign.publishing) return;
  await publishNextStep(env, db, campaign, now, panel);
}

export const publishBroadcastsTask = shardTask("publish-broadcasts", (env, db, _index, now) => publishDueOnShard(env, db, now));
