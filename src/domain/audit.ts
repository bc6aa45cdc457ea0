import { z } from "../lib/z";

/**
 * What the audit log records (GET /panels/{panel}/audit): every change to a panel's
 * configuration, by an operator, the ADMIN_TOKEN or an API key. The part before the dot is the
 * kind of object changed (the `target_kind` filter). Contact data written through the API
 * (add, update, delete) is not configuration and is not recorded: it is the API's everyday
 * traffic and would bury the changes; the panel's hand edits of one contact are.
 */
export const AUDIT_ACTIONS = [
  "panel.api_mode_changed",
  "panel.settings_changed",
  "user.created",
  "user.disabled",
  "user.enabled",
  "user.key_rotated",
  "operator.added",
  "operator.role_changed",
  "operator.removed",
  "operator.invited",
  "operator.invitation_resent",
  "operator.invitation_revoked",
  "operator.invitation_accepted",
  "operator.passkey_added",
  "operator.passkey_removed",
  "webhook.created",
  "webhook.edited",
  "webhook.deleted",
  "webhook.enabled",
  "webhook.replay_started",
  "webhook.replay_cancelled",
  "campaign.published",
  "campaign.test_sent",
  "campaign.drafted",
  "campaign.edited",
  "campaign.ab_test_set",
  "campaign.ab_test_removed",
  "campaign.scheduled",
  "campaign.unscheduled",
  "campaign.paused",
  "campaign.resumed",
  "campaign.cancelled",
  "campaign.cloned",
  "campaign.deleted",
  "campaign.archived",
  "journey.created",
  "journey.edited",
  "journey.started",
  "journey.paused",
  "journey.resumed",
  "journey.stopped",
  "segment.created",
  "segment.edited",
  "segment.deleted",
  "email_template.created",
  "email_template.edited",
  "email_template.deleted",
  "topic.created",
  "topic.edited",
  "topic.deleted",
  "signup_form.created",
  "signup_form.edited",
  "signup_form.deleted",
  "signup_form.settings_changed",
  "list.created",
  "list.renamed",
  "list.deleted",
  "list.emptied",
  "sender_domain.added",
  "sender_domain.removed",
  "alert_subscription.added",
  "alert_subscription.removed",
  "tracking_domain.set",
  "tracking_domain.removed",
  "sms.settings_changed",
  "sms.template_created",
  "sms.template_replaced",
  "sms.template_deleted",
  "sms.number_stopped",
  "sms.number_allowed",
  "push.settings_changed",
  "contact.erased",
  "contact.added",
  "contact.edited",
  "contact.preferences_changed",
  "attribute.defined",
  "activity.defined",
  "import.started",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * A phone number as the log names it: its last four digits only (`…3210`). The log outlives an
 * erasure, which keeps the number's stop only as a hash; four digits tell an owner which stop
 * changed without keeping the number.
 */
export function maskedNumber(digits: string): string {
  return `…${digits.slice(-4)}`;
}

/** The kinds of object the actions change: what comes before the dot. */
export const AUDIT_TARGET_KINDS = [...new Set(AUDIT_ACTIONS.map((action) => action.slice(0, action.indexOf("."))))] as [string, ...string[]];

/** Who made a change: an operator, the deployment's ADMIN_TOKEN, or an API user's key. */
export const AUDIT_ACTOR_KINDS = ["operator", "admin_token", "api_key"] as const;
export type AuditActorKind = (typeof AUDIT_ACTOR_KINDS)[number];

const instant = (field: string) =>
  z
    .string()
    .refine((text) => /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(text) && !Number.isNaN(Date.parse(text)), {
      error: `must be an ISO 8601 date or date-time (UTC unless it names its offset), e.g. 2025-01-31 or 2025-01-31T08:00:00Z`,
    })
    .transform((text) => Date.parse(/T.*(Z|[+-]\d{2}:\d{2})$/.test(text) || !text.includes("T") ? text : `${text}Z`))
    .meta({ description: `${field}, ISO 8601 (UTC unless it names its offset)` });

/**
 * GET /panels/{panel}/audit: newest first, a page before an entry id, narrowed by who acted
 * (`admin_token`, `api_key`, or an operator's or API user's id), the action or the kind of
 * object, and a time range [from, to). format=csv answers every matching entry as one file.
 */
export const auditQuery = z
  .strictObject({
    before: z.coerce.number().int().min(1).optional(),
    action: z.enum(AUDIT_ACTIONS, { error: `must be one of ${AUDIT_ACTIONS.join(", ")}` }).optional(),
    target_kind: z.enum(AUDIT_TARGET_KINDS, { error: `must be one of ${AUDIT_TARGET_KINDS.join(", ")}` }).optional(),
    actor: z.string().trim().min(1).max(100).optional().meta({ description: "admin_token, api_key, or the id of an operator or API user" }),
    from: instant("Entries at or after this time").optional(),
    to: instant("Entries before this time").optional(),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    format: z.enum(["json", "csv"]).default("json"),
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from < q.to, { path: ["to"], error: "must be after from" });
export type AuditQuery = z.output<typeof auditQuery>;

/** What the store filters on, from a query. */
export interface AuditFilter {
  actorKind?: AuditActorKind;
  actorId?: string;
  action?: AuditAction;
  targetKind?: string;
  from?: number;
  to?: number;
}

export function auditFilterOf(query: Pick<AuditQuery, "actor" | "action" | "target_kind" | "from" | "to">): AuditFilter {
  const actor = query.actor;
  const byKind = actor === "admin_token" || actor === "api_key";
  return {
    actorKind: byKind ? actor : undefined,
    actorId: actor !== undefined && !byKind ? actor : undefined,
    action: query.action,
    targetKind: query.target_kind,
    from: query.from,
    to: query.to,
  };
}

const SECRET_NAME = /pass(word)?|secret|token|api_?key|credential|private|auth/i;
export const REDACTED = "[redacted]";

/**
 * An entry's detail with every secret replaced: members named like one (password, secret,
 * token, key...) at any depth, and the query and credentials of URLs (presigned file links
 * carry their signature there). Applied to every entry as it is recorded, so no caller's
 * oversight can store a secret in the log.
 */
export function redactAuditDetail(detail: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(detail).map(([name, value]) => [name, SECRET_NAME.test(name) && !saysOnlyWhatHappened(value) ? REDACTED : redactValue(value)]));
}

/** Values a secret's member may keep: they tell that it changed, not what it is. */
const SECRET_MARKERS = new Set(["changed", "set", "unset", "removed", REDACTED]);
function saysOnlyWhatHappened(value: unknown): boolean {
  return value === null || typeof value === "boolean" || (typeof value === "string" && SECRET_MARKERS.has(value));
}

function redactValue(value: unknown): unknown {
  if (typeof value === "string") return /^https?:\/\//i.test(value) ? withoutUrlSecrets(value) : value;
  if (Array.isArray(value)) return value.map(redactValue);
  if (value !== null && typeof value === "object") return redactAuditDetail(value as Record<string, unknown>);
  return value;
}

function withoutUrlSecrets(text: string): string {
  try {
    const url = new URL(text);
    if (!url.search && !url.username && !url.password) return text;
    url.username = "";
    url.password = "";
    url.search = url.search ? `?${REDACTED}` : "";
    return url.toString();
  } catch {
    return text;
  }
}

/** The changed members of two records, each as { before, after }: an audit entry's detail of an edit. */
export function changedValues(before: Record<string, unknown>, after: Record<string, unknown>): Record<string, { before: unknown; after: unknown }> {
  const changed: Record<string, { before: unknown; after: unknown }> = {};
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const from = before[name] ?? null;
    const to = after[name] ?? null;
    if (JSON.stringify(from) !== JSON.stringify(to)) changed[name] = { before: from, after: to };
  }
  return changed;
}

/** The audit log as CSV: its header, then one line per entry (lines are formatted by domain/csv.ts). */
export const AUDIT_CSV_HEADER = ["id", "at", "actor_kind", "actor_id", "actor_email", "action", "target_kind", "target", "detail"] as const;

/** The audit action of a journey status change, from the status it had. */
export function journeyStatusAction(from: string, to: "running" | "paused" | "stopped"): AuditAction {
  if (to === "running") return from === "paused" ? "journey.resumed" : "journey.started";
  return to === "paused" ? "journey.paused" : "journey.stopped";
}
