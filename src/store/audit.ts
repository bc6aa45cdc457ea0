import type { ShardDb } from "./shards";
import type { AuditAction } from "../domain/audit";

export interface AuditEntry {
  id: number;
  panelId: string;
  at: number;
  actorId: string | null;
  actorEmail: string | null;
  action: AuditAction;
  target: string;
  detail: Record<string, unknown>;
}

export async function insertAuditEntry(db: ShardDb, entry: Omit<AuditEntry, "id">): Promise<void> {
  await db
    .prepare("INSERT INTO audit_log (panel_id, at, actor_id, actor_email, action, target, detail) VALUES (?, ?, ?, ?, ?, ?, ?)")
    .bind(entry.panelId, entry.at, entry.actorId, entry.actorEmail, entry.action, entry.target, JSON.stringify(entry.detail))
    .run();
}

/** The panel's entries newest first, before entry id `before` when given, of one action when given. */
export async function listAuditEntries(db: ShardDb, panelId: string, before: number | undefined, action: AuditAction | undefined, limit: number): Promise<AuditEntry[]> {
  const { results } = await db
    .prepare(
      `SELECT id, panel_id, at, actor_id, actor_email, action, target, detail FROM audit_log
       WHERE panel_id = ?1 AND id < ?2 AND (?3 IS NULL OR action = ?3) ORDER BY id DESC LIMIT ?4`,
    )
    .bind(panelId, before ?? Number.MAX_SAFE_INTEGER, action ?? null, limit)
    .all<{ id: number; panel_id: string; at: number; actor_id: string | null; actor_email: string | null; action: AuditAction; target: string; detail: string }>();
  return results.map((row) => ({
    id: row.id,
    panelId: row.panel_id,
    at: row.at,
    actorId: row.actor_id,
    actorEmail: row.actor_email,
    action: row.action,
    target: row.target,
    detail: JSON.parse(row.detail) as Record<string, unknown>,
  }));
}
