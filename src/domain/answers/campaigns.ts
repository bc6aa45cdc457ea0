// The admin API's answers about campaigns and the outbox. The views already have TypeScript
// types in domain/broadcast.ts (services build them); `satisfies` keeps each schema equal to its type.
import { z } from "../../lib/z";
import type { CampaignRecipientsPage, CampaignReport, CampaignView, OutboxMessageView } from "../broadcast";
import { isoInstant } from "./panels";
import { CAMPAIGN_ACTIONS, CAMPAIGN_STATUSES } from "../campaign-lifecycle";
import { emailSource } from "../email-source";
import { AB_METRICS, type AbTestResults, type AbTestView } from "../ab-test";

const campaignSums = {
  sent: z.number(),
  failed: z.number(),
  skipped: z.number(),
  opens: z.number(),
  unique_opens: z.number(),
  clicks: z.number(),
  unique_clicks: z.number(),
  bounces: z.number(),
  unsubscribes: z.number(),
};
const campaignCounters = z.strictObject({ recipients: z.number(), queued: z.number(), ...campaignSums });

export const campaignAnswer = z.strictObject({
  id: z.string(),
  name: z.string(),
  status: z.enum(CAMPAIGN_STATUSES),
  status_reason: z.string().nullable(),
  list_id: z.number().nullable(),
  audience: z
    .object({ lists: z.array(z.number()), segments: z.array(z.string()), exclude_lists: z.array(z.number()), exclude_segments: z.array(z.string()) })
    .nullable(),
  reply_to: z.string().nullable(),
  subject: z.string(),
  sender_name: z.string(),
  sender_email: z.string(),
  tags: z.array(z.string()),
  schedule_date: z.string(),
  timezone: z.string(),
  send_at: isoInstant,
  local_time: z.string().nullable().meta({ description: "Send at local time: each recipient at this HH:MM on its own clock (TIMEZONE attribute, else the panel's zone); null: at once" }),
  import_job_id: z.string().nullable(),
  email_template: z.string().nullable(),
  topic: z.string().nullable().meta({ description: "The topic the campaign is about: contacts who left it are skipped; null: none" }),
  request_id: z.string(),
  created_at: isoInstant,
  published_at: isoInstant.nullable(),
  finished_at: isoInstant.nullable(),
  counters: campaignCounters,
  actions: z.array(z.enum(CAMPAIGN_ACTIONS)).meta({ description: "The actions the campaign's state allows now" }),
  ab_test: z
    .strictObject({ variants: z.number(), metric: z.enum(AB_METRICS), winner: z.string().nullable() })
    .nullable()
    .meta({ description: "Its A/B test in brief (GET …/ab-test has the rest); null without one" }),
}) satisfies z.ZodType<CampaignView>;

/** A campaign deleted, or archived (a sent one: its report kept). */
export const deletedCampaignAnswer = z.strictObject({ id: z.string(), outcome: z.enum(["deleted", "archived"]) });

/** The panel's campaigns, with its time zone and how far ahead a campaign must be scheduled. */
export const campaignListAnswer = z.strictObject({ campaigns: z.array(campaignAnswer), timezone: z.string(), lead_minutes: z.number() });

/** A campaign created: its id again as CampaignID (4.10), and a sender domain a real provider would refuse, as a warning. */
export const createdCampaignAnswer = campaignAnswer.extend({
  CampaignID: z.string(),
  warnings: z.array(z.strictObject({ field: z.string(), message: z.string() })),
});

const abGroupFigures = {
  recipients: z.number(),
  sent: z.number(),
  opens: z.number(),
  unique_opens: z.number(),
  clicks: z.number(),
  unique_clicks: z.number(),
  open_rate: z.number().meta({ description: "Unique opens as a share of sent, 0 to 1" }),
  click_rate: z.number().meta({ description: "Unique clicks as a share of sent, 0 to 1" }),
};

const abTestResultsAnswer = z.strictObject({
  metric: z.enum(AB_METRICS),
  test_share: z.number(),
  wait_minutes: z.number(),
  decide_at: isoInstant.nullable(),
  winner: z.string().nullable().meta({ description: "The winning variant's label (A to D) once picked" }),
  variants: z.array(z.strictObject({ label: z.string(), subject: z.string(), own_html: z.boolean(), winner: z.boolean(), ...abGroupFigures })),
  rest: z.strictObject({ variant: z.string().nullable(), ...abGroupFigures }),
}) satisfies z.ZodType<AbTestResults>;

/** GET …/ab-test: the test as set (each variant's own subject and body, null where it is the campaign's) with its results. */
const abTestView = z.strictObject({
  variants: z.array(z.strictObject({ label: z.string(), subject: z.string().nullable(), html: z.string().nullable() })),
  test_share: z.number(),
  metric: z.enum(AB_METRICS),
  wait_minutes: z.number(),
  results: abTestResultsAnswer,
}) satisfies z.ZodType<AbTestView>;
export const abTestAnswer = z.strictObject({ ab_test: abTestView.nullable().meta({ description: "null: the campaign has no A/B test" }) });

