import { findPanelHome } from "../access/shards";
import { namedPanelShard, panelShards } from "../access/partitions";
import { panelSms, smsProviderOf, type SmsSettingsEnv } from "../channels/sms/settings";
import { shortenSmsLinks, SHORT_CODE } from "../channels/sms/links";
import type { SmsReceipt } from "../channels/sms/receipts";
import { liftSmsStop, suppressSms, suppressSmsElsewhere, suppressSmsStatement } from "../channels/sms/suppressions";
import { recordEvents } from "../pipeline/record";
import type { AttributeValue } from "../../domain/attributes";
import { personalize } from "../../domain/merge-tags";
import type { SmsStep } from "../../domain/journey";
import { phoneDigits, replyKeyword, smsLength } from "../../domain/sms";
import { NO_MOBILE, NO_SENDERS, PHONE_STOPPED, sendSkipOf } from "../../domain/send-skips";
import { randomHex } from "../../lib/random";
import { settleEach } from "../../lib/tasks";
import type { NewEvent } from "../../domain/events";
import {
  getMessages,
  insertMessageStatement,
  releaseClaimedStatement,
  settleClaimedStatement,
  UNKNOWN_SEND_OUTCOME,
  type ClaimedMessage,
  type JourneyMessage,
} from "../../store/journeys/messages";
import { allShards, type ShardDb } from "../../store/shards";
import { claimSmsBatch, getSmsTemplate, insertSmsLinkStatements, phoneSuppression, recordSmsDelivery, smsByProviderIds, smsLinkByCode, type ReceiptMessage } from "../../store/sms";
import type { ReaderDetails } from "./engagement";
import { metrics } from "../../lib/observability/metrics";
import {
  enqueueNudges,
  isQueuedNudge,
  messageOutcomeEvent,
  outcomeList,
  QUEUED_CLAIM_MS,
  redriveWaiting,
  sendNudges,
  sendRetryDelaySeconds,
  type Limit,
  type NudgeDelivery,
  type QueuedNudge,
} from "./queued-sends";

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

export type SmsNudge = QueuedNudge<"sms">;

export const isSmsNudge = (body: unknown): body is SmsNudge => isQueuedNudge(body, "sms");

/** Nudges for these messages of one panel. */
export function enqueueSms(env: Pick<Env, "SENDS">, panelId: string, msgids: readonly string[], delaySeconds = 0, shard?: number): Promise<void> {
  return enqueueNudges(env, "sms", panelId, msgids, delaySeconds, shard);
}

export type JourneySmsEnv = SmsSettingsEnv & Pick<Env, "SENDS">;

/** What the step records for its SMS: the message row (and its short links), and whether it waits for a nudge to the provider. */
export interface PlannedSms {
  message: JourneyMessage;
  statements: D1PreparedStatement[];
  /** The message's insert (first of `statements`): what it returns tells whether it was recorded. */
  insert: D1PreparedStatement;
  queued: boolean;
}

export async function planJourneySms(
  env: JourneySmsEnv,
  db: ShardDb,
  message: JourneyMessage,
  step: SmsStep,
  attributes: Readonly<Record<string, AttributeValue>>,
  now: number,
  /** Where the panel's SMS setup and templates are: its home, when `db` is a partition's shard (decision 0038). */
  config: ShardDb = db,
): Promise<PlannedSms> {
  const [sms, template] = await Promise.all([panelSms(env, config, message.panelId), step.template ? getSmsTemplate(config, message.panelId, step.template) : null]);
  const planned = (status: JourneyMessage["status"], content: Record<string, unknown>, error: string | null = null, statements: D1PreparedStatement[] = []): PlannedSms => {
    const m = { ...message, status, error, content: { ...message.content, ...content } };
    const insert = insertMessageStatement(db, m);
    return { message: m, statements: [insert, ...statements], insert, queued: status === "sending" };
  };
  if (step.template && !template) return planned("failed", {}, `the SMS template "${step.template}" does not exist`);
  const source = template?.body ?? step.text ?? "";
  const shortened = await shortenSmsLinks(env, message.panelId, message.msgid, personalize(source, attributes, "plain"));
  const content: Record<string, unknown> = { body: shortened.text, length: smsLength(shortened.text) };
  if (template) Object.assign(content, { dlt_template_id: template.dltTemplateId, provider_template_id: template.providerTemplateId });
  const links = insertSmsLinkStatements(db, shortened.links, now);
  const phone = phoneDigits(message.recipient);
  if (phone) content.to = phone;
  // The skip rule the simulation applies too (domain/send-skips.ts); without a provider the outbox records the message.
  const stopped = phone !== null && (await phoneSuppression(db, message.panelId, phone)) !== null;
  const skip = sendSkipOf("sms", message.recipient ?? "", { phoneStopped: stopped }, { ...NO_SENDERS, sms: sms !== null });
  if (skip) return planned("skipped", content, skip.error);
  return sms ? planned("sending", content, null, links) : planned("recorded", content, null, links);
}

