import { emailProvider, type ProviderEnv } from "../channels/email/provider";
import type { AttributeValue } from "../domain/attributes";
import { isEmailAddress } from "../domain/broadcast";
import { buildMime, compileTemplate, personalize } from "../domain/email-message";
import type { EmailStep } from "../domain/journey";
import { claimMessage, finishMessage, insertMessageStatement, isAddressSuppressed, releaseMessage, type JourneyMessage } from "../store/journeys";

/**
 * Where the messages of journeys leave the engine. Each is keyed by its msgid
 * (`<instance>.<step>`), so a step run twice sends or records one message.
 *
 * sms, apn, bpn: the outbox channel is the default for them (CONTRACT 5): the message and its
 * msgid are recorded (a statement of the step's D1 batch); their delivered and click come
 * back through `POST /v1/events/{channel}`.
 */
export function outboxMessageStatements(db: D1Database, message: JourneyMessage): D1PreparedStatement[] {
  return [insertMessageStatement(db, message)];
}

export type JourneyEmailEnv = ProviderEnv & Pick<Env, "DB">;

/**
 * email: sent through the broadcast capability's email provider (outbox or SES, by
 * EMAIL_PROVIDER) with merge tags filled, unless the address is missing, invalid or
 * suppressed (unsubscribed or hard-bounced in the panel). The message row is claimed first,
 * so a step run twice sends once; a provider that is down hands the claim back and the
 * step's retry sends it.
 *
 * SEAM (email tracking): journey email carries no open pixel or rewritten links yet, because
 * the tracking tokens of src/channels/email/tracking.ts name a campaign and the /t/ handlers
 * count on campaign rows. Its open, click and bounce are reported through
 * `POST /v1/events/email` with the msgid. To wire tracking: sign claims that name the journey
 * message and let /t/o and /t/c record the event with this msgid through recordEvents. The
 * List-Unsubscribe header points to a mailto: of the sender for the same reason.
 */
export async function sendJourneyEmail(env: JourneyEmailEnv, message: JourneyMessage, step: EmailStep, attributes: Readonly<Record<string, AttributeValue>>, now: number): Promise<void> {
  if (!(await claimMessage(env.DB, message))) return;
  const address = (message.recipient ?? "").trim().toLowerCase();
  if (!isEmailAddress(address)) return finishMessage(env.DB, message.msgid, "skipped", "the contact has no valid EMAIL");
  if (await isAddressSuppressed(env.DB, message.panelId, address)) return finishMessage(env.DB, message.msgid, "skipped", "the address is suppressed");
  const subject = personalize(compileTemplate(step.subject), attributes, false);
  const raw = buildMime({
    from: { name: step.sender_name, address: step.sender_email },
    to: address,
    subject,
    html: personalize(compileTemplate(step.html), attributes, true),
    messageId: message.msgid,
    date: now,
    unsubscribeUrl: `mailto:${step.sender_email}?subject=unsubscribe`,
    headers: { "X-Journey-ID": message.journeyId },
  });
  let result;
  try {
    [result] = await emailProvider(env).send([{ id: message.msgid, panelId: message.panelId, campaignId: null, from: step.sender_email, to: address, subject, raw }], now);
  } catch (error) {
    await releaseMessage(env.DB, message.msgid);
    throw error;
  }
  if (result?.ok) return finishMessage(env.DB, message.msgid, "sent", null);
  if (result && !result.retryable) return finishMessage(env.DB, message.msgid, "failed", result.error);
  await releaseMessage(env.DB, message.msgid);
  throw new Error(`journey email ${message.msgid}: ${result?.error ?? "no result from the provider"}; retried`);
}
