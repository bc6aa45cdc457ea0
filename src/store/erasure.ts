import type { ShardDb } from "./shards";
import type { AuditActor } from "./audit";
import { jsonArrays } from "./json-arrays";
import { deleteOutboxStatements } from "./outbox";
import { forgetOwnersStatements, partsOfOwners, type PartName } from "./event-archive";
import { scrubSamplesStatement } from "./journeys/simulations";
import { BUCKETED_TABLES, CONTACT_TABLES, PARENT_SCOPED_TABLES } from "./panel-move/tables";
import { fencedCopyHere } from "./panel-move/triggers";
import type { BucketRanges } from "../domain/partitions";

/**
 * Erasing a contact (right to erasure) in its shard. The rows that hold the contact go in one
 * D1 batch, so an erasure is all or nothing; suppressions stay, re-keyed by a hash of the
 * address or number (`erasedAddress`), so an address that was stopped stays stopped. The
 * archived days (R2) are rewritten after, from `contact_erasures`.
 */

export interface ErasureTarget {
  panelId: string;
  contactId: number;
  /** Uniqueids linked to the contact: their anonymous events go with it. */
  uniqueids: string[];
  /** The EMAIL as suppressions key it (trimmed, lower case), and its hashed form. */
  email: { plain: string; erased: string } | null;
  /** The MOBILE as digits, and its hashed form. */
  phone: { plain: string; erased: string } | null;
}

/** The addresses and numbers the outbox may have sent the contact's copies to. */
export function recipientsOf(target: Pick<ErasureTarget, "email" | "phone">): string[] {
  return [target.email?.plain, target.phone?.plain].filter((r): r is string => r !== undefined);
}

export async function uniqueidsOfContact(db: ShardDb, panelId: string, contactId: number): Promise<string[]> {
  const { results } = await db.prepare("SELECT uniqueid FROM anon_profiles WHERE panel_id = ? AND contact_id = ?").bind(panelId, contactId).all<{ uniqueid: string }>();
  return results.map((r) => r.uniqueid);
}

const BUCKETED = new Set<string>(BUCKETED_TABLES);
const BY_CONTACT = new Set<string>([...CONTACT_TABLES, ...Object.keys(PARENT_SCOPED_TABLES)]);

/**
 * What an erasure's delete from `table` adds so that it leaves a split's source's fenced copies of
 * moved rows to cleaning (fencedCopyHere, decision 0047): `ranges`, the parameter bound to the
 * shard's buckets in the panel's map (null: a panel without a map, nothing spared). Deleting them
 * would meet the fence and refuse the erasure (503) until then; the target's batch deletes the
 * rows that count. A row with a bucket is tested by its own, one without by its contact's (`?1`
 * the panel, `?2` the contact in each such statement). Tables a split does not move are never spared.
 */
function sparingFencedCopies(table: string, ranges: string): string {
  if (BUCKETED.has(table)) return ` AND NOT ${fencedCopyHere(table, ranges)}`;
  if (BY_CONTACT.has(table)) return ` AND NOT EXISTS (SELECT 1 FROM contacts fc WHERE fc.panel_id = ?1 AND fc.id = ?2 AND ${fencedCopyHere("fc", ranges)})`;
  return "";
}

/**
 * Deletes the contact's rows and records `erasure` in the same batch, so that the archive's
 * rewrite is due exactly when the rows are gone. `erasure` null: another shard of a panel whose
 * contacts span shards (decision 0038), whose rows naming the contact (outbox copies,
 * suppressions, audit entries, anonymous rows of its uniqueids) go without a record there.
 * The email messages it deletes are recorded in `erased_message_copies` by the same batch, with
 * `elsewhere` (those the other shards' batches deleted), so their outbox copies are deleted even
 * if the request dies after it; it answers every message of the contact recorded there still,
 * an earlier attempt's too. `buckets`, the shard's in the panel's map (null: a panel without a
 * map): a split's source's fenced copies outside them are left to cleaning (sparingFencedCopies).
 */
