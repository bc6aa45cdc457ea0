import type { ShardDb } from "./shards";
import { chunk, D1_MAX_PARAMS, placeholders } from "./sql";

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

/** Records messages in multi-row inserts; an id already recorded is left as it is (a resend). */
export async function insertOutboxRecords(db: ShardDb, records: readonly OutboxRecord[]): Promise<void> {
  if (records.length === 0) return;
  const perStatement = Math.floor(D1_MAX_PARAMS / COLUMNS.length);
  const statements = chunk(records, perStatement).map((rows) =>
    db
      .prepare(
        `INSERT INTO outbox (${COLUMNS.join(", ")}) VALUES ${rows.map(() => `(${placeholders(COLUMNS.length)})`).join(", ")}
         ON CONFLICT (id) DO NOTHING`,
      )
      .bind(
        ...rows.flatMap((r) => [r.id, r.panelId, r.channel, r.recipient, r.sender, r.subject, r.campaignId, r.r2Key, r.size, r.createdAt, r.note]),
      ),
  );
  await db.batch(statements);
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
