import { panelHome } from "../access/shards";
import { firstOnShards, panelShards } from "../access/partitions";
import { allShards, type ShardDb } from "../../store/shards";
import type { ProviderBounce, ProviderComplaint } from "../channels/email/provider";
import type { CampaignMessageRef, TrackingClaim } from "../channels/email/tracking";
import { countEngagement, markBounced, markUnsubscribed, sentMessageByProviderId, type TrackedMessage } from "../../store/campaigns/messages";
import { suppressAddressStatement } from "../../store/suppressions";
import { stopReportedAddresses } from "../channels/email/reported-stops";
import { copyHomeStopsOf } from "../channels/email/home-stop-copies";
import { recordEmailEvents } from "../pipeline/email-events";
import { campaignMessageId } from "../../domain/email-message";

/**
 * What recipients do with campaign email: opens, clicks, unsubscribes, and the bounces the
 * provider reports. Each counts on the message's row (the campaign counters) and becomes an
 * event through the event pipeline (campaign-events.ts); unsubscribes and hard bounces suppress the address.
 * A complaint the provider reports (marked as spam) suppresses the address as an unsubscribe
 * and becomes a `complaint` event; it is not counted as one of the campaign's unsubscribes.
 */

type Env_ = Env;

/**
 * `act` on the shard holding the message: a message is kept with its contact, on its partition's
 * shard (decision 0038 step 4), so the home is asked first, then each other shard of the panel's
 * partitions until one has it (one statement each). A panel without a map: its home alone, as before.
 */
async function onMessageShard<T>(env: Env_, panelId: string, act: (db: ShardDb) => Promise<T | null>): Promise<{ db: ShardDb; found: T } | null> {
  const { panel, db } = await panelHome(env, panelId);
  return firstOnShards(panelShards(env, panel, db), act);
}

export async function trackOpen(env: Env_, claim: TrackingClaim<CampaignMessageRef>, now: number): Promise<boolean> {
  const message = (await onMessageShard(env, claim.panelId, (db) => countEngagement(db, claim, "open", now)))?.found;
  if (!message) return false;
  await recordEmailEvents(env, [{ panelId: message.panelId, event: "open", msgid: campaignMessageId(message.campaignId, message.contactId), campaignId: message.campaignId, contactId: message.contactId, address: message.address, at: now }]);
  return true;
}

export async function trackClick(env: Env_, claim: TrackingClaim<CampaignMessageRef>, now: number): Promise<boolean> {
  const message = (await onMessageShard(env, claim.panelId, (db) => countEngagement(db, claim, "click", now, claim.url)))?.found;
  if (!message) return false;
  await recordEmailEvents(env, [
    { panelId: message.panelId, event: "click", msgid: campaignMessageId(message.campaignId, message.contactId), campaignId: message.campaignId, contactId: message.contactId, address: message.address, detail: { url: claim.url }, at: now },
  ]);
  return true;
}

/**
 * Unsubscribes the recipient of a message; repeating it changes nothing. `at`: the database
 * holding the message and its contact (the unsubscribe page's RecipientView.contactDb, its
 * partition's, decision 0038); when absent, the home, then each other shard of the panel.
 */
export async function unsubscribeRecipient(env: Env_, claim: TrackingClaim<CampaignMessageRef>, now: number, proof?: (db: ShardDb) => Promise<D1PreparedStatement[]>, at?: ShardDb): Promise<boolean> {
  const found = at ? await markUnsubscribed(at, claim, now).then((marked) => (marked ? { db: at, found: marked } : null)) : await onMessageShard(env, claim.panelId, (db) => markUnsubscribed(db, claim, now));
  if (!found) return false;
  // The stop and its consent record go where the message is: its contact's shard.
  const { db, found: marked } = found;
  const { message, first } = marked;
  // The stop and its consent record (`proof`) are written together: never one without the other.
  if (message.address) await copyHomeStopsOf(env, db, [{ panelId: message.panelId, address: message.address, reason: "unsubscribe", campaignId: message.campaignId }], now);
  const writes = [...(message.address ? [suppressAddressStatement(db, message.panelId, message.address, "unsubscribe", message.campaignId, now)] : []), ...((await proof?.(db)) ?? [])];
  if (writes.length) await db.batch(writes);
  if (first) {
    await recordEmailEvents(env, [{ panelId: message.panelId, event: "unsubscribe", msgid: campaignMessageId(message.campaignId, message.contactId), campaignId: message.campaignId, contactId: message.contactId, address: message.address, at: now }]);
  }
  return true;
}

/** The provider names only its message id, so each shard is asked until one holds the message. */
export async function recordBounce(env: Env_, bounce: ProviderBounce, now: number): Promise<boolean> {
  for (const { db } of allShards(env)) {
    const message = await markBounced(db, bounce.providerMessageId, now);
    if (message) return bounced(env, db, message, bounce, now);
  }
  return false;
}

async function bounced(env: Env_, db: ShardDb, message: TrackedMessage, bounce: ProviderBounce, now: number): Promise<boolean> {
  if (bounce.permanent) {
    const addresses = bounce.addresses.length ? bounce.addresses : message.address ? [message.address] : [];
    await stopReportedAddresses(env, db, message, addresses, "hard_bounce", now);
  }
  await recordEmailEvents(env, [
    { panelId: message.panelId, event: "bounce", msgid: campaignMessageId(message.campaignId, message.contactId), campaignId: message.campaignId, contactId: message.contactId, address: message.address, detail: { ...bounce.detail, permanent: bounce.permanent }, at: now },
  ]);
  return true;
}

/** A complaint of a campaign email; false when no campaign email has that provider id. */
export async function recordComplaint(env: Env_, complaint: ProviderComplaint, now: number): Promise<boolean> {
  for (const { db } of allShards(env)) {
    const message = await sentMessageByProviderId(db, complaint.providerMessageId);
    if (!message) continue;
    // Mailbox providers' bulk-sender rules require stopping mail to a complainer, and keeping it
    // stopped: a complaint only the recipient lifts (domain/preferences.ts LIFTABLE_SUPPRESSIONS).
    const addresses = new Set([...complaint.addresses, ...(message.address ? [message.address] : [])]);
    await stopReportedAddresses(env, db, message, addresses, "complaint", now);
    const msgid = campaignMessageId(message.campaignId, message.contactId);
    // The guid keeps a notification SNS delivers again one event.
    await recordEmailEvents(env, [
      { panelId: message.panelId, event: "complaint", msgid, campaignId: message.campaignId, contactId: message.contactId, address: message.address, detail: complaint.detail, guid: `email:${msgid}:complaint`, at: now },
    ]);
    return true;
  }
  return false;
}
