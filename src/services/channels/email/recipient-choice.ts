import type { UnsubscribeFacts } from "../../../domain/unsubscribe-page";
import { getCampaign, getSentCampaignMessage } from "../../../store/campaigns";
import { getMessages } from "../../../store/journeys/messages";
import { getPanel } from "../../../store/panels";
import { liftUnsubscribe, suppressionOf, type SuppressionReason } from "../../../store/suppressions";
import { isJourneyClaim, type TrackingClaim } from "./tracking";

/**
 * What the unsubscribe page shows a recipient, from the message their link names: who sent
 * it (the panel, the sender's name and address) and whether the address is suppressed now;
 * and the way back, resubscribing an address that was unsubscribed (never a bounced one).
 */
export interface RecipientView {
  facts: UnsubscribeFacts;
  suppressed: SuppressionReason | null;
}

/** The sent message a link names, seen from the recipient; null when no such message was sent. */
export async function recipientOf(env: Pick<Env, "DB">, claim: TrackingClaim): Promise<RecipientView | null> {
  let sender: { name: string; address: string };
  let address: string | null;
  if (isJourneyClaim(claim)) {
    const message = (await getMessages(env.DB, claim.panelId, [claim.msgid])).get(claim.msgid);
    if (message?.channel !== "email" || message.status !== "sent") return null;
    const text = (value: unknown) => (typeof value === "string" ? value : "");
    sender = { name: text(message.content.sender_name), address: text(message.content.sender_email) };
    address = message.recipient?.trim().toLowerCase() ?? null;
  } else {
    const [campaign, message] = await Promise.all([getCampaign(env.DB, claim.panelId, claim.campaignId), getSentCampaignMessage(env.DB, claim)]);
    if (!campaign || !message) return null;
    sender = { name: campaign.senderName, address: campaign.senderEmail };
    address = message.address;
  }
  if (!address) return null;
  const [panel, suppressed] = await Promise.all([getPanel(env.DB, claim.panelId), suppressionOf(env.DB, claim.panelId, address)]);
  if (!panel) return null;
  return { facts: { panelName: panel.name, senderName: sender.name, senderAddress: sender.address, address }, suppressed };
}

/** Lifts the recipient's unsubscribe; a hard bounce stays. */
export async function resubscribe(env: Pick<Env, "DB">, view: RecipientView, panelId: string): Promise<boolean> {
  return liftUnsubscribe(env.DB, panelId, view.facts.address);
}
