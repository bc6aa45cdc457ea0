import { broadcastAnswer, type BroadcastRequest } from "../../domain/broadcast";
import { succeeded, type Result } from "../../lib/problems";
import { sendNotification } from "../channels/notifications";
import { createBroadcast, type BroadcastContext, type CreatedBroadcast } from "./create";

export interface PublishedUpload extends CreatedBroadcast {
  /** The answer's sentence: when it is scheduled, the list made, the import under way. */
  message: string;
}

/**
 * CONTRACT 4.10 upload_contact_and_publish: the broadcast is created (its list, the import of
 * its contacts, its schedule), then its answer is mailed to each notify_me address. Refused as
 * createBroadcast refuses; a refused request mails nothing, otherwise every API key would relay
 * mail to any address.
 */
export async function uploadContactsAndPublish(ctx: BroadcastContext, request: BroadcastRequest): Promise<Result<PublishedUpload>> {
  const created = await createBroadcast(ctx, request);
  if (!created.ok) return created;
  const { campaignId, listId, importJobId, senderNote } = created.value;
  const message =
    `Campaign scheduled for ${request.scheduleLocal} (${ctx.panel.timezone}); ` +
    `list ${listId} created; its contacts are being imported (job ${importJobId})` +
    (senderNote ? `. Note: ${senderNote}` : "");
  await notifyScheduled(ctx, request.notify, broadcastAnswer(ctx.requestId, true, campaignId, message));
  return succeeded({ ...created.value, message });
}

/** The notify_me copy of the answer: only what the service wrote (ids, the schedule), never text the caller chose. */
async function notifyScheduled(ctx: BroadcastContext, to: readonly string[], answer: ReturnType<typeof broadcastAnswer>): Promise<void> {
  if (to.length === 0) return;
  await sendNotification(ctx.env, {
    panelId: ctx.panel.id,
    kind: "broadcast_notify",
    to: [...to],
    subject: `Campaign ${answer.CampaignID} scheduled`,
    text: JSON.stringify(answer, null, 2),
    dedupeKey: `broadcast:${ctx.requestId}`,
    capped: true,
  });
}
