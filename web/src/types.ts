// Request bodies come from the Worker's zod schemas (z.input), so the panel cannot send what the
// API would refuse for its shape; answers are described here as the admin routes shape them.
import type { z } from "zod";
import type { panelPatchBody } from "../../src/domain/panels";
import type { createUserBody, patchUserBody } from "../../src/domain/users";
import type { addOperatorBody, changeOperatorBody, passwordResetBody, passwordResetRequestBody } from "../../src/domain/operators";
import type { contactSearchQuery, createListBody, defineActivityBody, defineAttributeBody, editContactBody, importFromUrlBody, renameListBody } from "../../src/domain/panel-screens";
import type { createWebhookBody, patchWebhookBody } from "../../src/domain/webhooks/config";
import type { journeyDefinitionSchema, journeyStatusBody } from "../../src/domain/journey";
import type { journeyBodySchema, JourneyLayout } from "../../src/domain/journey-layout";
import type { audienceCampaignSchema, broadcastRequestSchema, CampaignRecipientsPage, CampaignReport, CampaignView, OutboxMessageView, RecipientFilter, testSendBody } from "../../src/domain/broadcast";
import type { createSenderDomainBody, DomainChecks } from "../../src/domain/sender-domains";
import type { AuditAction } from "../../src/domain/audit";
import type { PanelHistory } from "../../src/domain/overview";
import type { ContactJourneys, JourneyChannel, JourneyReport } from "../../src/domain/journey-report";
import type { ChannelPreferences, PreferenceChannel, preferencesBody } from "../../src/domain/preferences";
import type { SmsLength, smsPreviewBody, smsSettingsBody, smsTemplateBody } from "../../src/domain/sms";
import type { pushSettingsBody } from "../../src/domain/push";

export type { AuditAction, PanelHistory };
export type { ContactJourneys, JourneyChannel, JourneyReport };

export interface AuditEntryView {
  id: number;
  at: string;
  actor: { kind: "admin_token" } | { kind: "operator"; id: string; email: string | null };
  action: AuditAction;
  target: string;
  detail: Record<string, unknown>;
}

export type PanelPatch = z.input<typeof panelPatchBody>;
export type DefineAttribute = z.input<typeof defineAttributeBody>;
export type DefineActivity = z.input<typeof defineActivityBody>;
export type AttributeType = DefineAttribute["type"];
export type ActivityParamType = NonNullable<DefineActivity["params"]>[string];

export interface AttributeView {
  name: string;
  type: AttributeType;
}

export interface ActivityView {
  activityid: string;
  name: string;
  params: Record<string, ActivityParamType>;
  created_at: string;
}
export type CreateUser = z.input<typeof createUserBody>;
export type PatchUser = z.input<typeof patchUserBody>;
export type AddOperator = z.input<typeof addOperatorBody>;
export type ChangeOperator = z.input<typeof changeOperatorBody>;
export type PasswordResetRequest = z.input<typeof passwordResetRequestBody>;
export type PasswordReset = z.input<typeof passwordResetBody>;

export interface PanelView {
  id: string;
  name: string;
  primary_key: string;
  timezone: string;
  region: string;
  api_mode: boolean;
  client_id: string;
  unknown_attributes: PanelPatch["unknown_attributes"] & string;
  cors_origins: string[];
  created_at: string;
  updated_at: string;
}

export interface OperatorView {
  id: string;
  email: string;
  name: string | null;
  role: ChangeOperator["role"];
  disabled: boolean;
  created_at: string;
}

export interface UserView {
  id: string;
  email: string;
  name: string | null;
  disabled: boolean;
  created_at: string;
}

export type ContactSearch = z.input<typeof contactSearchQuery>;
export type EditContact = z.input<typeof editContactBody>;
export type CreateList = z.input<typeof createListBody>;
export type RenameList = z.input<typeof renameListBody>;
export type ImportFromUrl = z.input<ReturnType<typeof importFromUrlBody>>;

export interface Overview {
  contacts: number;
  lists: number;
  events_today: number;
  sends_today: number;
  running_journeys: number;
  webhooks_not_operational: number;
  email: { provider: string; real_email: boolean; problem: string | null };
}

