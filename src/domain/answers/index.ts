// The admin API as its clients type it: each answer is the `z.output` of the schema its route
// declares (domain/answers/*), each request the `z.input` of the schema its route parses. The
// panel imports these type-only, so no Worker code reaches its bundle.
import type { z } from "../../lib/z";
import type { audienceCampaignSchema, audienceEstimateBody, broadcastRequestSchema, campaignEditSchema, testSendBody } from "../broadcast";
import type { abTestBody } from "../ab-test";
import type { emailTemplateBody } from "../email-templates";
import type { formSettingsBody, signupFormBody } from "../signup-forms";
import type { topicBody } from "../topics";
import type { journeyDefinitionSchema, journeyStatusBody } from "../journey";
import type { SimulationResult } from "../journey-simulation";
import type { journeyBodySchema } from "../journey-layout";
import type { acceptInvitationBody, addOperatorBody, changeOperatorBody, inviteOperatorBody, passwordResetBody, passwordResetRequestBody } from "../operators";
import type { addContactBody, columnMapping, contactSearchQuery, createListBody, defineActivityBody, defineAttributeBody, editContactBody, importFromUrlBody, renameListBody } from "../panel-screens";
import type { panelPatchBody } from "../panels";
import type { preferencesBody } from "../preferences";
import type { pushSettingsBody } from "../push";
import type { segmentCountBody, segmentDefinitionSchema } from "../segments";
import type { createSenderDomainBody } from "../sender-domains";
import type { smsPreviewBody, smsSettingsBody, smsTemplateBody } from "../sms";
import type { createUserBody, patchUserBody } from "../users";
import type { createWebhookBody, patchWebhookBody } from "../webhooks/config";
import type { createReplayBody } from "../webhooks/replay";
import type * as campaigns from "./campaigns";
import type * as channels from "./channels";
import type * as contacts from "./contacts";
import type * as deployment from "./deployment";
import type { alertSubscriptionBody } from "../operations";
import type * as emailTemplates from "./email-templates";
import type * as forms from "./forms";
import type * as journeys from "./journeys";
import type * as panels from "./panels";
import type * as segments from "./segments";
import type * as topics from "./topics";
import type * as webhooks from "./webhooks";

export type { AuditAction } from "../audit";
export type { PanelHistory } from "../overview";
export type { ContactJourneys, JourneyChannel, JourneyReport } from "../journey-report";
export type { JourneyLayout } from "../journey-layout";
export type { CampaignRecipientsPage, CampaignReport, CampaignView, OutboxMessageView, RecipientFilter } from "../broadcast";
export type { ChannelPreferences, PreferenceChannel, SuppressionReason } from "../preferences";
export type { SmsLength } from "../sms";
export type { Engagement, ReachableChannel, SegmentAttributeOp } from "../segments";
export type { InvitationPreviewView, SessionView } from "../operators";

// Panels, people and the schema.
export type PanelView = z.output<typeof panels.panelAnswer>;
export type PanelPatch = z.input<typeof panelPatchBody>;
export type Overview = z.output<typeof panels.overviewAnswer>;
export type AuditEntryView = z.output<typeof panels.auditEntryAnswer>;
export type AuditPage = z.output<typeof panels.auditPageAnswer>;
export type UserView = z.output<typeof panels.userAnswer>;
export type CreatedUser = z.output<typeof panels.createdUserAnswer>;
export type ApiKeyAnswer = z.output<typeof panels.apiKeyAnswer>;
export type CreateUser = z.input<typeof createUserBody>;
export type PatchUser = z.input<typeof patchUserBody>;
export type OperatorView = z.output<typeof panels.operatorAnswer>;
export type AddOperator = z.input<typeof addOperatorBody>;
export type ChangeOperator = z.input<typeof changeOperatorBody>;
export type InvitationView = z.output<typeof panels.invitationAnswer>;
export type InviteOperator = z.input<typeof inviteOperatorBody>;
export type AcceptInvitation = z.input<typeof acceptInvitationBody>;
export type PasswordResetRequest = z.input<typeof passwordResetRequestBody>;
export type PasswordReset = z.input<typeof passwordResetBody>;
export type AttributeView = z.output<typeof panels.attributeAnswer>;
export type AttributeType = AttributeView["type"];
export type DefineAttribute = z.input<typeof defineAttributeBody>;
export type ActivityView = z.output<typeof panels.activityAnswer>;
export type ActivityParamType = ActivityView["params"][string];
export type DefineActivity = z.input<typeof defineActivityBody>;