export type SmsSendEnv = JourneySmsEnv & Env;

/**
 * Sends the queued SMS a batch of nudges names, panel by panel: one round trip claims them
 * (and reads which numbers are suppressed), the provider calls run side by side, one round
 * trip records their outcomes. Returns, per nudge, the seconds after which it is to be retried
 * (a message of it met a throttled or failing provider, or another attempt holds one), or null
 * when all its messages are done with (sent, refused, skipped, or nothing to do). A retried
 * nudge sends only what is still waiting.
 */
export function sendQueuedSmsBatch(env: SmsSendEnv, deliveries: readonly NudgeDelivery<"sms">[], now = Date.now()): Promise<Array<number | null>> {
  return sendNudges(deliveries, (panelId, attempts, limit, shard) => sendPanelSms(env, panelId, attempts, now, limit, shard));
}

/** One message, as sendQueuedSmsBatch sends it. */
export async function sendQueuedSms(env: SmsSendEnv, panelId: string, msgid: string, attempt: number, now = Date.now()): Promise<number | null> {
  const [retry] = await sendQueuedSmsBatch(env, [{ nudge: { kind: "sms", panelId, msgids: [msgid] }, attempt }], now);
  return retry ?? null;
}

async function sendPanelSms(env: SmsSendEnv, panelId: string, attempts: ReadonlyMap<string, number>, now: number, limit: Limit, shard?: number): Promise<Map<string, number>> {
  const retries = new Map<string, number>();
  const home = await findPanelHome(env, panelId);
  if (!home) return retries;
  // The messages are on the shard the nudge names (their contacts' partition's); the setup on the home.
  const { db } = namedPanelShard(env, home.panel, shard);
  const claim = randomHex(8);
  const [sms, { claimed, held, suppressed }] = await Promise.all([
    panelSms(env, home.db, panelId),
    claimSmsBatch(db, panelId, [...attempts.keys()], claim, now, now - QUEUED_CLAIM_MS, UNKNOWN_SEND_OUTCOME),
  ]);
  for (const msgid of held) retries.set(msgid, QUEUED_CLAIM_MS / 1000);
  if (claimed.length === 0) return retries;
  const statements: D1PreparedStatement[] = [];
  const failed: Array<{ message: ClaimedMessage; error: string }> = [];
  const optedOut = new Set<string>();
  const { outcomes, settle } = outcomeList();
  const provider = sms ? smsProviderOf(env, sms) : null;
  const settled = await settleEach(claimed, claimed.length, async (message) => {
      const content = message.content as { to?: string; body?: string; dlt_template_id?: string | null; provider_template_id?: string | null };
      const phone = content.to ?? phoneDigits(message.recipient);
      if (!provider) return settle(message, { status: "skipped", error: "the panel has no SMS provider any more" });
      if (!phone) return settle(message, { status: "skipped", error: NO_MOBILE });
      // Rows without `to` were not covered by the claim's suppression read.
      if (suppressed.has(phone) || (!content.to && (await phoneSuppression(db, panelId, phone)))) return settle(message, { status: "skipped", error: PHONE_STOPPED });
      const result = await limit.run(() => provider.send({
        id: message.msgid,
        panelId,
        to: phone,
        text: content.body ?? "",
        dltTemplateId: content.dlt_template_id ?? null,
        providerTemplateId: content.provider_template_id ?? null,
      }));
      if (result.ok) {
        metrics(env).message("sms", "sent");
        return settle(message, { status: "sent", providerMessageId: result.providerMessageId });
      }
      if (!result.retryable) {
        metrics(env).message("sms", "failed");
        if (result.optedOut) {
          statements.push(suppressSmsStatement(db, panelId, phone, "provider", now));
          optedOut.add(phone);
        }
        failed.push({ message, error: result.error });
        return settle(message, { status: "failed", error: result.error });
      }
      const delay = sendRetryDelaySeconds(attempts.get(message.msgid) ?? 1);
      console.error(`sms ${message.msgid}: ${result.error}; retried in ${delay} s`);
      retries.set(message.msgid, delay);
      statements.push(releaseClaimedStatement(db, message.msgid, claim, now + delay * 1000));
  });
  // Outcomes known are recorded even when one message's work failed; that one's claim runs out (unknown outcome).
  if (outcomes.length) statements.push(settleClaimedStatement(db, claim, outcomes));
  if (statements.length) await db.batch(statements);
  // After the outcomes, which must not wait on other shards. Not thrown: a retried nudge finds
  // nothing claimed, so the failed events below would be lost; the provider refuses the
  // number's next send on a shard missed here, which stops it there.
  try {
    await suppressSmsElsewhere(panelShards(env, home.panel, home.db), db, panelId, [...optedOut], "provider", now);
  } catch (error) {
    console.error(`panel ${panelId}: an SMS opt-out not written on every shard`, error);
  }
  const fault = settled.find((o) => o.status === "rejected");
  if (fault) throw fault.reason;
  if (failed.length) {
    await recordEvents(
      env,
      { id: panelId },
      failed.map(({ message, error }) => smsEvent(message, "failed", { provider: sms!.record.provider, error }, now)),
    );
  }
  return retries;
}