export interface ContactView {
  key: string;
  attributes: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export interface ContactMessageView {
  kind: "campaign" | "journey";
  source_id: string;
  source_name: string;
  step_id: string | null;
  channel: string;
  subject: string | null;
  status: string;
  error: string | null;
  at: string;
  opens: number;
  clicks: number;
  bounced: boolean;
  unsubscribed: boolean;
}

export interface ContactPage extends ContactView {
  primary_key: string;
  lists: { id: number; name: string }[];
  messages: ContactMessageView[];
  suppression: { address: string; reason: "unsubscribe" | "hard_bounce"; campaign_id: string | null; since: string } | null;
}

export interface EventView {
  guid: string;
  channel: string;
  name: string;
  params: Record<string, unknown>;
  occurred_at: string;
  [more: string]: unknown;
}

export interface ListView {
  id: number;
  name: string;
  description: string;
  count: number;
  created_at: string;
  updated_at: string;
}

export interface ListMembersPage {
  list: ListView;
  primary_key: string;
  members: { key: string; attributes: Record<string, unknown>; added_at: string }[];
  next_cursor: string | null;
}

export interface JobView {
  jobid: string;
  status: "queued" | "running" | "completed" | "failed";
  reason: string | null;
  total: number;
  created: number;
  updated: number;
  failed: number;
  progress: { bytes_done: number; bytes_total: number | null };
  error_report: string | null;
}

export type CreateWebhook = z.input<ReturnType<typeof createWebhookBody>>;
export type PatchWebhook = z.input<ReturnType<typeof patchWebhookBody>>;

export interface WebhookView {
  id: string;
  label: string;
  url: string;
  username: string | null;
  password_set: boolean;
  signing_secret_set: boolean;
  version: "2.0" | "1.0";
  alert: { emails: string[]; frequency: "immediate" | "hourly" | "daily" } | null;
  state: "configured" | "operational" | "disabled";
  disabled_reason: string | null;
  disabled_at: string | null;
  backlog: number;
  backlog_oldest_at: string | null;
  in_flight: { batch_id: string; events: number; failed_attempts: number; next_attempt_at: string } | null;
  dropped: number;
  created_at: string;
  updated_at: string;
}

/** The answer of the test and enable actions: the endpoint's status or the error reaching it. */
export interface WebhookTestAnswer {
  state: WebhookView["state"] | null;
  status: number | null;
  error: string | null;
  message: string;
  backlog?: number;
}

export interface DeliveryView {
  at: string;
  kind: "delivery" | "test";
  batch_id: string;
  events: number;
  status: number | null;
  error: string | null;
  error_message: string | null;
  duration_ms: number;
  response: string;
  outcome: string;
  next_attempt_at: string | null;
}

export type JourneyStatusChange = z.input<typeof journeyStatusBody>;
type JourneyDefinition = z.output<typeof journeyDefinitionSchema>;
/** A journey definition as the canvas edits it and the API takes it. */
export type JourneyInput = z.input<typeof journeyDefinitionSchema>;
export type StepInput = JourneyInput["steps"][number];
/** What POST/PUT of a journey take: the definition and where the canvas draws its nodes. */
export type JourneyBody = z.input<typeof journeyBodySchema>;
export type { JourneyLayout };

export interface JourneyCounters {
  entered: number;
  active: number;
  completed: number;
  exited: number;
  steps: Record<string, { acted: number; waiting: number }>;
}

export interface JourneyView {
  id: string;
  name: string;
  status: "draft" | "running" | "paused" | "stopped";
  trigger: JourneyDefinition["trigger"];
  filter: JourneyDefinition["filter"];
  steps: JourneyDefinition["steps"];
  /** Where the canvas draws the trigger and steps; null, or a step missing: the canvas lays it out. */
  layout: JourneyLayout | null;
  counters: JourneyCounters;
  /** The current version: editing a running or paused journey makes a new one. */
  version: number;
  created_at: string;
  updated_at: string;
}

export interface JourneyVersionView {
  version: number;
  created_at: string;
  created_by: string | null;
  /** Instances that entered on this version, and those of them still inside. */
  entered: number;
  active: number;
  definition: JourneyInput;
}

/** The broadcast request of spec 2.5 as the API takes it (source_code is base64 of the HTML). */
export type CreateCampaign = z.input<ReturnType<typeof broadcastRequestSchema>>;

/** A campaign to lists and saved segments with exclusions (CONTRACT 9). */
export type CreateAudienceCampaign = z.input<ReturnType<typeof audienceCampaignSchema>>;

export type { CampaignRecipientsPage, CampaignReport, CampaignView, OutboxMessageView, RecipientFilter };
export type TestSend = z.input<typeof testSendBody>;
export type OutboxMessage = OutboxMessageView & { raw: string; html: string | null };

/** The answer of a creation: with the outbox, a sender domain a real provider would refuse is a warning. */
export type CreatedCampaign = CampaignView & { CampaignID: string; warnings?: { field: string; message: string }[] };

export interface SegmentView {
  id: string;
  name: string;
  match: SegmentCountRequest["match"];
  building: boolean;
  members?: number;
  created_at: string;
  updated_at: string;
}

export type CreateSenderDomain = z.input<typeof createSenderDomainBody>;
export type DomainCheckName = keyof DomainChecks;

/** A sender domain as GET /sender-domains shapes it: the records to publish and the last check (never a key). */
export interface SenderDomainView {
  domain: string;
  state: "pending" | "verified" | "failed";
  /** `value` null: any SPF record that allows the servers you send through. */
  records: { purpose: DomainCheckName; type: "TXT"; name: string; value: string | null }[];
  checks: DomainChecks | null;
  checked_at: string | null;
  created_at: string;
}

export interface TrackingDomainView {
  domain: string;
  verified: boolean;
  record: { type: "CNAME"; name: string; value: string };
  /** Only in the answer of a verify: the CNAME targets found and why it failed. */
  found?: string[];
  reason?: string | null;
  checked_at: string | null;
  created_at: string;
}

export type { Engagement, ReachableChannel, SegmentAttributeOp } from "../../src/domain/segments";
import type { segmentCountBody, segmentDefinitionSchema } from "../../src/domain/segments";
export type SegmentCountRequest = z.input<typeof segmentCountBody>;
export type SegmentDefinitionRequest = z.input<typeof segmentDefinitionSchema>;

/** DELETE /panels/{panel}/contacts/{key} and GET /panels/{panel}/erasures/{id}. */
export interface ErasureView {
  erasure_id: string;
  state: "archive" | "done";
  archive_parts_rewritten: number;
  created_at: string;
  finished_at: string | null;
}

/** GET /jobs/{jobid} of a segment export (services/segments/export.ts segmentExportView), the members the panel reads. */
export interface SegmentExportView {
  jobid: string;
  type: "segment_export";
  status: "queued" | "running" | "completed" | "failed";
  reason: string | null;
  progress: { rows: number; total: number };
  download: string | null;
}
/** GET /segments/{id}/history. */
export interface SegmentHistoryView {
  members: number;
  days: Array<{ day: string; entered: number; exited: number }>;
}

export type { ChannelPreferences, PreferenceChannel };
/** PUT /panels/{panel}/contacts/{key}/preferences. */
export type PreferencesChange = z.input<typeof preferencesBody>;

export type { SmsLength };
/** PUT /panels/{panel}/sms: the provider and its credential (sent, never shown back). */
export type SmsSettingsChange = z.input<typeof smsSettingsBody>;
export type SmsProviderName = SmsSettingsChange["provider"];
type SmsProviderConfig<P extends SmsProviderName> = Omit<Extract<SmsSettingsChange, { provider: P }>, "auth_token" | "authkey">;
/** GET /panels/{panel}/sms: the provider's settings without its credential, and the URLs to give it. */
export type SmsSettingsView =
  | { provider: "outbox"; sends: false }
  | ((SmsProviderConfig<"twilio"> | SmsProviderConfig<"msg91">) & {
      sends: true;
      credential_set: true;
      delivery_report_url: string;
      replies_url: string;
      updated_at: string;
    });

export type SmsTemplateInput = z.input<typeof smsTemplateBody>;
export type SmsPreviewRequest = z.input<typeof smsPreviewBody>;
/** An SMS template as the admin routes show it: its length measured with every merge tag at its fallback. */
export interface SmsTemplateView {
  id: string;
  name: string;
  body: string;
  dlt_template_id: string | null;
  provider_template_id: string | null;
  merge_tags: string[];
  length: SmsLength;
  created_at: string;
  updated_at: string;
}
export interface SmsPreview {
  text: string;
  length: SmsLength;
}
export interface SmsSuppressionView {
  phone: string;
  reason: "stop" | "provider" | "operator";
  created_at: string;
}

/** PUT /panels/{panel}/push: an absent channel stays as it is, null turns it off. */
export type PushSettingsChange = z.input<typeof pushSettingsBody>;
export type ServiceAccountKey = NonNullable<PushSettingsChange["fcm"]>["service_account"];
/** GET /panels/{panel}/push: never a private key. */
export interface PushSettingsView {
  web_push: { sends: true; subject: string; public_key: string; subscribe_url: string; subscriptions: number } | { sends: false; subscriptions: number };
  fcm: { sends: true; project_id: string; client_email: string; credential_set: true; register_url: string; tokens: number } | { sends: false; tokens: number };
  updated_at: string | null;
}
