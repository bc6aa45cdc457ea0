import { refused, succeeded, type Result } from "../../../lib/problems";
import type { ShardDb } from "../../../store/shards";
import { compareStoredText } from "../../../store/sql";
import {
  liftPhoneStopStatement,
  liftPhoneSuppression,
  listPhoneSuppressions,
  phoneSuppressionTimes,
  suppressPhone,
  suppressPhoneStatement,
  type PhoneSuppression,
  type PhoneSuppressionCursor,
  type PhoneSuppressionReason,
} from "../../../store/sms";

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

/** A page of the panel's stopped numbers, and where the next page goes on from (null: none follows). */
export interface SmsSuppressionPage {
  rows: PhoneSuppression[];
  next: PhoneSuppressionCursor | null;
}

const newestFirst = (a: PhoneSuppression, b: PhoneSuppression) => b.createdAt - a.createdAt || compareStoredText(a.phone, b.phone);

/**
 * The panel's stopped numbers past `after`, newest first (then by number), each number once, at
 * its newest stop. Each stop is written on every one of `shards` (panelShards), but one written
 * before that was the rule for a contact's own (its preferences, a send's opt-out) is on its
 * contact's shard only, and a shard that had its own stop keeps its time when the cron copies
 * another's (decision 0061): a number's stops on two shards may differ in time.
 *
 * Each shard reads its next `limit + 1` past the cursor (one more than shown: whether more
 * follow). Past the last row read on a shard whose read was full, its rows are unknown, so the
 * page keeps to the first such row (the horizon) and drops each number's older stops, which are
 * listed at the newer one, on this page or an earlier one. What drops can leave a page short of
 * `limit`, even empty, with a cursor at the horizon: a walk lists every number once and skips none.
 */
export async function panelSmsSuppressions(shards: readonly ShardDb[], panelId: string, limit: number, after?: PhoneSuppressionCursor): Promise<SmsSuppressionPage> {
  const pages = await Promise.all(shards.map((db) => listPhoneSuppressions(db, panelId, limit + 1, after)));
  const horizon = pages
    .filter((page) => page.length > limit)
    .map((page) => page[page.length - 1]!)
    .sort(newestFirst)[0];
  // In order, the home's row first of a number's stops alike in time (a stable sort of the home's page and then the others').
  const known = pages
    .flat()
    .filter((row) => horizon === undefined || newestFirst(row, horizon) <= 0)
    .sort(newestFirst);
  const listed = shards.length === 1 ? known : await newestOfEachNumber(shards, panelId, known);
  if (listed.length > limit) return { rows: listed.slice(0, limit), next: cursorOf(listed[limit - 1]!) };
  return { rows: listed, next: horizon ? cursorOf(horizon) : null };
}

const cursorOf = (row: PhoneSuppression): PhoneSuppressionCursor => ({ createdAt: row.createdAt, phone: row.phone });

/** Of `rows` read on the panel's `shards`, in order, each number's newest stop once (its first): a row older than the number's stop on another shard is left out. */
async function newestOfEachNumber(shards: readonly ShardDb[], panelId: string, rows: readonly PhoneSuppression[]): Promise<PhoneSuppression[]> {
  const phones = [...new Set(rows.map((row) => row.phone))];
  const newest = new Map<string, number>();
  for (const times of await Promise.all(shards.map((db) => phoneSuppressionTimes(db, panelId, phones)))) {
    for (const [phone, at] of times) newest.set(phone, Math.max(newest.get(phone) ?? at, at));
  }
  const listed = new Set<string>();
  // A row whose number was lifted since it was read (absent now) is left out too.
  return rows.filter((row) => row.createdAt === newest.get(row.phone) && !listed.has(row.phone) && listed.add(row.phone));
}
