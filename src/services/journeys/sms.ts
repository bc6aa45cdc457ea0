import { findPanelHome, forEachShard, panelDb } from "../access/shards";
import { panelSms, smsProviderOf, type SmsSettingsEnv } from "../channels/sms/settings";
import { shortenSmsLinks, SHORT_CODE } from "../channels/sms/links";
import type { SmsReceipt } from "../channels/sms/receipts";
import { recordEvents } from "../pipeline/record";
import type { AttributeValue } from "../../domain/attributes";
import { compileTemplate, personalize } from "../../domain/email-message";
import type { SmsStep } from "../../domain/journey";
import { phoneDigits, replyKeyword, smsLength } from "../../domain/sms";
import { randomHex } from "../../lib/random";
import { sendAll, type CronTask } from "../../lib/tasks";
import { finishMessage, getMessages, insertMessageStatement, UNKNOWN_SEND_OUTCOME, type JourneyMessage } from "../../store/journeys/messages";
import { allShards, type ShardDb } from "../../store/shards";
import {
  claimSms,
  getSmsTemplate,
  insertSmsLinkStatements,
  liftPhoneSuppression,
  overdueSms,
  phoneSuppression,
  recordSmsDelivery,
  releaseSms,
  smsByProviderId,
  smsLinkByCode,
  suppressPhone,
} from "../../store/sms";
import type { ReaderDetails } from "./engagement";

/**
 * Journey SMS. The step renders the message (template or text, merge tags, short links) and
 * records it in the step's D1 batch. Without a provider that is all (the outbox: status
 * `recorded`, delivered and click come back through `POST /v1/events/sms`). With one (Twilio
 * or MSG91, per panel) the message is recorded as waiting (`sending`, no claim) and a nudge on
 * the SENDS queue sends it: claimed first, so a redelivered nudge finds nothing to send; a
 * 5xx or 429 hands it back for a retry with backoff; a refusal is recorded as failed; an
 * attempt whose outcome is unknown (a timeout, a consumer that died) is never resent.
 * Receipts become `delivered` or `failed` events through the pipeline, once each.
 */

export interface SmsNudge {
  kind: "sms";
  panelId: string;
  msgid: string;
}

export function isSmsNudge(body: unknown): body is SmsNudge {
  const b = body as SmsNudge | null;
  return typeof b === "object" && b !== null && b.kind === "sms" && typeof b.panelId === "string" && typeof b.msgid === "string";
}

export async function enqueueSmsNudges(env: Pick<Env, "SENDS">, nudges: readonly SmsNudge[], delaySeconds = 0): Promise<void> {
  if (nudges.length) await sendAll(env.SENDS, nudges, delaySeconds);
}

export type JourneySmsEnv = SmsSettingsEnv & Pick<Env, "SENDS">;

/** What the step records for its SMS: the message row (and its short links), and the nudge that sends it. */
export interface PlannedSms {
  message: JourneyMessage;
  statements: D1PreparedStatement[];
  nudge: SmsNudge | null;
}

export async function planJourneySms(
  env: JourneySmsEnv,
  db: ShardDb,
  message: JourneyMessage,
  step: SmsStep,
  attributes: Readonly<Record<string, AttributeValue>>,
  now: number,
): Promise<PlannedSms> {
  const [sms, template] = await Promise.all([panelSms(env, db, message.panelId), step.template ? getSmsTemplate(db, message.panelId, step.template) : null]);
  const planned = (status: JourneyMessage["status"], content: Record<string, unknown>, error: string | null = null, statements: D1PreparedStatement[] = []): PlannedSms => {
    const m = { ...message, status, error, content: { ...message.content, ...content } };
    return { message: m, statements: [insertMessageStatement(db, m), ...statements], nudge: status === "sending" ? { kind: "sms", panelId: message.panelId, msgid: message.msgid } : null };
  };
  if (step.template && !template) return planned("failed", {}, `the SMS template "${step.template}" does not exist`);
  const source = template?.body ?? step.text ?? "";
  const shortened = await shortenSmsLinks(env, message.panelId, message.msgid, personalize(compileTemplate(source), attributes, "text"));
  const content: Record<string, unknown> = { body: shortened.text, length: smsLength(shortened.text) };
  if (template) Object.assign(content, { dlt_template_id: template.dltTemplateId, provider_template_id: template.providerTemplateId });
  const links = insertSmsLinkStatements(db, shortened.links, now);
  const phone = phoneDigits(message.recipient);
  if (phone && (await phoneSuppression(db, message.panelId, phone))) return planned("skipped", content, "the number is suppressed (it replied STOP or was stopped)");
  if (!sms) return planned("recorded", content, null, links);
  if (!phone) return planned("skipped", content, "the contact has no valid MOBILE");
  return planned("sending", content, null, links);
}

