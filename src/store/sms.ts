import { ERASED_RANGE, erasedIdentifier, erasedKeysOf } from "../domain/erasure";
import { claimedOf, claimQueuedStatements, type ClaimedMessage } from "./journeys/messages";
import { jsonArrays } from "./json-arrays";
import type { ShardDb } from "./shards";

/** A panel's SMS provider as stored; secrets stay encrypted here. */
export interface SmsSettingsRecord {
  panelId: string;
  provider: "twilio" | "msg91";
  config: Record<string, string>;
  credentialEnc: string;
  hookTokenEnc: string;
  updatedAt: number;
}

interface SettingsRow {
  panel_id: string;
  provider: "twilio" | "msg91";
  config: string;
  credential_enc: string;
  hook_token_enc: string;
  updated_at: number;
}

export async function getSmsSettings(db: ShardDb, panelId: string): Promise<SmsSettingsRecord | null> {
  const row = await db.prepare("SELECT * FROM sms_settings WHERE panel_id = ?").bind(panelId).first<SettingsRow>();
  if (!row) return null;
  return {
    panelId: row.panel_id,
    provider: row.provider,
    config: JSON.parse(row.config) as Record<string, string>,
    credentialEnc: row.credential_enc,
    hookTokenEnc: row.hook_token_enc,
    updatedAt: row.updated_at,
  };
}

export async function putSmsSettings(db: ShardDb, s: SmsSettingsRecord): Promise<void> {
  await db
    .prepare(
      `INSERT INTO sms_settings (panel_id, provider, config, credential_enc, hook_token_enc, updated_at) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (panel_id) DO UPDATE SET provider = excluded.provider, config = excluded.config, credential_enc = excluded.credential_enc,
         hook_token_enc = excluded.hook_token_enc, updated_at = excluded.updated_at`,
    )
    .bind(s.panelId, s.provider, JSON.stringify(s.config), s.credentialEnc, s.hookTokenEnc, s.updatedAt)
    .run();
}

export async function deleteSmsSettings(db: ShardDb, panelId: string): Promise<void> {
  await db.prepare("DELETE FROM sms_settings WHERE panel_id = ?").bind(panelId).run();
}

export type PhoneSuppressionReason = "stop" | "provider" | "operator";

export interface PhoneSuppression {
  phone: string;
  reason: PhoneSuppressionReason;
  createdAt: number;
}

/**
 * Stops SMS to the number in this panel. A provider's or an operator's stop replaces the
 * number's own STOP (which a START or the contact's preferences lift, and must not lift theirs);
 * otherwise the first reason recorded stays.
 */
export async function suppressPhone(db: ShardDb, panelId: string, phone: string, reason: PhoneSuppressionReason, now: number): Promise<void> {
  await suppressPhoneStatement(db, panelId, phone, reason, now).run();
}

/** Lifts the number's suppression; true when there was one. */
export async function liftPhoneSuppression(db: ShardDb, panelId: string, phone: string): Promise<boolean> {
  const result = await db.prepare("DELETE FROM sms_suppressions WHERE panel_id = ? AND phone = ?").bind(panelId, phone).run();
  return result.meta.changes > 0;
}

/** Lifts the number's suppression when it is its own STOP (reason `stop`), as a statement for the caller's batch; any other stays. */
export function liftPhoneStopStatement(db: ShardDb, panelId: string, phone: string): D1PreparedStatement {
  return db.prepare("DELETE FROM sms_suppressions WHERE panel_id = ? AND phone = ? AND reason = 'stop'").bind(panelId, phone);
}

export async function phoneSuppression(db: ShardDb, panelId: string, phone: string): Promise<PhoneSuppressionReason | null> {
  // An erased contact's stop is kept under a hash of its number (domain/erasure.ts).
  const row = await db
    .prepare("SELECT reason FROM sms_suppressions WHERE panel_id = ? AND phone IN (?, ?) LIMIT 1")
    .bind(panelId, phone, await erasedIdentifier(panelId, phone))
    .first<{ reason: PhoneSuppressionReason }>();
  return row?.reason ?? null;
}

/** Which of these numbers are stopped (phoneSuppression for many, in one read), an erased contact's stop found by its hash as there. */
export async function stoppedPhones(db: ShardDb, panelId: string, phones: readonly string[]): Promise<Map<string, true>> {
  const stopped = new Map<string, true>();
  if (phones.length === 0) return stopped;
  const byKey = await erasedKeysOf(panelId, phones);
  // As many reads as the keys need JSON arrays to fit a bound value (store/json-arrays.ts).
  for (const { json } of jsonArrays([...byKey.keys()])) {
    const { results } = await db.prepare("SELECT phone FROM sms_suppressions WHERE panel_id = ? AND phone IN (SELECT value FROM json_each(?))").bind(panelId, json).all<{ phone: string }>();
    for (const r of results) stopped.set(byKey.get(r.phone)!, true);
  }
  return stopped;
}

