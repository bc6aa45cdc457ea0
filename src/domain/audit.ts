import { z } from "../lib/z";

/** What the audit log records (GET /panels/{panel}/audit): the changes owners answer for. */
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
  "webhook.created",
  "webhook.edited",
  "webhook.deleted",
  "webhook.enabled",
  "campaign.published",
  "campaign.test_sent",
  "campaign.drafted",
  "campaign.edited",
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
  "list.deleted",
  "list.emptied",
  "sender_domain.added",
  "sender_domain.removed",
  "tracking_domain.set",
  "tracking_domain.removed",
  "sms.settings_changed",
  "push.settings_changed",
  "contact.erased",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** GET /panels/{panel}/audit: newest first, a page before an entry id. */
export const auditQuery = z.strictObject({
  before: z.coerce.number().int().min(1).optional(),
  action: z.enum(AUDIT_ACTIONS, { error: `must be one of ${AUDIT_ACTIONS.join(", ")}` }).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/** The audit action of a journey status change, from the status it had. */
export function journeyStatusAction(from: string, to: "running" | "paused" | "stopped"): AuditAction {
  if (to === "running") return from === "paused" ? "journey.resumed" : "journey.started";
  return to === "paused" ? "journey.paused" : "journey.stopped";
}
