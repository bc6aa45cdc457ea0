import { redactAuditDetail, type AuditAction } from "../../domain/audit";
import { insertAuditEntry, insertAuditEntryOnce, type AuditActor } from "../../store/audit";
import type { ShardDb } from "../../store/shards";

/**
 * Who made a change the panel's audit log records: an operator, the deployment's ADMIN_TOKEN
 * (`operator: null`), or (`apiKey`) the API user whose key made an envelope call that changed
 * configuration (lists, imports, published broadcasts).
 */
export interface Auditor {
  operator: { id: string; email: string } | null;
  apiKey?: { userId: string; email: string };
}

/** The auditor of an envelope call made with `user`'s key. */
export function apiKeyAuditor(user: { id: string; email: string }): Auditor {
  return { operator: null, apiKey: { userId: user.id, email: user.email } };
}

/**
 * Records a change in the panel's audit log, after the change is stored. `detail` says what
 * changed (before/after values where there were any); secrets in it are redacted here.
 */
export async function recordAudit(
  db: ShardDb,
  panelId: string,
  by: Auditor,
  action: AuditAction,
  target: string,
  detail: Record<string, unknown> = {},
): Promise<void> {
  await insertAuditEntry(db, { panelId, at: Date.now(), ...actorOf(by), action, target, detail: redactAuditDetail(detail) });
}

/** The actor an entry by `by` names, as the log stores it (kept too where an entry is written later, by another path). */
export function actorOf(by: Auditor): AuditActor {
  return by.apiKey
    ? { actorKind: "api_key", actorId: by.apiKey.userId, actorEmail: by.apiKey.email }
    : by.operator
      ? { actorKind: "operator", actorId: by.operator.id, actorEmail: by.operator.email }
      : { actorKind: "admin_token", actorId: null, actorEmail: null };
}

/**
 * Records, as `actor`, a change that more than one path may complete (a request, or the cron
 * after it died): once, the entry told apart by its detail's `key` among those since `since`.
 */
export async function recordAuditOnce(
  db: ShardDb,
  panelId: string,
  actor: AuditActor,
  action: AuditAction,
  target: string,
  detail: Record<string, unknown>,
  key: string,
  since: number,
): Promise<void> {
  // Never before `since`, where the check looks, whatever the clock of the path writing it.
  await insertAuditEntryOnce(db, { panelId, at: Math.max(Date.now(), since), ...actor, action, target, detail: redactAuditDetail(detail) }, key, since);
}
