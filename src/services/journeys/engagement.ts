import { panelHome } from "../access/shards";
import { firstOnShards, panelShards } from "../access/partitions";
import { allShards, type ShardDb } from "../../store/shards";
import { recordEmailEvents, type EmailEventKind } from "../pipeline/email-events";
import type { ProviderBounce, ProviderComplaint } from "../channels/email/provider";
import type { JourneyMessageRef, TrackingClaim } from "../channels/email/tracking";
import { getMessages, journeyEmailByProviderId, type JourneyMessage } from "../../store/journeys/messages";
import { suppressAddressStatement } from "../../store/suppressions";
import { stopReportedAddresses } from "../channels/email/reported-stops";
import { copyHomeStopsOf } from "../channels/email/home-stop-copies";
import { journeyEmailAddress } from "./messages";

/**
 * What recipients do with journey email, from its tracking links (the counterpart of
 * src/services/broadcasts/engagement.ts for campaign mail). Each open and each click becomes an email
 * event with the message's msgid and journey through the one pipeline, as
 * `POST /v1/events/email` reports them, so the waits for it end and the journey's webhook
 * fires. As for campaigns, only a message that was actually sent counts, and every open and
 * click is recorded (no dedupe). An unsubscribe suppresses the address in the panel and is
 * recorded once per message; so is a bounce the provider reports, which suppresses the address
 * when it is permanent, and a complaint (marked as spam), which suppresses it as a complaint.
 */

type TrackEnv = Env;

/** What the request of an open or click says about the reader (spec 2.8 `ip_addr`, `useragent`). */
export interface ReaderDetails {
  ip_addr?: string;
  user_agent?: string;
}

/**
 * The sent journey email a tracking claim names, and the database holding it: the home, or for
 * a panel with a partition map the shard of its contact's partition (decision 0038), each shard
 * of the panel asked (one read each; the home's alone for a panel without a map).
 */
async function claimShards(env: TrackEnv, panelId: string): Promise<ShardDb[]> {
  const { panel, db: home } = await panelHome(env, panelId);
  return panelShards(env, panel, home);
}

async function sentEmail(env: TrackEnv, claim: JourneyMessageRef, only?: ShardDb): Promise<{ db: ShardDb; message: JourneyMessage } | null> {
  const shards = only ? [only] : await claimShards(env, claim.panelId);
  const hit = await firstOnShards(shards, async (db) => {
    const message = (await getMessages(db, claim.panelId, [claim.msgid])).get(claim.msgid);
    return message?.channel === "email" && message.status === "sent" ? message : null;
  });
  return hit && { db: hit.db, message: hit.found };
}

async function record(env: TrackEnv, message: JourneyMessage, event: EmailEventKind, detail: Record<string, unknown>, now: number, guid?: string): Promise<void> {
  const address = journeyEmailAddress(message);
  await recordEmailEvents(env, [
    {
      panelId: message.panelId,
      event,
      msgid: message.msgid,
      campaignId: null,
      journeyId: message.journeyId,
      contactId: message.contactId,
      address: address || null,
      detail,
      at: now,
      ...(guid ? { guid } : {}),
    },
  ]);
}

export async function trackJourneyOpen(env: TrackEnv, claim: TrackingClaim<JourneyMessageRef>, reader: ReaderDetails, now: number): Promise<boolean> {
  const found = await sentEmail(env, claim);
  if (!found) return false;
  const { message } = found;
  await record(env, message, "open", { ...reader }, now);
  return true;
}

export async function trackJourneyClick(env: TrackEnv, claim: TrackingClaim<JourneyMessageRef>, reader: ReaderDetails, now: number): Promise<boolean> {
  const found = await sentEmail(env, claim);
  if (!found) return false;
  const { message } = found;
  await record(env, message, "click", { ...reader, url: claim.url }, now);
  return true;
}

/**
 * Unsubscribes the recipient of a journey message; repeating it changes nothing. `at`: the shard
 * the unsubscribe page found the message on (as for unsubscribeRecipient, broadcasts/engagement.ts).
 */
export async function unsubscribeJourneyRecipient(env: TrackEnv, claim: TrackingClaim<JourneyMessageRef>, now: number, proof?: (db: ShardDb) => Promise<D1PreparedStatement[]>, at?: ShardDb): Promise<boolean> {
  const found = await sentEmail(env, claim, at);
  if (!found) return false;
  // The stop goes where the message's sends read it (messages.ts): the contact's shard.
  const { db, message } = found;
  const address = journeyEmailAddress(message);
  // As for campaign mail (broadcasts/engagement.ts): the stop and its consent record in one batch.
  if (address) await copyHomeStopsOf(env, db, [{ panelId: message.panelId, address, reason: "unsubscribe", campaignId: null }], now);
  const writes = [...(address ? [suppressAddressStatement(db, message.panelId, address, "unsubscribe", null, now)] : []), ...((await proof?.(db)) ?? [])];
  if (writes.length) await db.batch(writes);
  // The guid keeps it one event per message, as campaign_messages.unsubscribed_at does for campaigns.
  await record(env, message, "unsubscribe", {}, now, `email:${message.msgid}:unsubscribe`);
  return true;
}

/** A bounce the provider reported for a journey email; false when no journey email has that provider id. */
export async function recordJourneyBounce(env: TrackEnv, bounce: ProviderBounce, now: number): Promise<boolean> {
  // The provider names only its message id: each shard is asked until one holds the message.
  for (const { db } of allShards(env)) {
    const message = await journeyEmailByProviderId(db, bounce.providerMessageId);
    if (message) return journeyBounced(env, db, message, bounce, now);
  }
  return false;
}

async function journeyBounced(env: TrackEnv, db: ShardDb, message: JourneyMessage, bounce: ProviderBounce, now: number): Promise<boolean> {
  if (bounce.permanent) {
    const address = journeyEmailAddress(message);
    const addresses = bounce.addresses.length ? bounce.addresses : address ? [address] : [];
    await stopReportedAddresses(env, db, { panelId: message.panelId, address, campaignId: null }, addresses, "hard_bounce", now);
  }
  // The guid keeps a report SNS delivers again one event; a transient bounce does not hide a later permanent one.
  const kind = bounce.permanent ? "permanent" : "transient";
  await record(env, message, "bounce", { ...bounce.detail, permanent: bounce.permanent }, now, `email:${message.msgid}:bounce:${kind}`);
  return true;
}

/** A complaint of a journey email; false when no journey email has that provider id. */
export async function recordJourneyComplaint(env: TrackEnv, complaint: ProviderComplaint, now: number): Promise<boolean> {
  for (const { db } of allShards(env)) {
    const message = await journeyEmailByProviderId(db, complaint.providerMessageId);
    if (!message) continue;
    // As for campaign mail (broadcasts/engagement.ts recordComplaint): stopped as an unsubscribe, one event per message.
    const address = journeyEmailAddress(message);
    await stopReportedAddresses(env, db, { panelId: message.panelId, address, campaignId: null }, [...complaint.addresses, ...(address ? [address] : [])], "complaint", now);
    await record(env, message, "complaint", complaint.detail, now, `email:${message.msgid}:complaint`);
    return true;
  }
  return false;
}
