import type { AuditAction } from "../../domain/audit";
import { insertAuditEntry } from "../../store/audit";
import type { ShardDb } from "../../store/shards";

/**
 * Who made a change the panel's audit log records: an operator, or the deployment's
 * ADMIN_TOKEN (`operator: null`). Envelope calls are not audited, so their use cases get none.
 */
export interface Auditor {
  operator: { id: string; email: string } | null;
}

/** Records a change in the panel's audit log, after the change is stored; `detail` never holds secrets. */
export async function recordAudit(
  db: ShardDb,
  panelId: string,
  by: Auditor,
  action: AuditAction,
  target: string,
  detail: Record<string, unknown> = {},
): Promise<void> {
  await insertAuditEntry(db, {
    panelId,
    at: Date.now(),
    actorId: by.operator?.id ?? null,
    actorEmail: by.operator?.email ?? null,
    action,
    target,
    detail,
  });
}
