import type { ShardDb } from "./shards";
import type { AuditAction, AuditActorKind, AuditFilter } from "../domain/audit";
import type { AuditEntryView } from "../domain/answers";

export interface AuditEntry {
  id: number;
  panelId: string;
  at: number;
  /** operator: actorId/actorEmail are the operator's; api_key: the API user's whose key it was; admin_token: both null. */
  actorKind: AuditActorKind;
  actorId: string | null;
  actorEmail: string | null;
  action: AuditAction;
  target: string;
  detail: Record<string, unknown>;
}

/** Who an entry names, as the log stores it. */
export type AuditActor = Pick<AuditEntry, "actorKind" | "actorId" | "actorEmail">;

/** An actor as the log's readers see one: an entry's `actor`, or an actor its detail names. */
export function namedActor(actor: AuditActor): AuditEntryView["actor"] {
  if (actor.actorKind === "admin_token") return { kind: "admin_token" };
  if (actor.actorKind === "api_key") return { kind: "api_key", user_id: actor.actorId ?? "", email: actor.actorEmail };
  return { kind: "operator", id: actor.actorId ?? "", email: actor.actorEmail };
}

/** Whether two actors are the same one. */
export function sameActor(a: AuditActor, b: AuditActor): boolean {
  return a.actorKind === b.actorKind && a.actorId === b.actorId;
}

export async function insertAuditEntry(db: ShardDb, entry: Omit<AuditEntry, "id">): Promise<void> {
  await db
    .prepare("INSERT INTO audit_log (panel_id, at, actor_kind, actor_id, actor_email, action, target, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
    .bind(entry.panelId, entry.at, entry.actorKind, entry.actorId, entry.actorEmail, entry.action, entry.target, JSON.stringify(entry.detail))
    .run();
}

/**
 * Inserts `entry` unless the panel's log has one of the same action and target at or after
 * `since` whose detail's `key` is the same: a step that may run twice (a request and the cron
 * after it) records itself once. Read through the time index (`+panel_id` keeps the planner off
 * the panel's whole log), so it costs the entries of the whole shard since `since`, a few.
 */
export async function insertAuditEntryOnce(db: ShardDb, entry: Omit<AuditEntry, "id">, key: string, since: number): Promise<void> {
  await db
    .prepare(
      `INSERT INTO audit_log (panel_id, at, actor_kind, actor_id, actor_email, action, target, detail) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
       WHERE NOT EXISTS (SELECT 1 FROM audit_log WHERE at >= ?9 AND +panel_id = ?1 AND action = ?6 AND target = ?7 AND detail ->> ?10 = ?8 ->> ?10)`,
    )
    .bind(entry.panelId, entry.at, entry.actorKind, entry.actorId, entry.actorEmail, entry.action, entry.target, JSON.stringify(entry.detail), since, `$.${key}`)
    .run();
}

/**
 * The panel's entries newest first, before entry id `before` when given, narrowed by `filter`.
 * Walks the panel's entries by id (audit_log_by_panel); a year of a panel's changes is small.
 */
export async function listAuditEntries(db: ShardDb, panelId: string, before: number | undefined, filter: AuditFilter, limit: number): Promise<AuditEntry[]> {
  const { results } = await db
    .prepare(
      `SELECT id, panel_id, at, actor_kind, actor_id, actor_email, action, target, detail FROM audit_log
       WHERE panel_id = ?1 AND id < ?2 AND (?3 IS NULL OR action = ?3)
         AND (?4 IS NULL OR actor_kind = ?4) AND (?5 IS NULL OR actor_id = ?5)
         AND (?6 IS NULL OR substr(action, 1, length(?6) + 1) = ?6 || '.')
         AND at >= ?7 AND at < ?8
       ORDER BY id DESC LIMIT ?9`,
    )
    .bind(
      panelId,
      before ?? Number.MAX_SAFE_INTEGER,
      filter.action ?? null,
      filter.actorKind ?? null,
      filter.actorId ?? null,
      filter.targetKind ?? null,
      filter.from ?? 0,
      filter.to ?? Number.MAX_SAFE_INTEGER,
      limit,
    )
    .all<{ id: number; panel_id: string; at: number; actor_kind: AuditActorKind; actor_id: string | null; actor_email: string | null; action: AuditAction; target: string; detail: string }>();
  return results.map((row) => ({
    id: row.id,
    panelId: row.panel_id,
    at: row.at,
    actorKind: row.actor_kind,
    actorId: row.actor_id,
    actorEmail: row.actor_email,
    action: row.action,
    target: row.target,
    detail: JSON.parse(row.detail) as Record<string, unknown>,
  }));
}
