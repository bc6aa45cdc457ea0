import { auditPageAnswer } from "../domain/answers/panels";
import { NEEDS } from "../domain/permissions";
import { auditFilterOf, auditQuery, type AuditAction } from "../domain/audit";
import { csvAttachment } from "../lib/http/respond";
import { auditLogCsv } from "../services/audit/export";
import { listAuditEntries, namedActor } from "../store/audit";
import { recordAudit, type Auditor } from "../services/audit/record";
import type { Panel } from "../store/panels";
import type { ShardDb } from "../store/shards";
import { isoTime } from "../store/sql";
import type { AdminCaller } from "./auth";
import { definePanelRoute } from "./route";

/** The auditor a service records for an admin caller: the signed-in operator, or the ADMIN_TOKEN. */
export function auditorOf(caller: AdminCaller): Auditor {
  if (caller.kind !== "operator") return { operator: null };
  const { id, email } = caller.session.operator;
  return { operator: { id, email } };
}

/**
 * Records a change in the panel's audit log, after the change is stored: who (the operator, or
 * the deployment's ADMIN_TOKEN), what, on which object, with details that are never secrets.
 */
export async function audited(
  req: { db: ShardDb; caller: AdminCaller; panel: Panel },
  action: AuditAction,
  target: string,
  detail: Record<string, unknown> = {},
): Promise<void> {
  await recordAudit(req.db, req.panel.id, auditorOf(req.caller), action, target, detail);
}

const readAuditLog = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/audit",
  role: NEEDS.audit,
  response: auditPageAnswer,
  summary:
    "The panel's audit log, newest first: every configuration change by an operator, the ADMIN_TOKEN or an API key (keys, API mode, settings, webhooks, campaigns, journeys, segments, lists, attributes, activities, imports, hand edits of contacts, users and operators), with before/after values and secrets redacted; narrowed by actor, action, target_kind and a from/to time range; next_cursor pages on; format=csv downloads every matching entry",
  query: auditQuery,
  async handle({ db, query, panel }) {
    const filter = auditFilterOf(query);
    if (query.format === "csv") return csvAttachment(auditLogCsv(db, panel.id, filter), null, `audit-${panel.id}.csv`);
    const found = await listAuditEntries(db, panel.id, query.before, filter, query.limit + 1);
    const page = found.slice(0, query.limit);
    return {
      entries: page.map((e) => ({
        id: e.id,
        at: isoTime(e.at),
        actor: namedActor(e),
        action: e.action,
        target_kind: e.action.slice(0, e.action.indexOf(".")),
        target: e.target,
        detail: e.detail,
      })),
      next_cursor: found.length > query.limit ? String(page.at(-1)!.id) : null,
    };
  },
});

export const auditRoutes = [readAuditLog];