// Contacts, events, lists and jobs.
export type ContactView = z.output<typeof contacts.contactAnswer>;
export type ContactSearchPage = z.output<typeof contacts.contactSearchAnswer>;
export type ContactMessageView = z.output<typeof contacts.contactMessageAnswer>;
export type ContactPage = z.output<typeof contacts.contactPageAnswer>;
export type ContactSearch = z.input<typeof contactSearchQuery>;
export type EditContact = z.input<typeof editContactBody>;
export type AddContact = z.input<typeof addContactBody>;
export type ErasureView = z.output<typeof contacts.erasureAnswer>;
export type PreferencesChange = z.input<typeof preferencesBody>;
export type EventView = z.output<typeof contacts.eventAnswer>;
export type ContactEventsPage = z.output<typeof contacts.contactEventsAnswer>;
export type ListView = z.output<typeof contacts.listAnswer>;
export type ListMembersPage = z.output<typeof contacts.listMembersAnswer>;
export type CreateList = z.input<typeof createListBody>;
export type RenameList = z.input<typeof renameListBody>;
export type ImportFromUrl = z.input<ReturnType<typeof importFromUrlBody>>;
export type JobStarted = z.output<typeof contacts.jobStartedAnswer>;
export type JobView = z.output<typeof contacts.importJobAnswer>;
export type ImportHistoryPage = z.output<typeof contacts.importHistoryAnswer>;
export type ImportHistoryEntry = ImportHistoryPage["imports"][number];
export type ColumnMappingInput = z.input<typeof columnMapping>;
export type SegmentExportView = z.output<typeof contacts.segmentExportAnswer>;

// Webhooks.
export type WebhookView = z.output<typeof webhooks.webhookAnswer>;
export type WebhookTestAnswer = z.output<typeof webhooks.webhookTestAnswer>;
export type DeliveryView = z.output<typeof webhooks.webhookDeliveriesAnswer>["deliveries"][number];
export type CreateWebhook = z.input<ReturnType<typeof createWebhookBody>>;
export type PatchWebhook = z.input<ReturnType<typeof patchWebhookBody>>;
export type WebhookReplayView = z.output<typeof webhooks.webhookReplayAnswer>;
export type WebhookReplayDryRun = z.output<typeof webhooks.webhookReplayDryRunAnswer>;
export type CreateWebhookReplay = z.input<typeof createReplayBody>;

// Journeys.
/** A journey as a create or an edit answers it (no counters). */
export type SavedJourney = z.output<typeof journeys.journeyAnswer>;
/** A journey read or listed: the answer's optional counters are always there (admin/journeys.ts). */
export type JourneyView = SavedJourney & { counters: JourneyCounters };
export type JourneyCounters = z.output<typeof journeys.journeyCountersAnswer>;
export type JourneyVersionView = z.output<typeof journeys.journeyVersionsAnswer>["versions"][number];
export type JourneyStatusChange = z.input<typeof journeyStatusBody>;
export type JourneySplitView = z.output<typeof journeys.journeySplitsAnswer>["splits"][number];
export type SplitWinnerBody = z.input<typeof journeys.splitWinnerBody>;
export type JourneySimulationView = z.output<typeof journeys.simulationAnswer>;
export type JourneySimulationBody = z.input<typeof journeys.simulationBody>;
/** A simulation's result once done, as the answer carries it. */
export type JourneySimulationResult = SimulationResult;
/** A journey definition as the canvas edits it and the API takes it. */
export type JourneyInput = z.input<typeof journeyDefinitionSchema>;
export type StepInput = JourneyInput["steps"][number];
/** What POST/PUT of a journey take: the definition and where the canvas draws its nodes. */
export type JourneyBody = z.input<typeof journeyBodySchema>;

