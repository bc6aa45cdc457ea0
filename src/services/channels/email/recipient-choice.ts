import type { UnsubscribeFacts } from "../../../domain/unsubscribe-page";
import { LIFTABLE_SUPPRESSIONS, type ChannelPreferences, type PreferencesChange } from "../../../domain/preferences";
import { getCampaign } from "../../../store/campaigns/definitions";
import { getSentCampaignMessage } from "../../../store/campaigns/messages";
import { contactsByIds } from "../../../store/contacts";
import { changeContactPreferences, contactPreferences } from "../preferences";
import { getMessages } from "../../../store/journeys/messages";
import { getTopic } from "../../../store/topics";
import { liftSuppressionStatement, suppressionHereOrHome, type SuppressionReason } from "../../../store/suppressions";
import type { ShardDb } from "../../../store/shards";
import { firstOnShards, panelShards, type PanelShards } from "../../access/partitions";
import { liftOnOtherShards } from "../stop-lifts";
import { findPanelHome } from "../../access/shards";
import { isJourneyClaim, type TrackingClaim } from "./tracking";

/**
 * What the unsubscribe page shows a recipient, from the message their link names: who sent
 * it (the panel, the sender's name and address) and whether the address is suppressed now;
 * and the way back, resubscribing an address that was unsubscribed or complained about (the
 * recipient asks; never a bounced one).
 */
export interface RecipientView {
  facts: UnsubscribeFacts;
  suppressed: SuppressionReason | null;
  /** The contact the message went to. */
  contactId: number;
  /**
   * The database holding that contact and the message, its partition's (decision 0038): where
   * its channels, topics and their consent records are read and written. The home for a panel
   * without a map.
   */
  contactDb: ShardDb;
  /** Every shard of the panel (panelShards: the home first), where a lift of the address's stop reaches too (stop-lifts.ts). */
  shards: PanelShards;
}

/** The sent message a link names, seen from the recipient; null when no such message was sent. */
export async function recipientOf(env: Env, claim: TrackingClaim): Promise<RecipientView | null> {
  const home = await findPanelHome(env, claim.panelId);
  if (!home) return null;
  const { panel, db } = home;
  let sender: { name: string; address: string };
  let address: string | null;
  let contactId: number;
  let topicId: string | null = null;
  // A message is kept with its contact, on the contact's partition (moved with it by a split,
  // decision 0047): the home first, then each other shard of the panel until one has it.
  const shards = panelShards(env, panel, db);
  let contactDb = db;
  const onShards = async <T>(read: (shard: ShardDb) => Promise<T | null | undefined>): Promise<T | null> => {
    const hit = await firstOnShards(shards, read);
    if (hit) contactDb = hit.db;
    return hit?.found ?? null;
  };
  if (isJourneyClaim(claim)) {
    const message = await onShards(async (shard) => (await getMessages(shard, claim.panelId, [claim.msgid])).get(claim.msgid));
    if (message?.channel !== "email" || message.status !== "sent") return null;
    const text = (value: unknown) => (typeof value === "string" ? value : "");
    sender = { name: text(message.content.sender_name), address: text(message.content.sender_email) };
    address = message.recipient?.trim().toLowerCase() ?? null;
    contactId = message.contactId;
    // The step's topic travels in the message's content (domain/journey.ts).
    topicId = typeof message.content.topic === "string" ? message.content.topic : null;
  } else {
    const [campaign, message] = await Promise.all([getCampaign(db, claim.panelId, claim.campaignId), onShards((shard) => getSentCampaignMessage(shard, claim))]);
    if (!campaign || !message) return null;
    sender = { name: campaign.senderName, address: campaign.senderEmail };
    address = message.address;
    contactId = claim.contactId;
    topicId = campaign.topicId;
  }
  if (!address) return null;
  // The address's stop: the contact's own is kept on its partition's shard (as the preference page
  // writes it), one written elsewhere may be on the home alone (decision 0038); the stricter holds.
  const [suppressed, topic] = await Promise.all([suppressionHereOrHome(contactDb, db, claim.panelId, address), topicId === null ? null : getTopic(db, claim.panelId, topicId)]);
  const facts: UnsubscribeFacts = { panelName: panel.name, senderName: sender.name, senderAddress: sender.address, address };
  // A deleted topic is offered no more: the page unsubscribes from everything, as for any message.
  if (topic) facts.topic = { id: topic.id, name: topic.name };
  return { facts, suppressed, contactId, contactDb, shards };
}

/**
 * Lifts the recipient's unsubscribe or complaint (they ask for the mail again); a hard bounce
 * stays. `proof`, the consent record, is written in the same batch, both on the contact's
 * partition's shard; the panel's other shards' stops of the address are lifted before it (stop-lifts.ts).
 */
export async function resubscribe(view: RecipientView, panelId: string, proof?: (db: ShardDb) => Promise<D1PreparedStatement[]>): Promise<boolean> {
  const db = view.contactDb;
  const liftOn = (shard: ShardDb) => liftSuppressionStatement(shard, panelId, view.facts.address, LIFTABLE_SUPPRESSIONS.recipient);
  const elsewhere = await liftOnOtherShards(view.shards, db, [liftOn]);
  const lift = liftOn(db);
  const writes = [...(lift ? [lift] : []), ...((await proof?.(db)) ?? [])];
  if (!writes.length) return elsewhere;
  const [lifted] = await db.batch(writes);
  return elsewhere || (lift !== null && lifted!.meta.changes > 0);
}

/**
 * The preference page's contact and its channels (services/contacts/preferences.ts); null when
 * the contact is gone (erased). `change` applies the page's form first, with `proof`, the consent
 * records of the channels it changed, in the same batch.
 */
export async function recipientPreferences(
  env: Env,
  claim: TrackingClaim,
  view: RecipientView,
  change?: PreferencesChange,
  proof?: (db: ShardDb, changed: PreferencesChange) => Promise<D1PreparedStatement[]>,
): Promise<ChannelPreferences | null> {
  const db = view.contactDb;
  const contact = (await contactsByIds(db, claim.panelId, [view.contactId])).get(view.contactId);
  if (!contact) return null;
  const reached = { id: view.contactId, attributes: contact.attributes };
  if (!change) return contactPreferences(db, view.shards[0], claim.panelId, reached);
  const outcome = await changeContactPreferences(db, view.shards, claim.panelId, reached, change, Date.now(), "recipient", undefined, proof && ((changed) => proof(db, changed)));
  return outcome.ok ? outcome.value : contactPreferences(db, view.shards[0], claim.panelId, reached);
}
