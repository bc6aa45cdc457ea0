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
import { sendAll, settleEach, type CronTask } from "../../lib/tasks";
import type { NewEvent } from "../../domain/events";
import { getMessages, insertMessageStatement, UNKNOWN_SEND_OUTCOME, type JourneyMessage } from "../../store/journeys/messages";
import { allShards, type ShardDb } from "../../store/shards";
import {
  claimSmsBatch,
  releaseSmsStatement,
  settleSmsStatement,
  suppressPhoneStatement,
  type ClaimedSms,
  type SmsOutcome,
  getSmsTemplate,
  insertSmsLinkStatements,
  liftPhoneSuppression,
  overdueSms,
  phoneSuppression,
  recordSmsDelivery,
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

/** SMS of one panel waiting for their provider: the SENDS queue's nudge to send them. */
export interface SmsNudge {
  kind: "sms";
  panelId: string;
  msgids: string[];
}

/**
 * Messages per nudge: a consumer takes up to 10 nudges, so at most 1,000 provider calls per
 * invocation (the Workers Paid limit is 10,000 subrequests). Fewer, fuller invocations: with 25
 * a nudge, bench:channels measured 41% of the bare loop (median of 5 rounds), with 100 74%.
 */
export const SMS_PER_NUDGE = 100;

export function isSmsNudge(body: unknown): body is SmsNudge {
  const b = body as SmsNudge | null;
  return (
    typeof b === "object" &&
    b !== null &&
    b.kind === "sms" &&
    typeof b.panelId === "string" &&
    Array.isArray(b.msgids) &&
    b.msgids.length <= SMS_PER_NUDGE &&
    b.msgids.every((m) => typeof m === "string")
  );
}

/** Nudges for these messages of one panel, SMS_PER_NUDGE to a nudge. */
export async function enqueueSms(env: Pick<Env, "SENDS">, panelId: string, msgids: readonly string[], delaySeconds = 0): Promise<void> {
  const nudges: SmsNudge[] = [];
  for (let i = 0; i < msgids.length; i += SMS_PER_NUDGE) nudges.push({ kind: "sms", panelId, msgids: msgids.slice(i, i + SMS_PER_NUDGE) });
  if (nudges.length) await sendAll(env.SENDS, nudges, delaySeconds);
}

const SUPPRESSED = "the number is suppressed (it replied STOP or was stopped)";

export type JourneySmsEnv = SmsSettingsEnv & Pick<Env, "SENDS">;

/** What the step records for its SMS: the message row (and its short links), and whether it waits for a nudge to the provider. */
export interface PlannedSms {
  message: JourneyMessage;
  statements: D1PreparedStatement[];
  queued: boolean;
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
    return { message: m, statements: [insertMessageStatement(db, m), ...statements], queued: status === "sending" };
  };
  if (step.template && !template) return planned("failed", {}, `the SMS template "${step.template}" does not exist`);
  const source = template?.body ?? step.text ?? "";
  const shortened = await shortenSmsLinks(env, message.panelId, message.msgid, personalize(compileTemplate(source), attributes, "text"));
  const content: Record<string, unknown> = { body: shortened.text, length: smsLength(shortened.text) };
  if (template) Object.assign(content, { dlt_template_id: template.dltTemplateId, provider_template_id: template.providerTemplateId });
  const links = insertSmsLinkStatements(db, shortened.links, now);
  const phone = phoneDigits(message.recipient);
  if (phone) content.to = phone;
  if (phone && (await phoneSuppression(db, message.panelId, phone))) return planned("skipped", content, SUPPRESSED);
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

/** One nudge taken from the queue, and how many times the queue has delivered it. */
export interface SmsDelivery {
  nudge: SmsNudge;
  attempt: number;
}

/**
 * Sends the queued SMS a batch of nudges names, panel by panel: one round trip claims them
 * (and reads which numbers are suppressed), the provider calls run side by side, one round
 * trip records their outcomes. Returns, per nudge, the seconds after which it is to be retried
 * (a message of it met a throttled or failing provider, or another attempt holds one), or null
 * when all its messages are done with (sent, refused, skipped, or nothing to do). A retried
 * nudge sends only what is still waiting.
 */
export async function sendQueuedSmsBatch(env: SmsSendEnv, deliveries: readonly SmsDelivery[], now = Date.now()): Promise<Array<number | null>> {
  // Nudges run side by side, so one's D1 round trips overlap others' provider calls; the calls
  // share one limit. A message named twice is claimed by one of them.
  const limit = new Limit(SEND_CONCURRENCY);
  return Promise.all(
    deliveries.map(async ({ nudge, attempt }) => {
      const retries = await sendPanelSms(env, nudge.panelId, new Map(nudge.msgids.map((m) => [m, attempt])), now, limit);
      return retries.size ? Math.max(...retries.values()) : null;
    }),
  );
}

/** One message, as sendQueuedSmsBatch sends it. */
export async function sendQueuedSms(env: SmsSendEnv, panelId: string, msgid: string, attempt: number, now = Date.now()): Promise<number | null> {
  const [retry] = await sendQueuedSmsBatch(env, [{ nudge: { kind: "sms", panelId, msgids: [msgid] }, attempt }], now);
  return retry ?? null;
}

/** Provider calls at a time within one consumer invocation. */
const SEND_CONCURRENCY = 25;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** At most `size` tasks at once, the others waiting their turn in order. */
class Limit {
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly size: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.size) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.running++;
    try {
      return await task();
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }
}