export const campaignReportAnswer = z.strictObject({
  counters: campaignCounters,
  rates: z.strictObject({
    delivered: z.number(),
    unique_open: z.number(),
    click_through: z.number(),
    click_to_open: z.number(),
    bounce: z.number(),
    unsubscribe: z.number(),
  }),
  hours: z.array(z.strictObject({ hour: z.number(), ...campaignSums })),
  top_links: z.array(z.strictObject({ url: z.string(), clicks: z.number() })),
  ab_test: abTestResultsAnswer.nullable().meta({ description: "The A/B test's variants side by side, the rest and the winner; null without a test" }),
}) satisfies z.ZodType<CampaignReport>;

export const campaignRecipientsAnswer = z.strictObject({
  recipients: z.array(
    z.strictObject({
      contact_id: z.number(),
      key: z.string().nullable(),
      address: z.string().nullable(),
      status: z.string(),
      error: z.string().nullable().meta({ description: "Why it was skipped or failed (e.g. `cap: at most 3 email per 7 days`)" }),
      sent_at: isoInstant.nullable(),
      opens: z.number(),
      clicks: z.number(),
      first_open_at: isoInstant.nullable(),
      first_click_at: isoInstant.nullable(),
      bounced_at: isoInstant.nullable(),
      unsubscribed_at: isoInstant.nullable(),
      subject: z.string().meta({ description: "The subject the recipient got, merge tags filled" }),
      message_id: z.string().meta({ description: "GET /panels/{panel}/messages/{message_id}/copy answers the copy of a sent one" }),
    }),
  ),
  next: z.number().nullable(),
}) satisfies z.ZodType<CampaignRecipientsPage>;

export const audienceEstimateAnswer = z.strictObject({
  count: z.number().meta({ description: "Contacts the audience reaches: in a list or segment named, in no excluded one, with an email address that is not suppressed" }),
  exact: z.boolean().meta({ description: "true: counted now. false: an estimate from the stored list and segment counts, less exclusions and suppressions (the audience is at least exact_up_to)" }),
  exact_up_to: z.number().meta({ description: "Below this many the count is exact" }),
  counted_at: isoInstant.meta({ description: "When the oldest figure the count rests on was counted" }),
});

export const testSentAnswer = z.strictObject({
  message_id: z.string().meta({ description: "The first copy's message id" }),
  message_ids: z.array(z.string()).meta({ description: "Each copy's message id, in the order of the addresses" }),
});

export const campaignBodyAnswer = z.strictObject({
  id: z.string(),
  subject: z.string().meta({ description: "The subject as written, merge tags unfilled" }),
  html: z.string().meta({ description: "The HTML body as written, merge tags unfilled" }),
  body_source: emailSource.nullable().meta({ description: "The visual editor's source html was rendered from; null: HTML written by hand" }),
});

export const campaignPreviewAnswer = z.strictObject({
  subject: z.string().meta({ description: "The subject with the contact's merge tags filled (fallbacks where empty)" }),
  html: z.string().meta({ description: "The body with the contact's merge tags filled (fallbacks where empty); unsubscribe and preference links inert" }),
  contact: z.string().nullable().meta({ description: "Whose attributes filled it; null: every tag shows its fallback" }),
});

export const campaignChecksAnswer = z.strictObject({
  warnings: z.array(
    z.strictObject({
      kind: z.enum(["image_alt", "link", "unsubscribe", "merge_tag"]),
      subject: z.string().nullable().meta({ description: "An image's src, a link, a merge tag's name; null for the body as a whole" }),
      message: z.string(),
    }),
  ),
});

export const outboxMessageAnswer = z.strictObject({
  id: z.string(),
  channel: z.string(),
  to: z.string(),
  from: z.string(),
  subject: z.string(),
  campaign_id: z.string().nullable(),
  size: z.number(),
  created_at: isoInstant,
  note: z.string().nullable(),
}) satisfies z.ZodType<OutboxMessageView>;
export const outboxListAnswer = z.strictObject({ messages: z.array(outboxMessageAnswer) });
/** One outbox message with its raw RFC 5322 text and, for email, its HTML part. */
export const outboxMessageFullAnswer = outboxMessageAnswer.extend({ raw: z.string(), html: z.string().nullable() });

/** An email's copy as its recipient got it, rendered again from its template and merge values (without tracking). */
export const messageCopyAnswer = z.strictObject({
  message_id: z.string(),
  kind: z.enum(["campaign", "journey"]),
  source_id: z.string().meta({ description: "The campaign's or the journey's id" }),
  to: z.string().nullable(),
  subject: z.string().meta({ description: "The subject as sent, merge tags filled" }),
  html: z.string().meta({ description: "The body as sent, merge tags filled; links untracked, unsubscribe and preference links inert, no open pixel" }),
  sent_at: isoInstant.nullable(),
});