/** A claim not renewed for this long belongs to an attempt that died; its outcome is unknown. */
export const SMS_CLAIM_MS = 60_000;

/** Retry delays after throttling or a provider error: 5 s doubling up to 5 minutes. */
export function smsRetryDelaySeconds(attempt: number): number {
  return Math.min(300, 5 * 2 ** Math.max(0, attempt - 1));
}

export type SmsSendEnv = JourneySmsEnv & Env;

/**
 * Sends one queued SMS. Returns the seconds after which the nudge is to be retried (the
 * provider was throttled, down, or another attempt holds the message), or null when the
 * message is done with (sent, refused, skipped, or nothing to do).
 */
export async function sendQueuedSms(env: SmsSendEnv, nudge: SmsNudge, attempt: number, now = Date.now()): Promise<number | null> {
  const home = await findPanelHome(env, nudge.panelId);
  if (!home) return null;
  const { db } = home;
  const message = (await getMessages(db, nudge.panelId, [nudge.msgid])).get(nudge.msgid);
  if (!message || message.channel !== "sms" || message.status !== "sending") return null;
  const claim = randomHex(8);
  const claimed = await claimSms(db, nudge.panelId, nudge.msgid, claim, now, now - SMS_CLAIM_MS, UNKNOWN_SEND_OUTCOME);
  if (claimed === "done") return null;
  if (claimed === "held") return SMS_CLAIM_MS / 1000;
  const sms = await panelSms(env, db, nudge.panelId);
  if (!sms) return finish(db, message, claim, { status: "skipped", error: "the panel has no SMS provider any more" });
  const phone = phoneDigits(message.recipient);
  if (!phone) return finish(db, message, claim, { status: "skipped", error: "the contact has no valid MOBILE" });
  if (await phoneSuppression(db, message.panelId, phone)) return finish(db, message, claim, { status: "skipped", error: "the number is suppressed (it replied STOP or was stopped)" });
  const content = message.content as { body?: string; dlt_template_id?: string | null; provider_template_id?: string | null };
  const result = await smsProviderOf(env, sms).send({
    id: message.msgid,
    panelId: message.panelId,
    to: phone,
    text: content.body ?? "",
    dltTemplateId: content.dlt_template_id ?? null,
    providerTemplateId: content.provider_template_id ?? null,
  });
  if (result.ok) return finish(db, message, claim, { status: "sent", providerMessageId: result.providerMessageId });
  if (!result.retryable) {
    if (result.optedOut) await suppressPhone(db, message.panelId, phone, "provider", now);
    await finish(db, message, claim, { status: "failed", error: result.error });
    await recordSmsEvent(env, message, "failed", { provider: sms.record.provider, error: result.error }, now);
    return null;
  }
  const delay = smsRetryDelaySeconds(attempt);
  await releaseSms(db, message.msgid, claim, now + delay * 1000);
  console.error(`sms ${message.msgid}: ${result.error}; retried in ${delay} s`);
  return delay;
}

async function finish(db: ShardDb, message: JourneyMessage, claim: string, outcome: Parameters<typeof finishMessage>[3]): Promise<null> {
  await finishMessage(db, message.msgid, claim, outcome);
  return null;
}

