import { abTestAnswer, audienceEstimateAnswer, campaignAnswer, campaignBodyAnswer, campaignChecksAnswer, campaignPreviewAnswer, deletedCampaignAnswer, campaignListAnswer, campaignRecipientsAnswer, campaignReportAnswer, createdCampaignAnswer, messageCopyAnswer, outboxListAnswer, outboxMessageFullAnswer, testSentAnswer } from "../domain/answers/campaigns";
import { audienceCampaignSchema, audienceEstimateBody, campaignPreviewQuery, broadcastRequestSchema, campaignEditSchema, campaignScheduleSchema, recipientsQuery, testSendBody, type CampaignRecipientsPage, type CampaignView, type OutboxMessageView } from "../domain/broadcast";
import { NEEDS } from "../domain/permissions";
import { abTestBody, variantLabel } from "../domain/ab-test";
import { abTestOf, removeAbTest, setAbTest } from "../services/broadcasts/ab-test";
import { getCampaign } from "../store/campaigns/definitions";
import { htmlOfMime } from "../domain/email-message";
import { badRequest, notFound, orNotFound, parseOrThrow, unwrap } from "../lib/http/errors";
import { allowedActions } from "../domain/campaign-lifecycle";
import { campaignLeadMinutes, cancelCampaignSends, changeCampaignState, cloneCampaign, deleteOrArchiveCampaign, editCampaignContent, scheduleCampaign, type CampaignOutcome, type LifecycleContext } from "../services/broadcasts/lifecycle";
import type { ShardDb } from "../store/shards";
import { csvAttachment } from "../lib/http/respond";
import { allowsPrivateFetch } from "../lib/outbound";
import { z } from "../lib/z";
import { createCampaign, type CampaignRequest } from "../services/broadcasts/create-campaign";
import { campaignsWithCounters, campaignWithCounters, recipientsOfCampaign, reportOfCampaign } from "../services/broadcasts/read";
import { recipientView } from "../services/broadcasts/report";
import { estimateAudience } from "../services/broadcasts/audience-estimate";
import { panelOwningShards, panelShards } from "../services/access/partitions";
import { campaignBody, checkCampaign, previewCampaign } from "../services/broadcasts/preview";
import { sendTestCopy as sendCampaignTestCopy } from "../services/broadcasts/test-send";
import { messageCopy } from "../services/broadcasts/message-copies";
import type { Campaign, CampaignCounters } from "../store/campaigns/definitions";
import type { Panel } from "../store/panels";
import { getOutboxRecord, listOutbox, type OutboxRecord } from "../store/outbox";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import type { Auditor } from "../services/audit/record";
import { definePanelRoute } from "./route";
import { config } from "../lib/config";

function campaignView(campaign: Campaign, panel: Panel, counters: CampaignCounters, leadMinutes: number): CampaignView {
  // Send now is offered only where the panel's lead time is 0.
  const actions = allowedActions(campaign.status).filter((action) => action !== "send_now" || leadMinutes === 0);
  return {
    id: campaign.id,
    name: campaign.name,
    status: campaign.status,
    status_reason: campaign.statusReason,
    list_id: campaign.listId,
    audience: campaign.audience,
    reply_to: campaign.replyTo,
    subject: campaign.subject,
    sender_name: campaign.senderName,
    sender_email: campaign.senderEmail,
    tags: campaign.tags,
    schedule_date: campaign.scheduleLocal,
    timezone: panel.timezone,
    send_at: isoTime(campaign.sendAt),
    local_time: campaign.localTime,
    import_job_id: campaign.importJobId,
    email_template: campaign.emailTemplateId,
    topic: campaign.topicId,
    request_id: campaign.requestId,
    created_at: isoTime(campaign.createdAt),
    published_at: campaign.publishedAt === null ? null : isoTime(campaign.publishedAt),
    finished_at: campaign.finishedAt === null ? null : isoTime(campaign.finishedAt),
    counters,
    actions,
    ab_test: campaign.abTest
      ? { variants: campaign.abTest.variants.length, metric: campaign.abTest.metric, winner: campaign.abWinner === null ? null : variantLabel(campaign.abWinner) }
      : null,
  };
}

const noSuchCampaign = (id: string) => `No campaign with id "${id}" in this panel`;

