import { refused, succeeded, type Result } from "../../../lib/problems";
import type { ShardDb } from "../../../store/shards";
import { compareStoredText } from "../../../store/sql";
import { liftPhoneStopStatement, liftPhoneSuppression, listPhoneSuppressions, suppressPhone, suppressPhoneStatement, type PhoneSuppression, type PhoneSuppressionReason } from "../../../store/sms";
import { mergedPage } from "../../access/partitions";

/**
 * The one home of stopping and resuming SMS to a number of a panel (sms_suppressions): an
 * operator's entry or lift (admin), a STOP or START reply (the providers' hooks), a provider's
 * opt-out (a refused send, a receipt), a contact's own choice (preferences). A provider's or an
 * operator's stop replaces the number's own STOP, otherwise the first reason recorded stays;
 * what may lift what is decided here. A stop or lift reaches every shard holding the panel's
 * contacts (`shards`, panelShards: just the home without a partition map), since each send and
 * each segment's `reachable: sms` reads the number's suppression on its own contact's shard
 * alone (decision 0038): another contact of the number may be on any of them. A contact's
 * choice is written there in its caller's batch with its consent, and on the other shards by
 * suppressSmsElsewhere or channels/stop-lifts.ts; a send's refusal for an opted-out number the
 * same way, after its outcomes: a contact of the number on another shard is not texted first.
 */

export type SmsSuppressionReason = PhoneSuppressionReason;

/** Stops SMS to the number in the panel (`phone` in digits, as domain/sms.ts phoneDigits gives it). */
export async function suppressSms(shards: readonly ShardDb[], panelId: string, phone: string, reason: SmsSuppressionReason, now: number): Promise<void> {
  await Promise.all(shards.map((db) => suppressPhone(db, panelId, phone, reason, now)));
}

/** suppressSms as a statement, for a caller that writes it in its own D1 batch (a send's outcomes). */
export function suppressSmsStatement(db: ShardDb, panelId: string, phone: string, reason: SmsSuppressionReason, now: number): D1PreparedStatement {
  return suppressPhoneStatement(db, panelId, phone, reason, now);
}

/**
 * suppressSmsStatement's stops on each of the panel's `shards` but `own`, whose caller writes
 * them in its own batch; one batch a shard, none for a panel on one shard or without stops.
 */
export async function suppressSmsElsewhere(shards: readonly ShardDb[], own: ShardDb, panelId: string, phones: readonly string[], reason: SmsSuppressionReason, now: number): Promise<void> {
  if (phones.length === 0) return;
  await Promise.all(shards.filter((db) => db !== own).map((db) => db.batch(phones.map((phone) => suppressPhoneStatement(db, panelId, phone, reason, now)))));
}

/** Sends SMS to the number again, whatever stopped it (an operator, or a contact's own choice); refused when nothing did. */
export async function liftSmsSuppression(shards: readonly ShardDb[], panelId: string, phone: string): Promise<Result<void>> {
  const lifted = await Promise.all(shards.map((db) => liftPhoneSuppression(db, panelId, phone)));
  if (lifted.some(Boolean)) return succeeded(undefined);
  return refused("not_found", [], `The number ${phone} is not suppressed in this panel`);
}

/**
 * Lifts the number's own STOP (a reply's, or the contact's choice), never a provider's or an
 * operator's stop, as a statement: a contact's choice writes it in one batch with its consent record.
 */
export function liftSmsStopStatement(db: ShardDb, panelId: string, phone: string): D1PreparedStatement {
  return liftPhoneStopStatement(db, panelId, phone);
}

/** A START reply: lifts the number's own STOP, never a provider's or an operator's stop. */
export async function liftSmsStop(shards: readonly ShardDb[], panelId: string, phone: string): Promise<void> {
  await Promise.all(shards.map((db) => liftSmsStopStatement(db, panelId, phone).run()));
}

/**
 * The panel's stopped numbers, newest first: each stop is written on every one of `shards`
 * (panelShards), but one written before that was the rule for a contact's own (its preferences,
 * a send's opt-out) is on its contact's shard only, so each shard's newest are merged and a
 * number is listed once, as its newest.
 */
export async function panelSmsSuppressions(shards: readonly ShardDb[], panelId: string, limit: number): Promise<PhoneSuppression[]> {
  const newestFirst = (a: PhoneSuppression, b: PhoneSuppression) => b.createdAt - a.createdAt || compareStoredText(a.phone, b.phone);
  // Each shard's first `limit` hold the panel's first `limit` numbers, however many of them repeat across shards.
  const rows = await mergedPage(shards, (db) => listPhoneSuppressions(db, panelId, limit), newestFirst, limit * shards.length);
  const newest = new Map<string, PhoneSuppression>();
  for (const row of rows) if (!newest.has(row.phone)) newest.set(row.phone, row);
  return [...newest.values()].slice(0, limit);
}