async function sendPanelSms(env: SmsSendEnv, panelId: string, attempts: ReadonlyMap<string, number>, now: number, limit: Limit): Promise<Map<string, number>> {
  const retries = new Map<string, number>();
  const home = await findPanelHome(env, panelId);
  if (!home) return retries;
  const { db } = home;
  const claim = randomHex(8);
  const [sms, { claimed, held, suppressed }] = await Promise.all([
    panelSms(env, db, panelId),
    claimSmsBatch(db, panelId, [...attempts.keys()], claim, now, now - SMS_CLAIM_MS, UNKNOWN_SEND_OUTCOME),
  ]);
  for (const msgid of held) retries.set(msgid, SMS_CLAIM_MS / 1000);
  if (claimed.length === 0) return retries;
  const statements: D1PreparedStatement[] = [];
  const failed: Array<{ message: ClaimedSms; error: string }> = [];
  const outcomes: SmsOutcome[] = [];
  const settle = (message: ClaimedSms, outcome: DistributiveOmit<SmsOutcome, "msgid">) => outcomes.push({ msgid: message.msgid, ...outcome } as SmsOutcome);
  const provider = sms ? smsProviderOf(env, sms) : null;
  const settled = await settleEach(claimed, claimed.length, async (message) => {
      const content = message.content as { to?: string; body?: string; dlt_template_id?: string | null; provider_template_id?: string | null };
      const phone = content.to ?? phoneDigits(message.recipient);
      if (!provider) return settle(message, { status: "skipped", error: "the panel has no SMS provider any more" });
      if (!phone) return settle(message, { status: "skipped", error: "the contact has no valid MOBILE" });
      // Rows without `to` were not covered by the claim's suppression read.
      if (suppressed.has(phone) || (!content.to && (await phoneSuppression(db, panelId, phone)))) return settle(message, { status: "skipped", error: SUPPRESSED });
      const result = await limit.run(() => provider.send({
        id: message.msgid,
        panelId,
        to: phone,
        text: content.body ?? "",
        dltTemplateId: content.dlt_template_id ?? null,
        providerTemplateId: content.provider_template_id ?? null,
      }));
      if (result.ok) return settle(message, { status: "sent", providerMessageId: result.providerMessageId });
      if (!result.retryable) {
        if (result.optedOut) statements.push(suppressPhoneStatement(db, panelId, phone, "provider", now));
        failed.push({ message, error: result.error });
        return settle(message, { status: "failed", error: result.error });
      }
      const delay = smsRetryDelaySeconds(attempts.get(message.msgid) ?? 1);
      console.error(`sms ${message.msgid}: ${result.error}; retried in ${delay} s`);
      retries.set(message.msgid, delay);
      statements.push(releaseSmsStatement(db, message.msgid, claim, now + delay * 1000));
  });
  // Outcomes known are recorded even when one message's work failed; that one's claim runs out (unknown outcome).
  if (outcomes.length) statements.push(settleSmsStatement(db, claim, outcomes));
  if (statements.length) await db.batch(statements);
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
  return { channel: "sms", name, occurredAt: now, contactId: message.contactId, msgid: message.msgid, journeyId: message.journeyId, source: "provider", params, guid: `sms:${message.msgid}:${name}` };
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
    if (current === receipt.outcome) await recordEvents(env, { id: panelId }, [smsEvent(message, receipt.outcome, receipt.detail, now)]);
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
      const byPanel = new Map<string, string[]>();
      for (const m of overdue) byPanel.set(m.panelId, [...(byPanel.get(m.panelId) ?? []), m.msgid]);
      for (const [panelId, msgids] of byPanel) await enqueueSms(env, panelId, msgids);
    });
  },
};

/** A dead-lettered SMS nudge: what still waits is handed back to the queue after a pause. */
export async function redriveDeadSms(env: Env, nudge: SmsNudge): Promise<string> {
  const db = await panelDb(env, nudge.panelId);
  const messages = await getMessages(db, nudge.panelId, nudge.msgids);
  const waiting = nudge.msgids.filter((m) => messages.get(m)?.status === "sending");
  if (waiting.length === 0) return "nothing left: no message of it is waiting";
  await enqueueSms(env, nudge.panelId, waiting, 60);
  return `${waiting.length} message(s) nudged again in 60 s`;
}