const readCampaign = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign",
  role: NEEDS.read,
  response: campaignAnswer,
  summary: "An email campaign with its state and counters (queued, sent, failed, opens, unique opens, clicks, bounces, unsubscribes)",
  async handle({ env, path, panel, db }) {
    const found = await orNotFound(campaignWithCounters(panelShards(env, panel, db), panel.id, path.campaign), noSuchCampaign(path.campaign));
    return campaignView(found.campaign, panel, found.counters, campaignLeadMinutes(panel, env));
  },
});

const readCampaignReport = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign/report",
  role: NEEDS.read,
  response: campaignReportAnswer,
  summary:
    "A campaign's report from its aggregates: counters, rates (delivered, unique open, click-through, click-to-open, bounce, unsubscribe, as shares of sent), what changed per hour (UTC) and the most clicked links",
  async handle({ env, path, panel, db }) {
    return orNotFound(reportOfCampaign(panelShards(env, panel, db), panel.id, path.campaign), noSuchCampaign(path.campaign));
  },
});

const listCampaignRecipients = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign/recipients",
  role: NEEDS.read,
  response: campaignRecipientsAnswer,
  summary: "The recipients behind a number of the report (filter), a page at a time by contact id, or all of them as one CSV download (format=csv)",
  query: recipientsQuery,
  async handle({ env, path, query, panel, db }): Promise<CampaignRecipientsPage | Response> {
    const found = await orNotFound(recipientsOfCampaign(panelOwningShards(env, panel, db), panel.id, path.campaign, query), noSuchCampaign(path.campaign));
    if ("csv" in found) return csvAttachment(found.csv, null, `${found.campaign.id}-${query.filter}.csv`);
    const { page } = found;
    return { recipients: page.map(recipientView), next: page.length === query.limit ? page.at(-1)!.contactId : null };
  },
});

const listPanelCampaigns = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns",
  role: NEEDS.read,
  response: campaignListAnswer,
  summary: "The panel's email campaigns, newest first, with their counters (archived ones with archived=1); the panel's time zone and its campaign lead time",
  query: z.object({
    limit: z.coerce.number().int().min(1).max(200).default(50),
    archived: z.enum(["0", "1"], { error: "must be 0 or 1" }).default("0").meta({ description: "1: include archived campaigns" }),
  }),
  async handle({ env, query, panel, db }) {
    const lead = campaignLeadMinutes(panel, env);
    const campaigns = await campaignsWithCounters(panelShards(env, panel, db), panel.id, query.limit, query.archived === "1");
    return { campaigns: campaigns.map(({ campaign, counters }) => campaignView(campaign, panel, counters, lead)), timezone: panel.timezone, lead_minutes: lead };
  },
});

// The body is a campaign with an `audience` of lists and segments (CONTRACT 9), or else the
// broadcast request of 4.10 with its contacts file; either is read under the panel's zone and
// the clock, which a route body cannot see: the handler parses it once the panel is loaded.
const createPanelCampaign = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/campaigns",
  role: NEEDS.campaigns,
  response: createdCampaignAnswer,
  summary:
    "Create an email campaign: to an audience of lists and saved segments (CONTRACT 9), scheduled, or kept a draft with \"draft\": true; or with a contacts file under the rules of upload_contact_and_publish (4.10), always scheduled",
  status: 201,
  body: z.record(z.string().max(100), z.unknown()).meta({
    description:
      'With "audience": {"name","subject","sender_name","sender_email","reply_to"?,"html"|"html_url","schedule_date"?,"tags"?,"draft"?,"audience":{"lists"?,"segments"?,"exclude_lists"?,"exclude_segments"?}} (CONTRACT 9; schedule_date at least the panel\'s campaign lead time ahead); otherwise the broadcast request of spec 2.5 (the data object of upload_contact_and_publish, under the deployment\'s lead time)',
  }),
  async handle({ env, caller, body, panel, db }) {
    const now = Date.now();
    const rules = { allowPrivateFetch: allowsPrivateFetch(env), timezone: panel.timezone, now };
    let input: CampaignRequest;
    if ("audience" in body) {
      const { draft, ...fields } = body;
      if (draft !== undefined && typeof draft !== "boolean") throw badRequest("draft: must be true or false", [{ field: "draft", message: "must be true or false" }]);
      input = { kind: "audience", request: parseOrThrow(audienceCampaignSchema({ ...rules, leadMinutes: campaignLeadMinutes(panel, env) }), fields), draft: draft === true };
    } else {
      // 4.10 keeps the seed's rule: the deployment's lead time, whatever the panel's setting.
      input = { kind: "broadcast", request: parseOrThrow(broadcastRequestSchema({ ...rules, leadMinutes: config(env).broadcastLeadMinutes }), body) };
    }
    const { campaign, counters, senderNote, senderField } = unwrap(await createCampaign({ env, db, panel, now }, input, auditorOf(caller)));
    // The outbox keeps mail from an unverified domain; the operator hears now that real email would not go.
    const warnings = senderNote ? [{ field: senderField, message: senderNote }] : [];
    return { CampaignID: campaign.id, ...campaignView(campaign, panel, counters, campaignLeadMinutes(panel, env)), warnings };
  },
});

