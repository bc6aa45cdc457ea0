import type { ShardDb } from "./shards";
export interface NotificationRecord {
  id: string;
  panelId: string;
  kind: string;
  recipients: string[];
  subject: string;
  body: string;
  status: "sending" | "sent" | "failed";
  error: string | null;
  createdAt: number;
}

interface NotificationRow {
  id: string;
  panel_id: string;
  kind: string;
  recipients: string;
  subject: string;
  body: string;
  status: NotificationRecord["status"];
  error: string | null;
  created_at: number;
}

/**
 * Records a notification about to be sent. With a dedupe key, a second claim for the same key
 * returns false and the caller must not send again.
 */
export async function claimNotification(db: ShardDb, record: NotificationRecord, dedupeKey: string | null): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO notifications (id, panel_id, kind, recipients, subject, body, status, error, dedupe_key, created_at)
       VALUES (?, ?, ?, ?, ?, ?, 'sending', NULL, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING`,
    )
    .bind(record.id, record.panelId, record.kind, JSON.stringify(record.recipients), record.subject, record.body, dedupeKey, record.createdAt)
    .run();
  return result.meta.changes > 0;
}

/** Recipients of the panel's notifications of these kinds since `since` that were not refused by the cap. */
export async function recentNotificationCopies(db: ShardDb, panelId: string, kinds: string[], since: number): Promise<number> {
  const row = await db
    .prepare(
      `SELECT COALESCE(SUM(json_array_length(recipients)), 0) AS copies FROM notifications
       WHERE panel_id = ? AND created_at > ? AND kind IN (SELECT value FROM json_each(?)) AND (error IS NULL OR error NOT LIKE 'not sent:%')`,
    )
    .bind(panelId, since, JSON.stringify(kinds))
    .first<{ copies: number }>();
  return row?.copies ?? 0;
}

export async function finishNotification(db: ShardDb, id: string, status: "sent" | "failed", error: string | null): Promise<void> {
  await db.prepare("UPDATE notifications SET status = ?, error = ? WHERE id = ?").bind(status, error, id).run();
}

export async function listNotifications(db: ShardDb, panelId: string, limit: number, kind?: string): Promise<NotificationRecord[]> {
  const { results } = await db
    .prepare(
      `SELECT * FROM notifications WHERE panel_id = ? AND (?2 IS NULL OR kind = ?2)
       ORDER BY created_at DESC, rowid DESC LIMIT ?3`,
    )
    .bind(panelId, kind ?? null, limit)
    .all<NotificationRow>();
  return results.map((row) => ({
    id: row.id,
    panelId: row.panel_id,
    kind: row.kind,
    recipients: JSON.parse(row.recipients) as string[],
    subject: row.subject,
    body: row.body,
    status: row.status,
    error: row.error,
    createdAt: row.created_at,
  }));
}