/** Where a page of a panel's stops goes on from: the last stop listed, in the list's order. */
export interface PhoneSuppressionCursor {
  createdAt: number;
  phone: string;
}

/** A shard's first `limit` stops of the panel past `after`, newest first, then by number (index sms_suppressions_by_time). */
export async function listPhoneSuppressions(db: ShardDb, panelId: string, limit: number, after?: PhoneSuppressionCursor): Promise<PhoneSuppression[]> {
  const past = after ? "AND (created_at < ?3 OR (created_at = ?3 AND phone > ?4))" : "";
  const { results } = await db
    .prepare(`SELECT phone, reason, created_at FROM sms_suppressions WHERE panel_id = ?1 ${past} ORDER BY created_at DESC, phone LIMIT ?2`)
    .bind(panelId, limit, ...(after ? [after.createdAt, after.phone] : []))
    .all<{ phone: string; reason: PhoneSuppressionReason; created_at: number }>();
  return results.map((r) => ({ phone: r.phone, reason: r.reason, createdAt: r.created_at }));
}

/** When each of these numbers (stored keys, as listed) was stopped on this shard; a number not stopped here is absent. */
export async function phoneSuppressionTimes(db: ShardDb, panelId: string, phones: readonly string[]): Promise<Map<string, number>> {
  const times = new Map<string, number>();
  for (const { json } of jsonArrays(phones)) {
    const { results } = await db
      .prepare("SELECT phone, created_at FROM sms_suppressions WHERE panel_id = ? AND phone IN (SELECT value FROM json_each(?))")
      .bind(panelId, json)
      .all<{ phone: string; created_at: number }>();
    for (const r of results) times.set(r.phone, r.created_at);
  }
  return times;
}

export interface SmsLink {
  code: string;
  panelId: string;
  msgid: string;
  url: string;
}

/**
 * Records the short links of a message, after its insert in the same batch: only when the
 * message is there (an insert for an instance that exited wrote nothing). A code recorded
 * before (the same message rendered again) stays.
 */
export function insertSmsLinkStatements(db: ShardDb, links: readonly SmsLink[], now: number): D1PreparedStatement[] {
  return links.map((l) =>
    db
      .prepare(
        `INSERT INTO sms_links (code, panel_id, msgid, url, created_at)
         SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM journey_messages WHERE msgid = ?3) ON CONFLICT (code) DO NOTHING`,
      )
      .bind(l.code, l.panelId, l.msgid, l.url, now),
  );
}

export async function smsLinkByCode(db: ShardDb, code: string): Promise<SmsLink | null> {
  const row = await db.prepare("SELECT code, panel_id, msgid, url FROM sms_links WHERE code = ?").bind(code).first<{ code: string; panel_id: string; msgid: string; url: string }>();
  return row ? { code: row.code, panelId: row.panel_id, msgid: row.msgid, url: row.url } : null;
}

export interface SmsTemplate {
  panelId: string;
  id: string;
  name: string;
  body: string;
  dltTemplateId: string | null;
  providerTemplateId: string | null;
  createdAt: number;
  updatedAt: number;
}

interface TemplateRow {
  panel_id: string;
  id: string;
  name: string;
  body: string;
  dlt_template_id: string | null;
  provider_template_id: string | null;
  created_at: number;
  updated_at: number;
}

