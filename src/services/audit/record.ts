import { redactAuditDetail, type AuditAction } from "../../domain/audit";
import { insertAuditEntry } from "../../store/audit";
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
  const actor = by.apiKey
    ? { actorKind: "api_key" as const, actorId: by.apiKey.userId, actorEmail: by.apiKey.email }
    : by.operator
      ? { actorKind: "operator" as const, actorId: by.operator.id, actorEmail: by.operator.email }
      : { actorKind: "admin_token" as const, actorId: null, actorEmail: null };
  await insertAuditEntry(db, { panelId, at: Date.now(), ...actor, action, target, detail: redactAuditDetail(detail) });
}
