import type { ShardDb } from "./shards";
import { jsonArrays } from "./json-arrays";
import { batchWithJsonEach } from "./json-each";

/** A message the outbox provider kept: the row here, the .eml in R2 under r2Key. */
export interface OutboxRecord {
  id: string;
  panelId: string;
  channel: string;
  recipient: string;
  sender: string;
  subject: string;
  campaignId: string | null;
  r2Key: string;
  size: number;
  createdAt: number;
  /** Why a real provider would have refused the message; null when none would. */
  note: string | null;
}

interface OutboxRow {
  id: string;
  panel_id: string;
  channel: string;
  recipient: string;
  sender: string;
  subject: string;
  campaign_id: string | null;
  r2_key: string;
  size: number;
  created_at: number;
  note: string | null;
}

const COLUMNS = ["id", "panel_id", "channel", "recipient", "sender", "subject", "campaign_id", "r2_key", "size", "created_at", "note"];

function fromRow(row: OutboxRow): OutboxRecord {
  return {
    id: row.id,
    panelId: row.panel_id,
    channel: row.channel,
    recipient: row.recipient,
    sender: row.sender,
    subject: row.subject,
    campaignId: row.campaign_id,
    r2Key: row.r2_key,
    size: row.size,
    createdAt: row.created_at,
    note: row.note,
  };
}

/**
 * A copy to record. `contactId` marks a contact's message, whose row (campaign_messages by
 * campaign and contact; journey_messages by id when it has no campaign) must still exist for
 * the copy to be kept: an erasure deletes that row, and a send under way when it ran must not
 * leave a copy after it. Without one (a test copy) the copy is always recorded.
 */
export interface NewOutboxRecord extends OutboxRecord {
  contactId?: number | null;
}

/** SQL: whether the message `id` of `contactId` (of campaign `campaignId`, or a journey's when NULL) still has its row in the database. */
function messageHere(panelId: string, id: string, campaignId: string, contactId: string): string {
  return `CASE WHEN ${campaignId} IS NULL
    THEN EXISTS (SELECT 1 FROM journey_messages m WHERE m.msgid = ${id} AND m.panel_id = ${panelId})
    ELSE EXISTS (SELECT 1 FROM campaign_messages m WHERE m.campaign_id = ${campaignId} AND m.contact_id = ${contactId} AND m.panel_id = ${panelId}) END`;
}

/** A record as read by json_each (`c.value ->> i`): its COLUMNS in order, then its contact. */
const jsonRow = (r: NewOutboxRecord) => [r.id, r.panelId, r.channel, r.recipient, r.sender, r.subject, r.campaignId, r.r2Key, r.size, r.createdAt, r.note, r.contactId ?? null];
const CONTACT = `c.value ->> ${COLUMNS.length}`;

/**
 * Records the copies, from JSON arrays (decisions 0035, 0036); an id already recorded is left as it is
 * (a resend). `messagesHere`: the messages' rows are in this database too, and a contact's copy
 * is recorded only while its row is there (checked in the insert itself, so no erasure's batch
 * comes between); otherwise each is recorded. Returns the ids recorded now.
 */
export async function insertOutboxRecords(db: ShardDb, records: readonly NewOutboxRecord[], messagesHere = false): Promise<string[]> {
  if (records.length === 0) return [];
  const guard = messagesHere ? `${CONTACT} IS NULL OR ${messageHere("c.value ->> 1", "c.value ->> 0", "c.value ->> 6", CONTACT)}` : "true";
  const parts = jsonArrays(records.map(jsonRow));
  const results = await batchWithJsonEach<{ id: string }>(db, (each) => {
    const statement = db.prepare(
      `INSERT INTO outbox (${COLUMNS.join(", ")}) SELECT ${COLUMNS.map((_, i) => `c.value ->> ${i}`).join(", ")} FROM ${each}(?1) c WHERE ${guard}
       ON CONFLICT (id) DO NOTHING RETURNING id`,
    );
    return parts.map((part) => statement.bind(part.json));
  });
  return results.flatMap((r) => r.results.map((row) => row.id));
}

/**
 * Of contacts' messages, the ids whose row is no longer in `db` (their contact was erased).
 * `unrecorded`: only those with no outbox row in `db` either (one is an earlier attempt's,
 * whose copy the erasure deletes).
 */
export async function messagesGone(
  db: ShardDb,
  panelId: string,
  messages: ReadonlyArray<{ id: string; campaignId: string | null; contactId: number }>,
  unrecorded = false,
): Promise<string[]> {
  if (messages.length === 0) return [];
  const parts = jsonArrays(messages.map((m) => [m.id, m.campaignId, m.contactId]));
  const results = await batchWithJsonEach<{ id: string }>(db, (each) => {
    const statement = db.prepare(
      `SELECT c.value ->> 0 AS id FROM ${each}(?2) c WHERE NOT ${messageHere("?1", "c.value ->> 0", "c.value ->> 1", "c.value ->> 2")}
       ${unrecorded ? "AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = c.value ->> 0)" : ""}`,
    );
    return parts.map((part) => statement.bind(panelId, part.json));
  });
  return results.flatMap((r) => r.results.map((row) => row.id));
}

/** Deletes the panel's outbox rows of these message ids. */
export async function deleteOutboxRecords(db: ShardDb, panelId: string, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.batch(deleteOutboxStatements(db, panelId, ids));
}

/** The statements of deleteOutboxRecords, for a batch doing more. */
export function deleteOutboxStatements(db: ShardDb, panelId: string, ids: readonly string[]): D1PreparedStatement[] {
  const statement = db.prepare("DELETE FROM outbox WHERE panel_id = ?1 AND id IN (SELECT value FROM json_each(?2))");
  return jsonArrays(ids).map((part) => statement.bind(panelId, part.json));
}

/** The panel's outbox, newest first; of one channel and/or one campaign when given. */
export async function listOutbox(db: ShardDb, panelId: string, limit: number, filter: { channel?: string; campaignId?: string } = {}): Promise<OutboxRecord[]> {
  const { results } = await db
    .prepare(
      `SELECT * FROM outbox WHERE panel_id = ?1 AND (?2 IS NULL OR channel = ?2) AND (?4 IS NULL OR campaign_id = ?4)
       ORDER BY created_at DESC, rowid DESC LIMIT ?3`,
    )
    .bind(panelId, filter.channel ?? null, limit, filter.campaignId ?? null)
    .all<OutboxRow>();
  return results.map(fromRow);
}

export async function getOutboxRecord(db: ShardDb, panelId: string, id: string): Promise<OutboxRecord | null> {
  const row = await db.prepare("SELECT * FROM outbox WHERE panel_id = ? AND id = ?").bind(panelId, id).first<OutboxRow>();
  return row ? fromRow(row) : null;
}