// Campaigns and the outbox.
export type CampaignList = z.output<typeof campaigns.campaignListAnswer>;
export type CreatedCampaign = z.output<typeof campaigns.createdCampaignAnswer>;
export type OutboxMessage = z.output<typeof campaigns.outboxMessageFullAnswer>;
export type MessageCopy = z.output<typeof campaigns.messageCopyAnswer>;
/** The broadcast request of spec 2.5 as the API takes it (source_code is base64 of the HTML). */
export type CreateCampaign = z.input<ReturnType<typeof broadcastRequestSchema>>;
/** A campaign to lists and saved segments with exclusions (CONTRACT 9). */
export type CreateAudienceCampaign = z.input<ReturnType<typeof audienceCampaignSchema>>;
export type TestSend = z.input<typeof testSendBody>;
export type TestSent = z.output<typeof campaigns.testSentAnswer>;
export type AudienceEstimateRequest = z.input<typeof audienceEstimateBody>;
export type AudienceEstimate = z.output<typeof campaigns.audienceEstimateAnswer>;
export type CampaignBody = z.output<typeof campaigns.campaignBodyAnswer>;
export type CampaignPreview = z.output<typeof campaigns.campaignPreviewAnswer>;
export type CampaignChecks = z.output<typeof campaigns.campaignChecksAnswer>;
/** PATCH of a draft or scheduled campaign: the members that change. */
export type EditCampaign = z.input<ReturnType<typeof campaignEditSchema>>;
/** POST …/schedule: a time, or send_now where the panel's lead time is 0. */
export type ScheduleCampaign = { schedule_date: string } | { send_now: true };
export type DeletedCampaign = z.output<typeof campaigns.deletedCampaignAnswer>;
/** GET …/ab-test: the A/B test as set with its results, or null. */
export type AbTestAnswer = z.output<typeof campaigns.abTestAnswer>;
/** PUT …/ab-test. */
export type SetAbTest = z.input<typeof abTestBody>;
export type { AbMetric, AbTestResults } from "../ab-test";
export type { CampaignAction } from "../campaign-lifecycle";

// Segments and sending domains.
export type SegmentView = z.output<typeof segments.segmentListAnswer>["segments"][number];
export type SegmentPage = z.output<typeof segments.segmentPageAnswer>;
export type SegmentHistoryView = z.output<typeof segments.segmentHistoryAnswer>;
export type SegmentCountRequest = z.input<typeof segmentCountBody>;
export type SegmentDefinitionRequest = z.input<typeof segmentDefinitionSchema>;
export type SenderDomainView = z.output<typeof segments.senderDomainAnswer>;
export type DomainCheckName = SenderDomainView["records"][number]["purpose"];
export type CreateSenderDomain = z.input<typeof createSenderDomainBody>;
export type TrackingDomainView = z.output<typeof segments.trackingDomainAnswer>;

// Saved email templates (not the journey templates of spec 6.3).
export type EmailTemplateView = z.output<typeof emailTemplates.emailTemplateAnswer>;
export type EmailTemplateSummaryView = z.output<typeof emailTemplates.emailTemplateListAnswer>["templates"][number];
export type EmailTemplateInput = z.input<typeof emailTemplateBody>;
export type SignupFormView = z.output<typeof forms.signupFormAnswer>;
export type SignupFormSummaryView = z.output<typeof forms.signupFormListAnswer>["forms"][number];
export type SignupFormInput = z.input<typeof signupFormBody>;
export type FormSettingsView = z.output<typeof forms.formSettingsAnswer>;
export type FormSettingsInput = z.input<typeof formSettingsBody>;
export type TopicView = z.output<typeof topics.topicAnswer>;
export type TopicInput = z.input<typeof topicBody>;

// SMS and push.
export type SmsSettingsView = z.output<typeof channels.smsSettingsAnswer>;
/** PUT /panels/{panel}/sms: the provider and its credential (sent, never shown back). */
export type SmsSettingsChange = z.input<typeof smsSettingsBody>;
export type SmsProviderName = SmsSettingsChange["provider"];
export type SmsTemplateView = z.output<typeof channels.smsTemplateAnswer>;
export type SmsTemplateInput = z.input<typeof smsTemplateBody>;
export type SmsPreview = z.output<typeof channels.smsPreviewAnswer>;
export type SmsPreviewRequest = z.input<typeof smsPreviewBody>;
export type SmsSuppressionPage = z.output<typeof channels.smsSuppressionListAnswer>;
export type SmsSuppressionView = SmsSuppressionPage["suppressions"][number];
export type PushSettingsView = z.output<typeof channels.pushSettingsAnswer>;
/** PUT /panels/{panel}/push: an absent channel stays as it is, null turns it off. */
export type PushSettingsChange = z.input<typeof pushSettingsBody>;
export type ServiceAccountKey = NonNullable<PushSettingsChange["fcm"]>["service_account"];

// The deployment's operations view and its alerts (admin token only).
export type OpsView = z.output<typeof deployment.opsAnswer>;
export type OpsAction = z.output<typeof deployment.opsAction>;
export type DeadLetterRedrive = z.output<typeof deployment.deadLetterRedriveAnswer>;
export type AlertSubscriptionView = z.output<typeof deployment.alertSubscriptionAnswer>;
export type AlertSubscriptionList = z.output<typeof deployment.alertSubscriptionListAnswer>;
export type CreateAlertSubscription = z.input<ReturnType<typeof alertSubscriptionBody>>;