/** One `delivered` or `failed` event per message (its guid), however often it is reported. */
function smsEvent(message: { msgid: string; contactId: number; journeyId: string }, name: "delivered" | "failed", params: Record<string, unknown>, now: number): NewEvent {
  return messageOutcomeEvent({ ...message, channel: "sms" }, name, params, now);
}

/**
 * Receipts of one panel's provider: each final one records the delivery on the message and its
 * event. An unknown message id changes nothing; a repeated receipt records nothing new; a
 * `failed` after `delivered` (or the reverse) is ignored: the first final word stays. So of a
 * message's receipts in one post only its first final word is written, and its opt-out once:
 * a post of many thousand reports (MSG91 batches them) costs a read or a few per shard, one
 * write per message and one recording of the events, never work per report.
 */
export async function recordSmsReceipts(env: Env, shards: readonly ShardDb[], panelId: string, receipts: readonly SmsReceipt[], now: number): Promise<{ matched: number }> {
  const byMessage = new Map<string, { outcome: SmsReceipt | null; optedOut: boolean; count: number }>();
  for (const receipt of receipts) {
    const seen = byMessage.get(receipt.providerMessageId) ?? { outcome: null, optedOut: false, count: 0 };
    seen.count++;
    seen.optedOut ||= receipt.optedOut;
    if (!seen.outcome && receipt.outcome) seen.outcome = receipt;
    byMessage.set(receipt.providerMessageId, seen);
  }
  // The messages are on their contacts' partitions' shards: each of the panel's asked in turn (`shards`, the home first) for the ids not found yet.
  const found = new Map<string, { db: ShardDb; message: ReceiptMessage }>();
  for (const db of shards) {
    const missing = [...byMessage.keys()].filter((id) => !found.has(id));
    if (!missing.length) break;
    for (const [id, message] of await smsByProviderIds(db, panelId, missing)) found.set(id, { db, message });
  }
  let matched = 0;
  const events: NewEvent[] = [];
  for (const [id, { db, message }] of found) {
    const { outcome, optedOut, count } = byMessage.get(id)!;
    matched += count;
    const phone = phoneDigits(message.recipient);
    if (optedOut && phone) await suppressSms(shards, panelId, phone, "provider", now);
    if (!outcome?.outcome) continue;
    const current = await recordSmsDelivery(db, message.msgid, outcome.outcome, now);
    // Recorded again when it is the stored word: the event may not have been recorded the first time.
    if (current === outcome.outcome) events.push(smsEvent(message, outcome.outcome, outcome.detail, now));
  }
  if (events.length) await recordEvents(env, { id: panelId }, events);
  return { matched };
}

/** A reply the provider passed on: STOP suppresses the number in the panel (each of its `shards`), START lifts a STOP. */
export async function recordSmsReply(shards: readonly ShardDb[], panelId: string, from: string, body: string, now: number): Promise<"stop" | "start" | null> {
  const phone = phoneDigits(from);
  const keyword = replyKeyword(body);
  if (!phone || !keyword) return null;
  if (keyword === "stop") await suppressSms(shards, panelId, phone, "stop", now);
  else await liftSmsStop(shards, panelId, phone);
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

/** Cron: SMS waiting for their provider whose nudge was lost (the step's send failed, or the queue dropped it) are nudged again. */
export const redriveWaitingSms = redriveWaiting("sms");