export async function eraseContactRows(
  db: ShardDb,
  buckets: BucketRanges | null,
  target: ErasureTarget,
  erasure: ContactErasure | null,
  now: number,
  elsewhere: readonly ErasedMessage[] = [],
): Promise<ErasedMessage[]> {
  const { panelId, contactId } = target;
  const uniqueids = JSON.stringify(target.uniqueids);
  const recipients = JSON.stringify(recipientsOf(target));
  const ranges = buckets && JSON.stringify(buckets);
  // The shard's buckets are bound after each statement's own parameters (`?3`, or `?4` after three).
  const byContact = (table: string) => {
    const spared = sparingFencedCopies(table, "?3");
    return db.prepare(`DELETE FROM ${table} WHERE panel_id = ?1 AND contact_id = ?2${spared}`).bind(panelId, contactId, ...(spared ? [ranges] : []));
  };
  // The email messages deleted are recorded first: the outbox copies of them go after (services/contacts/erase.ts).
  const statements = [
    ...recordCopiesStatements(db, panelId, contactId, now, elsewhere),
    // Rows keyed by the contact's messages or instances go before those.
    db.prepare(`DELETE FROM sms_links WHERE panel_id = ?1 AND msgid IN (SELECT msgid FROM journey_messages WHERE panel_id = ?1 AND contact_id = ?2)${sparingFencedCopies("sms_links", "?3")}`).bind(panelId, contactId, ranges),
    db.prepare(`DELETE FROM journey_step_runs WHERE instance_id IN (SELECT id FROM journey_instances WHERE panel_id = ?1 AND contact_id = ?2)${sparingFencedCopies("journey_step_runs", "?3")}`).bind(panelId, contactId, ranges),
    byContact("journey_points"),
    byContact("journey_split_entries"),
    byContact("journey_conversions"),
    byContact("contact_sends"),
    byContact("journey_instances"),
    // The key a pruned instance left (`segment:<contact>`), each of the panel's journeys on its key.
    db.prepare(`DELETE FROM journey_entry_keys WHERE journey_id IN (SELECT id FROM journeys WHERE panel_id = ?1) AND entry_key = 'segment:' || CAST(?2 AS INTEGER)${sparingFencedCopies("journey_entry_keys", "?3")}`).bind(panelId, contactId, ranges),
    byContact("journey_list_entries"),
    byContact("journey_messages"),
    // Journey simulations' results keep rendered samples of contacts' messages (decision 0048).
    scrubSamplesStatement(db, panelId, contactId),
    byContact("campaign_messages"),
    byContact("list_members"),
    byContact("segment_members"),
    byContact("segment_changes"),
    // Signups awaiting confirmation and the proof of consent (issue 45) name the contact.
    byContact("form_signups"),
    byContact("consent_records"),
    // The contact's events, then the rest of its uniqueids' events: anonymous ones, and ones
    // recorded with another identity, among that contact's events (shard migration 0057).
    // `+panel_id` keeps the planner on events_by_contact, off the panel's rows in events_by_name.
    db.prepare(`DELETE FROM events WHERE contact_id = ?2 AND +panel_id = ?1${sparingFencedCopies("events", "?3")}`).bind(panelId, contactId, ranges),
    db.prepare(`DELETE FROM events WHERE panel_id = ?1 AND uniqueid IN (SELECT value FROM json_each(?2)) AND identity IS NULL${sparingFencedCopies("events", "?3")}`).bind(panelId, uniqueids, ranges),
    db
      .prepare(
        `DELETE FROM events WHERE contact_id IN (SELECT contact_id FROM uniqueid_contacts WHERE panel_id = ?1 AND uniqueid IN (SELECT value FROM json_each(?2)))
         AND +panel_id = ?1 AND uniqueid IN (SELECT value FROM json_each(?2)) AND identity IS NOT NULL${sparingFencedCopies("events", "?3")}`,
      )
      .bind(panelId, uniqueids, ranges),
    db.prepare(`DELETE FROM uniqueid_contacts WHERE contact_id = ?2 AND +panel_id = ?1${sparingFencedCopies("uniqueid_contacts", "?3")}`).bind(panelId, contactId, ranges),
    db.prepare(`DELETE FROM uniqueid_contacts WHERE panel_id = ?1 AND uniqueid IN (SELECT value FROM json_each(?2))${sparingFencedCopies("uniqueid_contacts", "?3")}`).bind(panelId, uniqueids, ranges),
    // Devices registered for push under the contact's key or its visitor ids.
    db
      .prepare(
        `DELETE FROM push_subscriptions WHERE panel_id = ?1
         AND (contact_key = (SELECT pk_value FROM contacts WHERE panel_id = ?1 AND id = ?2) OR uniqueid IN (SELECT value FROM json_each(?3)))${sparingFencedCopies("push_subscriptions", "?4")}`,
      )
      .bind(panelId, contactId, uniqueids, ranges),
    byContact("anon_profiles"),
    // Audit entries of hand edits keep who changed the contact and when, not its values. The
    // target is bound as text: D1 binds a JS number as a REAL, whose CAST AS TEXT reads "12.0".
    db
      .prepare("UPDATE audit_log SET detail = '{\"erased\":true}' WHERE panel_id = ?1 AND target = ?2 AND action IN ('contact.added', 'contact.edited', 'contact.preferences_changed')")
      .bind(panelId, String(contactId)),
    byContact("push_optouts"),
    byContact("topic_optouts"),
    db.prepare("DELETE FROM outbox WHERE panel_id = ?1 AND recipient IN (SELECT value FROM json_each(?2))").bind(panelId, recipients),
    ...(erasure ? [insertErasureStatement(db, erasure)] : []),
  ];
  if (target.email) {
    statements.push(
      db
        .prepare(
          `INSERT INTO email_suppressions (panel_id, address, reason, campaign_id, created_at)
           SELECT panel_id, ?3, reason, NULL, created_at FROM email_suppressions WHERE panel_id = ?1 AND address = ?2 ON CONFLICT DO NOTHING`,
        )
        .bind(panelId, target.email.plain, target.email.erased),
      db.prepare("DELETE FROM email_suppressions WHERE panel_id = ? AND address = ?").bind(panelId, target.email.plain),
    );
  }
  if (target.phone) {
    statements.push(
      db
        .prepare(
          `INSERT INTO sms_suppressions (panel_id, phone, reason, created_at)
           SELECT panel_id, ?3, reason, created_at FROM sms_suppressions WHERE panel_id = ?1 AND phone = ?2 ON CONFLICT DO NOTHING`,
        )
        .bind(panelId, target.phone.plain, target.phone.erased),
      db.prepare("DELETE FROM sms_suppressions WHERE panel_id = ? AND phone = ?").bind(panelId, target.phone.plain),
    );
  }
  const pending = erasedCopiesStatement(db, panelId, contactId);
  statements.push(db.prepare(`DELETE FROM contacts WHERE panel_id = ?1 AND id = ?2${sparingFencedCopies("contacts", "?3")}`).bind(panelId, contactId, ranges), pending);
  const results = await db.batch(statements);
  return results[statements.indexOf(pending)]!.results as ErasedMessage[];
}