const estimatePanelAudience = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/campaigns/audience-estimate",
  role: NEEDS.read,
  response: audienceEstimateAnswer,
  summary:
    "How many contacts an audience (lists and segments, minus exclusions and suppressed addresses) reaches now: exact below exact_up_to, above it an estimate from the stored list and segment counts",
  body: audienceEstimateBody,
  async handle({ env, body, panel, db }) {
    const estimate = unwrap(await estimateAudience(panelOwningShards(env, panel, db), panel.id, body.audience, Date.now()));
    return { count: estimate.count, exact: estimate.exact, exact_up_to: estimate.exactUpTo, counted_at: isoTime(estimate.countedAt) };
  },
});

const sendTestCopy = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/campaigns/:campaign/test",
  role: NEEDS.campaigns,
  response: testSentAnswer,
  summary:
    "Send a test copy of a campaign (or of one of its A/B test's variants: variant) to an address (email) or to each of up to 10 (emails), through the campaign's templates, sender checks and email provider; subject prefixed [Test] ([Test B] for variant B), links as written, no tracking, no counter moves",
  body: testSendBody,
  async handle({ env, caller, path, body, panel, db }) {
    const to = body.emails ?? [body.email!];
    const { messageIds } = unwrap(await sendCampaignTestCopy(env, db, panel, path.campaign, to, auditorOf(caller), body.variant ?? null));
    return { message_id: messageIds[0]!, message_ids: messageIds };
  },
});

const readCampaignBody = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign/body",
  role: NEEDS.read,
  response: campaignBodyAnswer,
  summary: "A campaign's subject and HTML body as written, merge tags unfilled, with the visual editor's source when it has one (what an edit starts from)",
  async handle({ env, path, panel, db }) {
    const { campaign, subject, html, source } = unwrap(await campaignBody(env, db, panel.id, path.campaign));
    return { id: campaign.id, subject, html, body_source: source };
  },
});

const previewPanelCampaign = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign/preview",
  role: NEEDS.read,
  response: campaignPreviewAnswer,
  summary:
    "A campaign (or one of its A/B test's variants, by letter) as one contact gets it: every merge tag filled from the contact's attributes, the fallback where one is empty; without contact, every fallback",
  query: campaignPreviewQuery,
  async handle({ env, path, query, panel, db }) {
    return unwrap(await previewCampaign(env, db, panel, path.campaign, query.contact ?? null, query.variant ?? null));
  },
});

const checkPanelCampaign = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/campaigns/:campaign/checks",
  role: NEEDS.campaigns,
  response: campaignChecksAnswer,
  summary:
    "Checks before scheduling: merge tags naming no attribute of the panel, no {{UNSUBSCRIBE}} link, images without alt text, links that do not answer (HEAD, then GET, through the outbound guard; at most 20 links, 3 s each)",
  async handle({ env, path, panel, db }) {
    return { warnings: unwrap(await checkCampaign(env, db, panel.id, path.campaign)) };
  },
});

function outboxView(record: OutboxRecord): OutboxMessageView {
  return {
    id: record.id,
    channel: record.channel,
    to: record.recipient,
    from: record.sender,
    subject: record.subject,
    campaign_id: record.campaignId,
    size: record.size,
    created_at: isoTime(record.createdAt),
    note: record.note,
  };
}

const listPanelOutbox = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/outbox",
  role: NEEDS.read,
  response: outboxListAnswer,
  summary: "Messages the panel sent through the outbox provider, newest first",
  query: z.object({
    channel: z.string().min(1).optional(),
    campaign: z.string().min(1).max(100).optional().meta({ description: "Only the copies of this campaign (test copies among them)" }),
    limit: z.coerce.number().int().min(1).max(500).default(50),
  }),
  async handle({ env, query, panel, db }) {
    return { messages: (await listOutbox(db, panel.id, query.limit, { channel: query.channel, campaignId: query.campaign })).map(outboxView) };
  },
});