/** One `delivered` or `failed` event per message (its guid), however often it is reported. */
function recordSmsEvent(env: Env, message: { panelId: string; msgid: string; contactId: number; journeyId: string }, name: "delivered" | "failed", params: Record<string, unknown>, now: number) {
  return recordEvents(env, { id: message.panelId }, [
    { channel: "sms", name, occurredAt: now, contactId: message.contactId, msgid: message.msgid, journeyId: message.journeyId, source: "provider", params, guid: `sms:${message.msgid}:${name}` },
  ]);
}

/**
 * Receipts of one panel's provider: each final one records the delivery on the message and its
 * event. An unknown message id changes nothing; a repeated receipt records nothing new; a
 * `failed` after `delivered` (or the reverse) is ignored: the first final word stays.
 */
export async function recordSmsReceipts(env: Env, db: ShardDb, panelId: string, receipts: readonly SmsReceipt[], now: number): Promise<{ matched: number }> {
  let matched = 0;
  for (const receipt of receipts) {
    const message = await smsByProviderId(db, panelId, receipt.providerMessageId);
    if (!message) continue;
    matched++;
    const phone = phoneDigits(message.recipient);
    if (receipt.optedOut && phone) await suppressPhone(db, panelId, phone, "provider", now);
    if (!receipt.outcome) continue;
    const current = await recordSmsDelivery(db, message.msgid, receipt.outcome, now);
    // Recorded again when it is the stored word: the event may not have been recorded the first time.
    if (current === receipt.outcome) await recordSmsEvent(env, { ...message, panelId }, receipt.outcome, receipt.detail, now);
  }
  return { matched };
}

/** A reply the provider passed on: STOP suppresses the number in the panel, START lifts a STOP. */
export async function recordSmsReply(db: ShardDb, panelId: string, from: string, body: string, now: number): Promise<"stop" | "start" | null> {
  const phone = phoneDigits(from);
  const keyword = replyKeyword(body);
  if (!phone || !keyword) return null;
  if (keyword === "stop") await suppressPhone(db, panelId, phone, "stop", now);
  else if ((await phoneSuppression(db, panelId, phone)) === "stop") await liftPhoneSuppression(db, panelId, phone);
  return keyword;
}

/**
 * GET /s/{code}: the link the SMS carried, or null for a code no message has. A visit records a
 * `click` of the message (each one, as email clicks are), unless `look` (HEAD: a link checker).
 * The code does not name the panel, so each shard is asked.
 */
export async function followSmsLink(env: Env, code: string, reader: ReaderDetails, look: boolean, now: number): Promise<string | null> {
  if (!SHORT_CODE.test(code)) return null;
  for (const { db } of allShards(env)) {
    const link = await smsLinkByCode(db, code);
    if (!link) continue;
    const message = (await getMessages(db, link.panelId, [link.msgid])).get(link.msgid);
    if (!look && message && (message.status === "sent" || message.status === "recorded")) {
      await recordEvents(env, { id: link.panelId }, [
        { channel: "sms", name: "click", occurredAt: now, contactId: message.contactId, msgid: message.msgid, journeyId: message.journeyId, source: "tracking", params: { ...reader, url: link.url } },
      ]);
    }
    return link.url;
  }
  return null;
}

/** How long an SMS may wait for its nudge before the cron sends another. */
const OVERDUE_MS = 2 * 60_000;

/** Cron: SMS waiting for their provider whose nudge was lost (the step's send failed, or the queue dropped it) are nudged again. */
export const redriveWaitingSms: CronTask = {
  name: "sms-redrive",
  async run(env, now) {
    await forEachShard(env, "sms-redrive", async (db) => {
      const overdue = await overdueSms(db, now - OVERDUE_MS, 500);
      await enqueueSmsNudges(
        env,
        overdue.map((m) => ({ kind: "sms", ...m })),
      );
    });
  },
};

/** A dead-lettered SMS nudge: the message is handed back to the queue after a pause while it still waits. */
export async function redriveDeadSms(env: Env, nudge: SmsNudge): Promise<string> {
  const db = await panelDb(env, nudge.panelId);
  const message = (await getMessages(db, nudge.panelId, [nudge.msgid])).get(nudge.msgid);
  if (message?.status !== "sending") return "nothing left: the message is not waiting";
  await enqueueSmsNudges(env, [nudge], 60);
  return "nudged again in 60 s";
}