/**
 * A contact's email message an erasure deleted whose outbox copy may remain (`erased_message_copies`):
 * a campaign's, `message` its campaign id, or a journey's, `message` its msgid.
 */
export interface ErasedMessage {
  kind: "campaign" | "journey";
  message: string;
}

function recordCopiesStatements(db: ShardDb, panelId: string, contactId: number, now: number, elsewhere: readonly ErasedMessage[]): D1PreparedStatement[] {
  const here = db
    .prepare(
      `INSERT INTO erased_message_copies (panel_id, contact_id, kind, message, created_at)
       SELECT panel_id, contact_id, 'campaign', campaign_id, ?3 FROM campaign_messages WHERE panel_id = ?1 AND contact_id = ?2
       UNION ALL SELECT panel_id, contact_id, 'journey', msgid, ?3 FROM journey_messages WHERE panel_id = ?1 AND contact_id = ?2 AND channel = 'email'
       ON CONFLICT DO NOTHING`,
    )
    .bind(panelId, contactId, now);
  if (elsewhere.length === 0) return [here];
  const copied = db.prepare(
    `INSERT INTO erased_message_copies (panel_id, contact_id, kind, message, created_at)
     SELECT ?1, ?2, value ->> 'kind', value ->> 'message', ?3 FROM json_each(?4) WHERE true ON CONFLICT DO NOTHING`,
  );
  return [here, ...jsonArrays(elsewhere).map((part) => copied.bind(panelId, contactId, now, part.json))];
}

function erasedCopiesStatement(db: ShardDb, panelId: string, contactId: number): D1PreparedStatement {
  return db.prepare("SELECT kind, message FROM erased_message_copies WHERE panel_id = ? AND contact_id = ?").bind(panelId, contactId);
}

/** The shard's erased contacts with copies still to delete (erased_message_copies), oldest first, up to `limit` messages. */
export async function pendingErasedCopies(db: ShardDb, limit: number): Promise<Array<{ panelId: string; contactId: number; messages: ErasedMessage[] }>> {
  const { results } = await db
    .prepare("SELECT panel_id, contact_id, kind, message FROM erased_message_copies ORDER BY created_at LIMIT ?")
    .bind(limit)
    .all<{ panel_id: string; contact_id: number } & ErasedMessage>();
  const byContact = new Map<string, { panelId: string; contactId: number; messages: ErasedMessage[] }>();
  for (const r of results) {
    const key = JSON.stringify([r.panel_id, r.contact_id]);
    const entry = byContact.get(key) ?? { panelId: r.panel_id, contactId: r.contact_id, messages: [] };
    entry.messages.push({ kind: r.kind, message: r.message });
    byContact.set(key, entry);
  }
  return [...byContact.values()];
}

