import { uuidV7 } from "../lib/random";
import type { ShardDb } from "./shards";
import type { BucketRanges } from "../domain/partitions";
import { inBucketRanges } from "./sql";

/** Proof of consent (migrations/shard/0075_signup_forms.sql): one row per subscribe, confirm, topic change or unsubscribe. */
export type ConsentKind = "subscribe" | "confirm" | "unsubscribe" | "topic_join" | "topic_leave";
/** How the contact gave or withdrew it. */
export type ConsentVia = "form" | "api_key" | "import" | "preference_page" | "unsubscribe_page" | "one_click";

export interface ConsentRecord {
  id: string;
  contactId: number;
  kind: ConsentKind;
  listId: number | null;
  topic: string | null;
  via: ConsentVia;
  viaId: string | null;
  ip: string | null;
  userAgent: string | null;
  text: string;
  at: number;
}

interface ConsentRow {
  id: string;
  contact_id: number;
  kind: ConsentKind;
  list_id: number | null;
  topic: string | null;
  via: ConsentVia;
  via_id: string | null;
  ip: string | null;
  user_agent: string | null;
  text: string;
  at: number;
}

const fromRow = (r: ConsentRow): ConsentRecord => ({
  id: r.id,
  contactId: r.contact_id,
  kind: r.kind,
  listId: r.list_id,
  topic: r.topic,
  via: r.via,
  viaId: r.via_id,
  ip: r.ip,
  userAgent: r.user_agent,
  text: r.text,
  at: r.at,
});

/** The statements that record `records` of the panel, for the caller's batch. */
export function insertConsentStatements(db: ShardDb, panelId: string, records: readonly ConsentRecord[]): D1PreparedStatement[] {
  return records.map((r) =>
    db
      .prepare("INSERT INTO consent_records (panel_id, id, contact_id, kind, list_id, topic, via, via_id, ip, user_agent, text, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
      .bind(panelId, r.id, r.contactId, r.kind, r.listId, r.topic, r.via, r.viaId, r.ip, r.userAgent, r.text, r.at),
  );
}

/**
 * As insertConsentStatements, for the contact of primary-key value `key`, found by the
 * statements themselves: they go in the batch that creates the contact, after its upsert.
 * With `skipGoneLists`, a record naming a list is written only while the list is live, and
 * when none of the lists is, one record naming none: what a caller that looked first would write.
 */
export function insertConsentOfKeyStatements(db: ShardDb, panelId: string, key: string, records: readonly Omit<ConsentRecord, "contactId">[], skipGoneLists = false): D1PreparedStatement[] {
  const insert = `INSERT INTO consent_records (panel_id, id, contact_id, kind, list_id, topic, via, via_id, ip, user_agent, text, at)
    SELECT ?1, ?2, c.id, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11 FROM contacts c WHERE c.panel_id = ?1 AND c.pk_value = ?12`;
  const live = "SELECT 1 FROM lists l WHERE l.panel_id = ?1 AND l.deleted_at IS NULL AND l.id";
  const bindRecord = (statement: D1PreparedStatement, r: Omit<ConsentRecord, "contactId">, ...more: unknown[]) =>
    statement.bind(panelId, r.id, r.kind, r.listId, r.topic, r.via, r.viaId, r.ip, r.userAgent, r.text, r.at, key, ...more);
  const listIds = records.flatMap((r) => (r.listId === null ? [] : [r.listId]));
  if (!skipGoneLists || listIds.length === 0) return records.map((r) => bindRecord(db.prepare(insert), r));
  const first = records[0]!;
  // One list: one statement, naming it while it is live and none once it is not (a statement
  // less in the form's batch, bench:forms).
  if (records.length === 1) {
    const namingLive = `INSERT INTO consent_records (panel_id, id, contact_id, kind, list_id, topic, via, via_id, ip, user_agent, text, at)
      SELECT ?1, ?2, c.id, ?3, (SELECT l.id FROM lists l WHERE l.panel_id = ?1 AND l.deleted_at IS NULL AND l.id = ?4), ?5, ?6, ?7, ?8, ?9, ?10, ?11
      FROM contacts c WHERE c.panel_id = ?1 AND c.pk_value = ?12`;
    return [bindRecord(db.prepare(namingLive), first)];
  }
  return [
    ...records.map((r) => bindRecord(db.prepare(`${insert} AND EXISTS (${live} = ?4)`), r)),
    bindRecord(db.prepare(`${insert} AND NOT EXISTS (${live} IN (SELECT value FROM json_each(?13)))`), { ...first, id: uuidV7(first.at), listId: null }, JSON.stringify(listIds)),
  ];
}

/** The contact's consent records, oldest first (ids are time-ordered). */
export async function consentOfContact(db: ShardDb, panelId: string, contactId: number): Promise<ConsentRecord[]> {
  const { results } = await db.prepare("SELECT * FROM consent_records WHERE panel_id = ? AND contact_id = ? ORDER BY id").bind(panelId, contactId).all<ConsentRow>();
  return results.map(fromRow);
}

/**
 * A page of the panel's consent records with the contact's key, in id (time) order after
 * `afterId`. With `buckets` (the shard's in the panel's map) a record whose contact here is in
 * another shard's buckets is left out: a split's source holds copies of the moved contacts'
 * records until cleaning (decision 0047). A record outliving its contact is kept, as before.
 */
export async function consentPage(db: ShardDb, panelId: string, afterId: string, limit: number, buckets: BucketRanges | null = null): Promise<Array<ConsentRecord & { contactKey: string | null }>> {
  const { results } = await db
    .prepare(
      `SELECT r.*, c.pk_value FROM consent_records r LEFT JOIN contacts c ON c.id = r.contact_id AND c.panel_id = r.panel_id
       WHERE r.panel_id = ?1 AND r.id > ?2 AND (?4 IS NULL OR c.id IS NULL OR ${inBucketRanges("c.bucket", "?4")}) ORDER BY r.id LIMIT ?3`,
    )
    .bind(panelId, afterId, limit, buckets && JSON.stringify(buckets))
    .all<ConsentRow & { pk_value: string | null }>();
  return results.map((r) => ({ ...fromRow(r), contactKey: r.pk_value }));
}
