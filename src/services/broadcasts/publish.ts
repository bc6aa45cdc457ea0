import { forEachShard, shardTask } from "../access/shards";
import type { ShardDb } from "../../store/shards";
import { completeCampaignIfDone, dueCampaigns, failCampaign, publishCampaign, stalledCampaigns } from "../../store/campaigns";
import { senderStanding } from "../channels/email/sender-domains";
import { decideDueAbTests } from "./ab-test";
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

/**
 * Publishes every campaign whose schedule has come: its recipients are fixed in D1 and one
 * nudge per batch goes to the sends queue. Two overlapping runs cannot both publish one
 * campaign (publishCampaign lets only the first through). Campaigns whose nudges were lost
 * are nudged again; the claims make the repeat harmless.
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
    const audience = campaign.audience ? await compileAudience(db, campaign.panelId, campaign.audience, now) : undefined;
    const recipients = await publishCampaign(db, campaign, SEND_BATCH_SIZE, now, audience);
    if (recipients === null) continue;
    if (recipients === 0) {
      await completeCampaignIfDone(db, campaign.panelId, campaign.id, now);
      continue;
    }
    const batches = Array.from({ length: Math.ceil(recipients / SEND_BATCH_SIZE) }, (_, i) => i);
    await enqueueSendBatches(env, campaign, batches);
  }
  // A/B tests whose wait is over: the winner goes to the rest.
  await decideDueAbTests(env, db, now);
  for (const stalled of await stalledCampaigns(db, now - STALLED_AFTER_MS, now, PUBLISH_PER_RUN)) {
    if (stalled.batches.length) await enqueueSendBatches(env, stalled, stalled.batches);
    else await completeCampaignIfDone(db, stalled.panelId, stalled.id, now);
  }
}

export const publishBroadcastsTask = shardTask("publish-broadcasts", (env, db, _index, now) => publishDueOnShard(env, db, now));