/**
 * Deletes the panel's outbox rows of `ids` in `db` and, in the same batch, `cleared`'s records of
 * the contact's messages there: their copies are gone (objects deleted before, and outbox rows on
 * the shards deleted before this one).
 */
export async function copiesDeleted(db: ShardDb, panelId: string, ids: readonly string[], cleared: { contactId: number; messages: readonly ErasedMessage[] } | null): Promise<void> {
  const records = db.prepare(
    `DELETE FROM erased_message_copies WHERE panel_id = ?1 AND contact_id = ?2
     AND (kind, message) IN (SELECT value ->> 'kind', value ->> 'message' FROM json_each(?3))`,
  );
  const statements = [
    ...deleteOutboxStatements(db, panelId, ids),
    ...(cleared?.messages.length ? jsonArrays(cleared.messages).map((part) => records.bind(panelId, cleared.contactId, part.json)) : []),
  ];
  if (statements.length) await db.batch(statements);
}

/** R2 keys of the outbox copies sent to these addresses or numbers (deleted before their rows). */
export async function outboxKeysOf(db: ShardDb, panelId: string, recipients: readonly string[]): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT r2_key FROM outbox WHERE panel_id = ?1 AND recipient IN (SELECT value FROM json_each(?2))")
    .bind(panelId, JSON.stringify(recipients))
    .all<{ r2_key: string }>();
  return results.map((r) => r.r2_key);
}

export interface ContactErasure {
  id: string;
  panelId: string;
  contactId: number;
  owners: string[];
  /** `pending`: under way, the contact's rows on its own shard not yet deleted (erasureUnderWay). */
  state: "pending" | "archive" | "done";
  partsDone: number;
  createdAt: number;
  finishedAt: number | null;
  /** Who asked for it, as its `contact.erased` audit entry names them; null for one recorded before shard migration 0123. */
  requestedBy: AuditActor | null;
}

interface ErasureRow {
  id: string;
  panel_id: string;
  contact_id: number;
  owners: string;
  state: ContactErasure["state"];
  parts_done: number;
  created_at: number;
  finished_at: number | null;
  requested_by: string | null;
}

const fromRow = (r: ErasureRow): ContactErasure => ({
  id: r.id,
  panelId: r.panel_id,
  contactId: r.contact_id,
  owners: JSON.parse(r.owners) as string[],
  state: r.state,
  partsDone: r.parts_done,
  createdAt: r.created_at,
  finishedAt: r.finished_at,
  requestedBy: r.requested_by === null ? null : (JSON.parse(r.requested_by) as AuditActor),
});

const requesterOf = (erasure: ContactErasure) => (erasure.requestedBy ? JSON.stringify(erasure.requestedBy) : null);

/**
 * Records `erasure`, or turns its record under way (`pending`, erasureUnderWay) into it; the
 * record under way keeps its requester, who asked first. Its audit entry is still to write.
 */