const readOutboxMessage = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/outbox/:message",
  role: NEEDS.outboxCopies,
  response: outboxMessageFullAnswer,
  summary: "One outbox message with its raw RFC 5322 text (the .eml) and, for email, its HTML part",
  async handle({ env, path, panel, db }) {
    const record = await getOutboxRecord(db, panel.id, path.message);
    const object = record ? await env.FILES.get(record.r2Key) : null;
    if (!record || !object) throw notFound(`No outbox message with id "${path.message}" in this panel`);
    const raw = await object.text();
    return { ...outboxView(record), raw, html: record.channel === "email" ? htmlOfMime(raw) : null };
  },
});

// The lifecycle (domain/campaign-lifecycle.ts): each answers the campaign as it is after the
// action, or 409 naming the state that does not allow it.

const lifecycleContext = (env: Env, db: ShardDb, panel: Panel) => ({ env, db, panel, now: Date.now() });

const editPanelCampaign = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel/campaigns/:campaign",
  role: NEEDS.campaigns,
  response: campaignAnswer,
  summary:
    "Edit a draft or scheduled campaign: name, subject, sender, reply-to, body (HTML with the visual editor's source, or a saved email template copied now), tags, audience (409 naming the state once it sends)",
  body: campaignEditSchema,
  async handle({ env, caller, path, body: input, panel, db }) {
    const { campaign, counters } = unwrap(await editCampaignContent(lifecycleContext(env, db, panel), path.campaign, input, auditorOf(caller)));
    return campaignView(campaign, panel, counters, campaignLeadMinutes(panel, env));
  },
});

const schedulePanelCampaign = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/campaigns/:campaign/schedule",
  role: NEEDS.campaigns,
  response: campaignAnswer,
  summary: "Schedule a draft, reschedule a scheduled campaign (schedule_date at least the panel's campaign lead time ahead), or send it now where that lead time is 0",
  // The time is read in the panel's zone, against the clock and the panel's lead time, which a
  // route body cannot see: the handler parses it again once the panel is loaded.
  body: z.strictObject({
    schedule_date: z.string().max(19).optional().meta({ description: "YYYY-MM-DD HH:mm:SS in the panel's time zone, at least the panel's campaign lead time ahead", example: "2026-12-01 09:30:00" }),
    send_now: z.literal(true).optional().meta({ description: "Send at the next minute; only where the panel's campaign lead time is 0" }),
  }),
  async handle({ env, caller, path, body, panel, db }) {
    const now = Date.now();
    const schema = campaignScheduleSchema({ allowPrivateFetch: allowsPrivateFetch(env), timezone: panel.timezone, now, leadMinutes: campaignLeadMinutes(panel, env) });
    const when = parseOrThrow(schema, body);
    const sendNow = body.send_now === true;
    const { campaign, counters } = unwrap(await scheduleCampaign({ env, db, panel, now }, path.campaign, when, sendNow, auditorOf(caller)));
    return campaignView(campaign, panel, counters, campaignLeadMinutes(panel, env));
  },
});

/** A lifecycle action without a body at `/campaigns/:campaign/{action}`, answering the campaign as it is after it. */
function lifecycleRoute(action: string, summary: string, act: (ctx: LifecycleContext, campaignId: string, by: Auditor) => Promise<CampaignOutcome>, status?: 201) {
  return definePanelRoute({
    method: "POST",
    path: `/panels/:panel/campaigns/:campaign/${action}`,
    role: NEEDS.campaigns,
    response: campaignAnswer,
    ...(status ? { status } : {}),
    summary,
    async handle({ env, caller, path, panel, db }) {
      const { campaign, counters } = unwrap(await act(lifecycleContext(env, db, panel), path.campaign, auditorOf(caller)));
      return campaignView(campaign, panel, counters, campaignLeadMinutes(panel, env));
    },
  });
}

const unschedulePanelCampaign = lifecycleRoute("unschedule", "Move a scheduled campaign back to draft", (ctx, id, by) => changeCampaignState(ctx, id, "unschedule", by));
const pausePanelCampaign = lifecycleRoute("pause", "Pause a sending campaign: no more batches go out until it is resumed", (ctx, id, by) =>
  changeCampaignState(ctx, id, "pause", by),
);
const resumePanelCampaign = lifecycleRoute("resume", "Resume a paused campaign: its unsent recipients go out", (ctx, id, by) => changeCampaignState(ctx, id, "resume", by));
const cancelPanelCampaign = lifecycleRoute(
  "cancel",
  "Cancel a scheduled, sending or paused campaign: nothing more goes out; what went out stays in its report, the rest counted as skipped",
  cancelCampaignSends,
);
const clonePanelCampaign = lifecycleRoute("clone", "A new draft with the campaign's content and audience (a contacts-file campaign's list becomes the audience)", cloneCampaign, 201);

