import { firstOnShards } from "../access/partitions";
import type { AttributeValue } from "../../domain/attributes";
import { withoutLinkMarks } from "../../domain/email-message";
import { personalize, type Template } from "../../domain/merge-tags";
import { refusedField, succeeded, type Result } from "../../lib/problems";
import { getCampaign } from "../../store/campaigns/definitions";
import { getCampaignMessage } from "../../store/campaigns/messages";
import { getMessages } from "../../store/journeys/messages";
import type { ShardDb } from "../../store/shards";
import { campaignTemplates, contentOf } from "./send";

/**
 * The copy of an email as its recipient got it, for message logs and the contact page. Not
 * stored per message: a message keeps its filled subject and the values its merge tags were
 * filled with (a few bytes), and its template is kept already (a campaign's body in R2, a
 * journey email's step in its message row), so the same renderer fills it again exactly. Shown
 * without tracking: links go where they point, no open pixel (viewing it is not an open), and
 * the unsubscribe and preference links are inert.
 */
export interface MessageCopy {
  messageId: string;
  kind: "campaign" | "journey";
  /** The campaign's or the journey's id. */
  sourceId: string;
  to: string | null;
  subject: string;
  html: string;
  sentAt: number | null;
}

/** Which messages have a copy: email that went to the provider. */
export function hasRenderedCopy(message: { channel: string; status?: string | undefined }): boolean {
  return message.channel === "email" && message.status === "sent";
}

const INERT_LINK = "#";

function renderCopy(html: Template | string, values: Readonly<Record<string, AttributeValue>> | null): string {
  return withoutLinkMarks(personalize(html, values ?? {}, "html"), INERT_LINK);
}

/**
 * A message by its id: a journey message's msgid, or `<campaign>.<contact>` for a campaign's.
 * `shards`: where the message may be, the home (`db`) first, then the other shards of
 * the panel's partitions (panelShards), asked in turn until one has it (decision 0038 step 4).
 */
export async function messageCopy(files: R2Bucket, db: ShardDb, panelId: string, messageId: string, shards: readonly ShardDb[] = [db]): Promise<Result<MessageCopy>> {
  const noCopy = (why: string) => refusedField<MessageCopy>("not_found", "message", why);
  // A journey message is kept on its contact's shard too: asked of each in turn, as a campaign's.
  const journeyMessage = (await firstOnShards(shards, async (shard) => (await getMessages(shard, panelId, [messageId])).get(messageId)))?.found;
  if (journeyMessage) {
    if (!hasRenderedCopy(journeyMessage)) return noCopy(`message "${messageId}" has no copy: only sent email has one (it is ${journeyMessage.channel}, ${journeyMessage.status})`);
    const content = journeyMessage.content as { subject?: unknown; subject_line?: unknown; html?: unknown; merge_values?: Record<string, AttributeValue> | null };
    const subject = typeof content.subject_line === "string" ? content.subject_line : typeof content.subject === "string" ? content.subject : "";
    return succeeded({
      messageId,
      kind: "journey",
      sourceId: journeyMessage.journeyId,
      to: journeyMessage.recipient,
      subject,
      html: renderCopy(typeof content.html === "string" ? content.html : "", content.merge_values ?? null),
      sentAt: journeyMessage.createdAt,
    });
  }
  const dot = messageId.lastIndexOf(".");
  const contactId = Number(messageId.slice(dot + 1));
  const campaignId = messageId.slice(0, Math.max(dot, 0));
  const [message, campaign] =
    dot > 0 && Number.isSafeInteger(contactId) && contactId > 0
      ? await Promise.all([firstOnShards(shards, (shard) => getCampaignMessage(shard, panelId, campaignId, contactId)).then((hit) => hit?.found ?? null), getCampaign(db, panelId, campaignId)])
      : [null, null];
  if (!message || !campaign) return noCopy(`no message with id "${messageId}" in this panel`);
  if (!hasRenderedCopy({ channel: "email", status: message.status })) return noCopy(`message "${messageId}" has no copy: it was not sent (it is ${message.status})`);
  // An A/B test's recipient got its variant's body (and subject, kept with the message).
  const content = contentOf(campaign, message.variant);
  const { html } = await campaignTemplates(files, content);
  return succeeded({
    messageId,
    kind: "campaign",
    sourceId: campaignId,
    to: message.address,
    subject: message.subject ?? content.subject,
    html: renderCopy(html, message.mergeValues),
    sentAt: message.sentAt,
  });
}