function insertErasureStatement(db: ShardDb, erasure: ContactErasure): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO contact_erasures (id, panel_id, contact_id, owners, state, parts_done, created_at, requested_by) VALUES (?, ?, ?, ?, ?, 0, ?, ?)
       ON CONFLICT (id) DO UPDATE SET owners = excluded.owners, state = excluded.state WHERE contact_erasures.state = 'pending'`,
    )
    .bind(erasure.id, erasure.panelId, erasure.contactId, JSON.stringify(erasure.owners), erasure.state, erasure.createdAt, requesterOf(erasure));
}

/**
 * Records `erasure` as under way (`pending`) on the contact's shard unless an earlier attempt's
 * is there already; the contact's erasure under way, this or that one. Written before any other
 * shard's batch, so an accepted erasure is finished even if its request dies (unfinishedErasures).
 */
export async function erasureUnderWay(db: ShardDb, erasure: ContactErasure): Promise<ContactErasure> {
  const [, read] = await db.batch<ErasureRow>([
    db
      .prepare(
        `INSERT INTO contact_erasures (id, panel_id, contact_id, owners, state, parts_done, created_at, requested_by) SELECT ?1, ?2, ?3, ?4, 'pending', 0, ?5, ?6
         WHERE NOT EXISTS (SELECT 1 FROM contact_erasures WHERE panel_id = ?2 AND contact_id = ?3 AND state = 'pending')`,
      )
      .bind(erasure.id, erasure.panelId, erasure.contactId, JSON.stringify(erasure.owners), erasure.createdAt, requesterOf(erasure)),
    db.prepare("SELECT * FROM contact_erasures WHERE panel_id = ? AND contact_id = ? AND state = 'pending' ORDER BY created_at LIMIT 1").bind(erasure.panelId, erasure.contactId),
  ]);
  return fromRow(read!.results[0]!);
}

/** The shard's erasures under way since before `before` (their request died, or was never retried), oldest first. */
export async function unfinishedErasures(db: ShardDb, before: number, limit: number): Promise<ContactErasure[]> {
  return oldErasures(db, "state = 'pending'", before, limit);
}

/** The shard's erasures meeting `condition` (a partial index's) recorded before `before`, oldest first. */
async function oldErasures(db: ShardDb, condition: string, before: number, limit: number): Promise<ContactErasure[]> {
  const { results } = await db.prepare(`SELECT * FROM contact_erasures WHERE ${condition} AND created_at < ? ORDER BY created_at LIMIT ?`).bind(before, limit).all<ErasureRow>();
  return results.map(fromRow);
}

/** Drops the record of an erasure under way that another shard finished (its contact had moved there) or whose panel is gone. */
export async function forgetErasureUnderWay(db: ShardDb, id: string): Promise<void> {
  await db.prepare("DELETE FROM contact_erasures WHERE id = ? AND state = 'pending'").bind(id).run();
}

/**
 * The shard's erasures completed (their contact's rows gone) since before `before` whose audit
 * entry is not written: their request died after its batch, before its audit line. Oldest first.
 */
export async function unauditedErasures(db: ShardDb, before: number, limit: number): Promise<ContactErasure[]> {
  return oldErasures(db, "audited_at IS NULL AND state <> 'pending'", before, limit);
}

/** The erasure's audit entry is written (or, without a requester, never will be). */
export async function erasureAudited(db: ShardDb, id: string, now: number): Promise<void> {
  await db.prepare("UPDATE contact_erasures SET audited_at = ? WHERE id = ? AND audited_at IS NULL").bind(now, id).run();
}

/** An erasure finished or being finished; one under way (`pending`) is not yet one to show. */
export async function getErasure(db: ShardDb, panelId: string, id: string): Promise<ContactErasure | null> {
  const row = await db.prepare("SELECT * FROM contact_erasures WHERE panel_id = ? AND id = ? AND state <> 'pending'").bind(panelId, id).first<ErasureRow>();
  return row ? fromRow(row) : null;
}

/** Erasures whose archived days are still being rewritten, of every panel of the shard, oldest first. */
export async function pendingErasures(db: ShardDb, limit: number): Promise<ContactErasure[]> {
  const { results } = await db.prepare("SELECT * FROM contact_erasures WHERE state = 'archive' ORDER BY created_at LIMIT ?").bind(limit).all<ErasureRow>();
  return results.map(fromRow);
}

/** An archived part rewritten without the erased owners: it no longer names them. */
export async function partRewritten(db: ShardDb, erasure: ContactErasure, part: PartName): Promise<void> {
  await db.batch([
    ...forgetOwnersStatements(db, erasure.panelId, part, erasure.owners),
    db.prepare("UPDATE contact_erasures SET parts_done = parts_done + 1 WHERE id = ?").bind(erasure.id),
  ]);
}

/** The archive parts still naming any of the erasure's owners. */
export async function partsNaming(db: ShardDb, panelId: string, owners: readonly string[], limit: number): Promise<PartName[]> {
  return partsOfOwners(db, panelId, owners, limit);
}

/** Marks the erasure done unless outbox copies of its contact's messages are still to delete here; whether it is done. */
export async function finishErasure(db: ShardDb, erasure: ContactErasure, now: number): Promise<boolean> {
  const [, read] = await db.batch<{ state: string }>([
    db
      .prepare(
        `UPDATE contact_erasures SET state = 'done', finished_at = ?1 WHERE id = ?2 AND state = 'archive'
         AND NOT EXISTS (SELECT 1 FROM erased_message_copies WHERE panel_id = ?3 AND contact_id = ?4)`,
      )
      .bind(now, erasure.id, erasure.panelId, erasure.contactId),
    db.prepare("SELECT state FROM contact_erasures WHERE id = ?").bind(erasure.id),
  ]);
  return read!.results[0]?.state === "done";
}
