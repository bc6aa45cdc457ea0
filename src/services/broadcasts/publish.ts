import { forEachShard, panelDb, shardTask } from "../access/shards";
import type { ShardDb } from "../../store/shards";
import { config } from "../../lib/config";
import { completeCampaignIfDone, dueCampaigns, failCampaign, getCampaign, publishStep, stalledCampaigns, startPublish, type Campaign } from "../../store/campaigns";
import { senderStanding } from "../channels/email/sender-domains";
import { decideDueAbTests } from "./ab-decision";
import { compileAudience } from "./audience";
import { contactImportStatus } from "./contact-import";
import { enqueueSendBatches, SEND_BATCH_SIZE } from "./send";

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
}

export function readPublishNudge(body: unknown): PublishNudge | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, campaignId } = body as Record<string, unknown>;
  return type === "campaign_publish" && typeof panelId === "string" && typeof campaignId === "string" ? { type, panelId, campaignId } : null;
}

/** Nudges the campaign's next publish step (a resumed campaign, a lost nudge); a step already taken makes it a no-op. */
export async function nudgePublish(env: Pick<Env, "IMPORTS">, campaign: { id: string; panelId: string }): Promise<void> {
  await env.IMPORTS.send({ type: "campaign_publish", panelId: campaign.panelId, campaignId: campaign.id } satisfies PublishNudge);
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
    // The campaign as it started: an edit between the read above and the start (its audience,
    // its A/B test) is what every step, this first one included, goes by.
    const started = await startPublish(db, campaign, now);
    if (started) await publishNextStep(env, db, started, now);
  }
  // A/B tests whose wait is over: the winner goes to the rest.
  await decideDueAbTests(env, db, now);
  for (const stalled of await stalledCampaigns(db, now - STALLED_AFTER_MS, now, PUBLISH_PER_RUN)) {
    if (stalled.batches.length) await enqueueSendBatches(env, stalled, stalled.batches);
    if (stalled.publishing) await nudgePublish(env, stalled);
    else if (!stalled.batches.length) await completeCampaignIfDone(db, stalled.panelId, stalled.id, now);
  }
}

/**
 * One step of a campaign's publishing (store/campaigns.ts publishStep: the recipients among the
 * next FANOUT_CHUNK_IDS contact ids, one statement): its send batches are nudged, then the next
 * step, or, after the last, the campaign is finished if nothing is left to send. The audience is
 * resolved as of the publish time in every step, so all steps agree on time windows.
 */
async function publishNextStep(env: Env, db: ShardDb, campaign: Campaign, now: number): Promise<void> {
  const at = campaign.publishedAt ?? now;
  const audience = campaign.audience ? await compileAudience(db, campaign.panelId, campaign.audience, at, "probe") : undefined;
  const step = await publishStep(db, campaign, SEND_BATCH_SIZE, config(env).fanoutChunkIds, now, audience);
  // Not publishing any more (cancelled), or another consumer took this step and nudges the next.
  if (!step) return;
  // An A/B test's recipients are held until the last step ranks them: its batches go out then, all at once.
  const first = campaign.abTest ? (step.done ? 0 : step.nextBatch) : step.firstBatch;
  if (step.nextBatch > first) {
    await enqueueSendBatches(env, campaign, Array.from({ length: step.nextBatch - first }, (_, i) => first + i));
  }
  if (step.done) await completeCampaignIfDone(db, campaign.panelId, campaign.id, now);
  else await nudgePublish(env, campaign);
}

/** The IMPORTS queue's publish nudge: the campaign's next step, while it is still publishing. */
export async function handlePublishNudge(env: Env, nudge: PublishNudge, now = Date.now()): Promise<void> {
  const db = await panelDb(env, nudge.panelId);
  const campaign = await getCampaign(db, nudge.panelId, nudge.campaignId);
  if (!campaign?.publishing || (campaign.status !== "sending" && campaign.status !== "paused")) return;
  await publishNextStep(env, db, campaign, now);
}

export const publishBroadcastsTask = shardTask("publish-broadcasts", (env, db, _index, now) => publishDueOnShard(env, db, now));
