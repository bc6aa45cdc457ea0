import { panelDb } from "../access/shards";
import { recordEvents } from "../pipeline/record";
import type { ProviderEnv } from "../channels/email/provider";
import { emailProvider } from "../channels/email/providers";
import { planSender } from "../channels/email/signing";
import { TrackingSigner, trackedMime } from "../channels/email/tracking";
import { trackingBaseUrl } from "../channels/email/tracking-domains";
import type { AttributeValue } from "../../domain/attributes";
import { isEmailAddress } from "../../domain/email";
import { mergeTagNames, mergeValuesOf, personalize } from "../../domain/merge-tags";
import { textOfHtml } from "../../domain/email-text";
import type { EmailStep } from "../../domain/journey";
import { emailAddressOf, NO_SENDERS, sendSkipOf } from "../../domain/send-skips";
import { randomHex } from "../../lib/random";
import { config } from "../../lib/config";
import { metrics } from "../../lib/observability/metrics";
import { claimMessage, finishMessage, markMessageAttempt, releaseMessage, type JourneyMessage } from "../../store/journeys/messages";
import { getPanel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { suppressionHereOrHome } from "../../store/suppressions";
import { messageOutcomeEvent } from "./queued-sends";

/**
 * Journey email. Each message is keyed by its msgid (`<instance>.<step>`), so a step run twice
 * sends or records one message. (SMS: sms.ts; push: push.ts.)
 */
export type JourneyEmailEnv = ProviderEnv;

/** The address a journey email goes to, as it was sent (and as suppression keys it). */
export function journeyEmailAddress(message: Pick<JourneyMessage, "recipient">): string {
  return emailAddressOf(message.recipient ?? "");
}

/** A journey email's claim not renewed for this long belongs to an attempt that died. */
export const MESSAGE_CLAIM_MS = 60_000;

/**
 * email: sent through the broadcast capability's email provider (outbox or SES, by
 * EMAIL_PROVIDER) with merge tags filled, unless the address is missing, invalid or
 * suppressed (unsubscribed, complained or hard-bounced in the panel). The message row is claimed first,
 * so a step run twice sends once; a provider that is down hands the claim back and the
 * step's retry sends it. An attempt that died holding the claim is redone once the claim is
 * stale where nothing provably reached the provider, and settled as failed with an unknown
 * outcome otherwise (SES has no idempotency key: at most once). While another attempt holds
 * the claim, the step fails and is retried, so its point is not continued without the mail.
 *
 * Tracked as campaign email is (the same rendering): open pixel, rewritten links and a
 * one-click unsubscribe link, their tokens naming this message's msgid. /t/o and /t/c record
 * the open or click with this msgid (src/services/journeys/engagement.ts), which ends the waits for it.
 */
export async function sendJourneyEmail(
  env: JourneyEmailEnv,
  message: JourneyMessage,
  step: EmailStep,
  attributes: Readonly<Record<string, AttributeValue>>,
  now: number,
  /** Where the message (and its contact) is: a partition's shard (decision 0038); absent: the home. */
  messageDb?: ShardDb,
): Promise<void> {
  // The panel's senders and tracking domains are on its home.
  const home = await panelDb(env, message.panelId);
  const db = messageDb ?? home;
  const provider = emailProvider(env);
  const claim = randomHex(8);
  const subject = personalize(step.subject, attributes, "plain");
  const textSource = step.text ?? textOfHtml(step.html);
  // The message keeps its step's templates (content); with the subject it went with and the
  // values its tags were filled with, the log shows that subject and its copy is rendered again.
  const rendered = { ...message, content: { ...message.content, subject_line: subject, merge_values: mergeValuesOf(attributes, mergeTagNames(step.subject, step.html, textSource)) } };
  const claimed = await claimMessage(db, rendered, claim, now, now - MESSAGE_CLAIM_MS, provider.idempotent);
  if (claimed === "done") return;
  if (claimed === "held") throw new Error(`journey email ${message.msgid} is being sent by another attempt; retried`);
  const address = journeyEmailAddress(message);
  // The skip rule the simulation applies too (domain/send-skips.ts). On a partition's shard the
  // home's stops count too, as for a campaign's part there (broadcasts/send.ts).
  const skip = sendSkipOf("email", address, { emailSuppression: isEmailAddress(address) ? await suppressionHereOrHome(db, home, message.panelId, address) : null }, NO_SENDERS);
  if (skip) return finishMessage(db, message.msgid, claim, { status: "skipped", error: skip.error });
  let raw: string;
  let note: string | undefined;
  try {
    const sender = await planSender(env, home, provider, message.panelId, step.sender_email);
    if (!sender.ok) return failMessage(env, db, message, claim, { provider: provider.name, error: sender.error }, now);
    note = sender.note;
    const panel = await getPanel(env.DB, message.panelId);
    const facts = { senderName: step.sender_name, senderAddress: step.sender_email, panelName: panel?.name ?? step.sender_name };
    const unsigned = await trackedMime(new TrackingSigner(config(env).secretsKey), await trackingBaseUrl(env, home, message.panelId), { panelId: message.panelId, msgid: message.msgid }, facts, {
      from: { name: step.sender_name, address: step.sender_email },
      to: address,
      subject,
      html: personalize(step.html, attributes, "html"),
      text: personalize(textSource, attributes, "text"),
      messageId: message.msgid,
      date: now,
      headers: { "X-Journey-ID": message.journeyId },
    });
    raw = await sender.sign(unsigned, now);
  } catch (error) {
    await releaseMessage(db, message.msgid, claim);
    throw error;
  }
  if (!provider.idempotent && !(await markMessageAttempt(db, message.msgid, claim, now))) {
    throw new Error(`journey email ${message.msgid}: the claim went stale and was taken by another attempt`);
  }
  let result;
  try {
    [result] = await provider.send(
      [{ id: message.msgid, panelId: message.panelId, campaignId: null, from: step.sender_email, to: address, subject, raw, ...(note ? { note } : {}), contact: { id: message.contactId, db } }],
      now,
    );
  } catch (error) {
    // Resending is harmless only with an idempotent provider; otherwise the claim runs out and is settled.
    if (provider.idempotent) await releaseMessage(db, message.msgid, claim);
    throw error;
  }
  if (result?.ok) {
    metrics(env).message("email", "sent");
    return finishMessage(db, message.msgid, claim, { status: "sent", providerMessageId: result.providerMessageId });
  }
  if (result && !result.retryable) {
    metrics(env).message("email", "failed");
    return failMessage(env, db, message, claim, { provider: provider.name, error: result.error }, now);
  }
  await releaseMessage(db, message.msgid, claim);
  throw new Error(`journey email ${message.msgid}: ${result?.error ?? "no result from the provider"}; retried`);
}

/**
 * A journey email refused for good (by the provider, or for its sender): failed, with the
 * `failed` event SMS and push refusals record. The event first: if recording it fails, the
 * message is still claimed and the step's retry records it (its guid keeps it to one).
 */
async function failMessage(env: JourneyEmailEnv, db: ShardDb, message: JourneyMessage, claim: string, reason: { provider: string; error: string }, now: number): Promise<void> {
  await recordEvents(env, { id: message.panelId }, [messageOutcomeEvent(message, "failed", reason, now)]);
  await finishMessage(db, message.msgid, claim, { status: "failed", error: reason.error });
}