function templateFromRow(r: TemplateRow): SmsTemplate {
  return {
    panelId: r.panel_id,
    id: r.id,
    name: r.name,
    body: r.body,
    dltTemplateId: r.dlt_template_id,
    providerTemplateId: r.provider_template_id,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/** Inserts the template, or replaces the one with its id. */
export async function putSmsTemplate(db: ShardDb, t: SmsTemplate): Promise<void> {
  await db
    .prepare(
      `INSERT INTO sms_templates (panel_id, id, name, body, dlt_template_id, provider_template_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (panel_id, id) DO UPDATE SET name = excluded.name, body = excluded.body, dlt_template_id = excluded.dlt_template_id,
         provider_template_id = excluded.provider_template_id, updated_at = excluded.updated_at`,
    )
    .bind(t.panelId, t.id, t.name, t.body, t.dltTemplateId, t.providerTemplateId, t.createdAt, t.updatedAt)
    .run();
}

export async function getSmsTemplate(db: ShardDb, panelId: string, id: string): Promise<SmsTemplate | null> {
  const row = await db.prepare("SELECT * FROM sms_templates WHERE panel_id = ? AND id = ?").bind(panelId, id).first<TemplateRow>();
  return row ? templateFromRow(row) : null;
}

export async function listSmsTemplates(db: ShardDb, panelId: string): Promise<SmsTemplate[]> {
  const { results } = await db.prepare("SELECT * FROM sms_templates WHERE panel_id = ? ORDER BY created_at, id").bind(panelId).all<TemplateRow>();
  return results.map(templateFromRow);
}

export async function deleteSmsTemplate(db: ShardDb, panelId: string, id: string): Promise<boolean> {
  const result = await db.prepare("DELETE FROM sms_templates WHERE panel_id = ? AND id = ?").bind(panelId, id).run();
  return result.meta.changes > 0;
}

/**
 * Claims queued SMS of one panel for one send attempt, in one round trip (claimQueuedStatements),
 * and reads which of the claimed numbers (`content.to`) are suppressed.
 */
export async function claimSmsBatch(
  db: ShardDb,
  panelId: string,
  msgids: readonly string[],
  claim: string,
  now: number,
  staleBefore: number,
  unknownError: string,
): Promise<{ claimed: ClaimedMessage[]; held: Set<string>; suppressed: Set<string> }> {
  const answers = await db.batch<Record<string, any>>([
    ...claimQueuedStatements(db, panelId, ["sms"], msgids, claim, now, staleBefore, unknownError),
    db
      .prepare(
        `SELECT phone FROM sms_suppressions WHERE panel_id = ?1
         AND (phone IN (SELECT json_extract(content, '$.to') FROM journey_messages WHERE msgid IN (SELECT value FROM json_each(?2)) AND claim = ?3) OR (phone >= ?4 AND phone < ?5))`,
      )
      .bind(panelId, JSON.stringify(msgids), claim, ERASED_RANGE.from, ERASED_RANGE.to),
  ]);
  const { claimed, held } = claimedOf(answers);
  const stopped = new Set(answers[3]!.results.map((r) => r.phone as string));
  // Numbers of erased contacts are kept hashed: a claimed number whose hash is among them is stopped too.
  if ([...stopped].some((phone) => phone.startsWith(ERASED_RANGE.from))) {
    for (const message of claimed) {
      const to = message.content.to;
      if (typeof to === "string" && stopped.has(await erasedIdentifier(panelId, to))) stopped.add(to);
    }
  }
  return { claimed, held, suppressed: stopped };
}

export function suppressPhoneStatement(db: ShardDb, panelId: string, phone: string, reason: PhoneSuppressionReason, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO sms_suppressions (panel_id, phone, reason, created_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (panel_id, phone) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at
       WHERE sms_suppressions.reason = 'stop' AND excluded.reason <> 'stop'`,
    )
    .bind(panelId, phone, reason, now);
}

/** The SMS a provider's receipt names: what recording the receipt needs of it. */
export interface ReceiptMessage {
  msgid: string;
  contactId: number;
  journeyId: string;
  recipient: string | null;
}

/**
 * The SMS of these provider message ids in this panel on `db`, by id: one read per JSON array of
 * ids (store/json-arrays.ts). `+panel_id`: looked up by the provider id's index (the planner
 * would otherwise read all the panel's SMS on its panel index).
 */
export async function smsByProviderIds(db: ShardDb, panelId: string, providerMessageIds: readonly string[]): Promise<Map<string, ReceiptMessage>> {
  const found = new Map<string, ReceiptMessage>();
  for (const { json } of jsonArrays(providerMessageIds)) {
    const { results } = await db
      .prepare(
        `SELECT provider_msg_id, msgid, contact_id, journey_id, recipient FROM journey_messages
         WHERE provider_msg_id IN (SELECT value FROM json_each(?1)) AND +panel_id = ?2 AND channel = 'sms'`,
      )
      .bind(json, panelId)
      .all<{ provider_msg_id: string; msgid: string; contact_id: number; journey_id: string; recipient: string | null }>();
    for (const row of results) found.set(row.provider_msg_id, { msgid: row.msgid, contactId: row.contact_id, journeyId: row.journey_id, recipient: row.recipient });
  }
  return found;
}

/** Records what a receipt said and returns the stored word: the first final one stays (a late "failed" after "delivered" changes nothing). */
export async function recordSmsDelivery(db: ShardDb, msgid: string, delivery: "delivered" | "failed", at: number): Promise<string | null> {
  const [, current] = await db.batch<{ delivery: string | null }>([
    db.prepare("UPDATE journey_messages SET delivery = ?, delivery_at = ? WHERE msgid = ? AND delivery IS NULL").bind(delivery, at, msgid),
    db.prepare("SELECT delivery FROM journey_messages WHERE msgid = ?").bind(msgid),
  ]);
  return current!.results[0]?.delivery ?? null;
}
