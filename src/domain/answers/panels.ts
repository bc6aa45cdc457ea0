// The admin API's answers about a panel and its people (panels, users, operators, schema,
// audit, overview): the routes return them and the panel reads them (`z.output`).
import { z } from "../../lib/z";
import { SCALAR_PARAM_TYPES } from "../activity-param-types";
import { ATTRIBUTE_TYPES, UNKNOWN_ATTRIBUTE_MODES } from "../attributes";
import { AUDIT_ACTIONS } from "../audit";
import { OPERATOR_ROLES } from "../operators";
import { COUNT_REQUEST_CAP, type PanelHistory } from "../overview";
import { RULE_CHANNELS } from "../message-rules";

/** An ISO 8601 instant, as every answer writes times. */
export const isoInstant = z.string();

export const panelAnswer = z.strictObject({
  id: z.string(),
  name: z.string(),
  primary_key: z.string(),
  timezone: z.string(),
  region: z.string(),
  api_mode: z.boolean(),
  client_id: z.string(),
  unknown_attributes: z.enum(UNKNOWN_ATTRIBUTE_MODES),
  cors_origins: z.array(z.string()),
  shard: z.number(),
  event_retention_days: z.number(),
  campaign_lead_minutes: z.number().meta({ description: "How far ahead the panel's campaigns must be scheduled, in minutes (0: Send now)" }),
  message_rules: z
    .strictObject({
      caps: z.array(z.strictObject({ channel: z.enum(RULE_CHANNELS), max: z.number(), days: z.number() })),
      quiet_hours: z.array(z.strictObject({ channel: z.enum(RULE_CHANNELS), from: z.string(), to: z.string() })),
    })
    .meta({ description: "Frequency caps (at most max messages per days days) and quiet hours (from-to on the contact's clock) per channel" }),
  require_two_factor: z.boolean().meta({ description: "Operators must sign in with a second factor (TOTP)" }),
  created_at: isoInstant,
  updated_at: isoInstant,
});
export const panelListAnswer = z.strictObject({ panels: z.array(panelAnswer) });

export const userAnswer = z.strictObject({ id: z.string(), email: z.string(), name: z.string().nullable(), disabled: z.boolean(), created_at: isoInstant });
export const userListAnswer = z.strictObject({ users: z.array(userAnswer) });
/** A new user, and the API key shown this once. */
export const createdUserAnswer = userAnswer.extend({ api_key: z.string() });
export const apiKeyAnswer = z.strictObject({ api_key: z.string() });

export const operatorAnswer = z.strictObject({
  id: z.string(),
  email: z.string(),
  name: z.string().nullable(),
  role: z.enum(OPERATOR_ROLES),
  disabled: z.boolean(),
  created_at: isoInstant,
});
export const operatorListAnswer = z.strictObject({ operators: z.array(operatorAnswer) });
export const operatorRemovedAnswer = z.strictObject({ removed: z.boolean() });

/** An open invitation (not yet accepted nor revoked); `expired` ones wait for a resend or a revoke. */
export const invitationAnswer = z.strictObject({
  id: z.string(),
  email: z.string(),
  role: z.enum(OPERATOR_ROLES),
  invited_by: z.string().nullable().meta({ description: "The inviting operator's email; null for the ADMIN_TOKEN" }),
  sent_at: isoInstant,
  expires_at: isoInstant,
  expired: z.boolean(),
});
export const invitationListAnswer = z.strictObject({ invitations: z.array(invitationAnswer) });
export const invitationRevokedAnswer = z.strictObject({ revoked: z.boolean() });

export const attributeAnswer = z.strictObject({ name: z.string(), type: z.enum(ATTRIBUTE_TYPES) });
export const attributeListAnswer = z.strictObject({ attributes: z.array(attributeAnswer) });

/** A parameter's type: a scalar type, or an array of items whose members have scalar types (CONTRACT 10). */
const scalarParamTypeAnswer = z.enum(SCALAR_PARAM_TYPES);
export const activityParamTypeAnswer = z.union([
  scalarParamTypeAnswer,
  z.strictObject({ type: z.literal("array"), of: z.record(z.string(), scalarParamTypeAnswer) }),
]);

export const activityAnswer = z.strictObject({
  activityid: z.string(),
  name: z.string(),
  params: z.record(z.string(), activityParamTypeAnswer),
  created_at: isoInstant,
});
export const activityListAnswer = z.strictObject({ activities: z.array(activityAnswer) });

export const auditEntryAnswer = z.strictObject({
  id: z.number(),
  at: isoInstant,
  actor: z.discriminatedUnion("kind", [
    z.strictObject({ kind: z.literal("admin_token") }),
    z.strictObject({ kind: z.literal("operator"), id: z.string(), email: z.string().nullable() }),
    z.strictObject({ kind: z.literal("api_key"), user_id: z.string(), email: z.string().nullable() }).meta({ description: "A call made with the API key of this API user" }),
  ]),
  action: z.enum(AUDIT_ACTIONS),
  target_kind: z.string(),
  target: z.string(),
  detail: z.record(z.string(), z.unknown()),
});
export const auditPageAnswer = z.strictObject({ entries: z.array(auditEntryAnswer), next_cursor: z.string().nullable() });

export const overviewAnswer = z.strictObject({
  contacts: z.number().meta({ description: `The panel's contacts: counted now up to ${COUNT_REQUEST_CAP}, past that as last counted in the background (every few minutes)` }),
  contacts_counted_at: isoInstant.meta({ description: `When \`contacts\` was counted (now, below ${COUNT_REQUEST_CAP})` }),
  contacts_at_least: z.boolean().meta({ description: `True when \`contacts\` is a floor: past ${COUNT_REQUEST_CAP} and no background count of at least that yet` }),
  lists: z.number(),
  events_today: z.number(),
  sends_today: z.number(),
  running_journeys: z.number(),
  webhooks_not_operational: z.number(),
  email: z.strictObject({ provider: z.string(), real_email: z.boolean(), problem: z.string().nullable() }),
});

export const panelHistoryAnswer: z.ZodType<PanelHistory, PanelHistory> = z.strictObject({
  days: z.array(z.number()),
  contacts: z.array(z.number().nullable()),
  events: z.array(z.strictObject({ name: z.string(), counts: z.array(z.number()) })),
  sends: z.array(z.strictObject({ channel: z.string(), counts: z.array(z.number()) })),
});

export const notificationListAnswer = z.strictObject({
  notifications: z.array(
    z.strictObject({
      id: z.string(),
      kind: z.string(),
      to: z.array(z.string()),
      subject: z.string(),
      text: z.string(),
      status: z.string(),
      error: z.string().nullable(),
      created_at: isoInstant,
    }),
  ),
});