const deletePanelCampaign = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/campaigns/:campaign",
  role: NEEDS.campaigns,
  response: deletedCampaignAnswer,
  summary: "Delete a draft, or a cancelled or failed campaign that reached no one; a sent campaign (or one that reached someone) is archived instead, its report kept",
  async handle({ env, caller, path, panel, db }) {
    const { deleted, campaign } = unwrap(await deleteOrArchiveCampaign(lifecycleContext(env, db, panel), path.campaign, auditorOf(caller)));
    return { id: campaign.id, outcome: deleted ? ("deleted" as const) : ("archived" as const) };
  },
});

const readMessageCopy = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/messages/:message/copy",
  role: NEEDS.read,
  response: messageCopyAnswer,
  summary:
    "The copy of a sent email (campaign or journey) as its recipient got it: subject and body with merge tags filled. The id is a contact page message's message_id (`<campaign>.<contact id>` or a journey message's msgid)",
  async handle({ env, path, panel, db }) {
    const copy = unwrap(await messageCopy(env.FILES, db, panel.id, path.message, panelShards(env, panel, db)));
    return {
      message_id: copy.messageId,
      kind: copy.kind,
      source_id: copy.sourceId,
      to: copy.to,
      subject: copy.subject,
      html: copy.html,
      sent_at: copy.sentAt === null ? null : isoTime(copy.sentAt),
    };
  },
});

// A/B tests (issue 43, item 7): 2 to 4 variants of the subject and/or body, a test share and a
// winner metric after a wait; set while the campaign may be edited.

const readAbTest = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign/ab-test",
  role: NEEDS.read,
  response: abTestAnswer,
  summary: "A campaign's A/B test as set (each variant's own subject and body) with its variants' results side by side and the winner; null without a test",
  async handle({ env, path, panel, db }) {
    const campaign = await orNotFound(getCampaign(db, panel.id, path.campaign), noSuchCampaign(path.campaign));
    return { ab_test: await abTestOf(env.FILES, panelShards(env, panel, db), campaign) };
  },
});

const setPanelAbTest = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/campaigns/:campaign/ab-test",
  role: NEEDS.campaigns,
  response: campaignAnswer,
  summary:
    "Set a draft or scheduled campaign's A/B test: 2 to 4 variants (each its own subject, html or both; the campaign's where absent), the test share (1 to 50 %), the winner metric (unique_opens or unique_clicks) and the minutes to wait before the winner goes to the rest (409 naming the state once it sends)",
  body: abTestBody,
  async handle({ env, caller, path, body, panel, db }) {
    const { campaign, counters } = unwrap(await setAbTest(lifecycleContext(env, db, panel), path.campaign, body, auditorOf(caller)));
    return campaignView(campaign, panel, counters, campaignLeadMinutes(panel, env));
  },
});

const removePanelAbTest = definePanelRoute({
  method: "DELETE",
  path: "/panels/:panel/campaigns/:campaign/ab-test",
  role: NEEDS.campaigns,
  response: campaignAnswer,
  summary: "Remove a draft or scheduled campaign's A/B test: everyone gets the campaign's own subject and body",
  async handle({ env, caller, path, panel, db }) {
    const { campaign, counters } = unwrap(await removeAbTest(lifecycleContext(env, db, panel), path.campaign, auditorOf(caller)));
    return campaignView(campaign, panel, counters, campaignLeadMinutes(panel, env));
  },
});

export const campaignRoutes = [
  readAbTest,
  setPanelAbTest,
  removePanelAbTest,
  listPanelCampaigns,
  createPanelCampaign,
  estimatePanelAudience,
  readCampaign,
  editPanelCampaign,
  deletePanelCampaign,
  schedulePanelCampaign,
  unschedulePanelCampaign,
  pausePanelCampaign,
  resumePanelCampaign,
  cancelPanelCampaign,
  clonePanelCampaign,
  readCampaignReport,
  listCampaignRecipients,
  sendTestCopy,
  readCampaignBody,
  previewPanelCampaign,
  checkPanelCampaign,
  listPanelOutbox,
  readOutboxMessage,
  readMessageCopy,
];
