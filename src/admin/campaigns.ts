import { campaignAnswer, campaignListAnswer, campaignRecipientsAnswer, campaignReportAnswer, createdCampaignAnswer, outboxListAnswer, outboxMessageFullAnswer, testSentAnswer } from "../domain/answers/campaigns";
import { audienceCampaignSchema, broadcastRequestSchema, recipientsQuery, testSendBody, type CampaignRecipientsPage, type CampaignView, type OutboxMessageView } from "../domain/broadcast";
import { htmlOfMime } from "../domain/email-message";
import { notFound, orNotFound, parseOrThrow, unwrap } from "../lib/http/errors";
import { csvAttachment } from "../lib/http/respond";
import { allowsPrivateFetch } from "../lib/outbound";
import { z } from "../lib/z";
import { createCampaign, type CampaignRequest } from "../services/broadcasts/create-campaign";
import { campaignsWithCounters, campaignWithCounters, recipientsOfCampaign, reportOfCampaign } from "../services/broadcasts/read";
import { recipientView } from "../services/broadcasts/report";
import { sendTestCopy as sendCampaignTestCopy } from "../services/broadcasts/test-send";
import type { Campaign, CampaignCounters } from "../store/campaigns";
import type { Panel } from "../store/panels";
import { getOutboxRecord, listOutbox, type OutboxRecord } from "../store/outbox";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";
import { config } from "../lib/config";

function campaignView(campaign: Campaign, panel: Panel, counters: CampaignCounters): CampaignView {
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
    import_job_id: campaign.importJobId,
    request_id: campaign.requestId,
    created_at: isoTime(campaign.createdAt),
    published_at: campaign.publishedAt === null ? null : isoTime(campaign.publishedAt),
    finished_at: campaign.finishedAt === null ? null : isoTime(campaign.finishedAt),
    counters,
  };
}

const noSuchCampaign = (id: string) => `No campaign with id "${id}" in this panel`;

const readCampaign = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign",
  role: "viewer",
  response: campaignAnswer,
  summary: "An email campaign with its state and counters (queued, sent, failed, opens, unique opens, clicks, bounces, unsubscribes)",
  async handle({ env, path, panel, db }) {
    const found = await orNotFound(campaignWithCounters(db, panel.id, path.campaign), noSuchCampaign(path.campaign));
    return campaignView(found.campaign, panel, found.counters);
  },
});

const readCampaignReport = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign/report",
  role: "viewer",
  response: campaignReportAnswer,
  summary:
    "A campaign's report from its aggregates: counters, rates (delivered, unique open, click-through, click-to-open, bounce, unsubscribe, as shares of sent), what changed per hour (UTC) and the most clicked links",
  async handle({ path, panel, db }) {
    return orNotFound(reportOfCampaign(db, panel.id, path.campaign), noSuchCampaign(path.campaign));
  },
});

const listCampaignRecipients = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign/recipients",
  role: "viewer",
  response: campaignRecipientsAnswer,
  summary: "The recipients behind a number of the report (filter), a page at a time by contact id, or all of them as one CSV download (format=csv)",
  query: recipientsQuery,
  async handle({ path, query, panel, db }): Promise<CampaignRecipientsPage | Response> {
    const found = await orNotFound(recipientsOfCampaign(db, panel.id, path.campaign, query), noSuchCampaign(path.campaign));
    if ("csv" in found) return csvAttachment(found.csv, null, `${found.campaign.id}-${query.filter}.csv`);
    const { page } = found;
    return { recipients: page.map(recipientView), next: page.length === query.limit ? page.at(-1)!.contactId : null };
  },
});

const listPanelCampaigns = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns",
  role: "viewer",
  response: campaignListAnswer,
  summary: "The panel's email campaigns, newest first, with their counters; the panel's time zone and the broadcast lead time",
  query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }),
  async handle({ env, query, panel, db }) {
    const campaigns = await campaignsWithCounters(db, panel.id, query.limit);
    return { campaigns: campaigns.map(({ campaign, counters }) => campaignView(campaign, panel, counters)), timezone: panel.timezone, lead_minutes: config(env).broadcastLeadMinutes };
  },
});

// The body is a campaign with an `audience` of lists and segments (CONTRACT 9), or else the
// broadcast request of 4.10 with its contacts file; either is read under the panel's zone and
// the clock, which a route body cannot see: the handler parses it once the panel is loaded.
const createPanelCampaign = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/campaigns",
  role: "marketer",
  response: createdCampaignAnswer,
  summary: "Create and schedule an email campaign: to an audience of lists and saved segments (CONTRACT 9), or with a contacts file under the rules of upload_contact_and_publish (4.10)",
  status: 201,
  body: z.record(z.string().max(100), z.unknown()).meta({
    description:
      'With "audience": {"name","subject","sender_name","sender_email","reply_to"?,"html"|"html_url","schedule_date"?,"tags"?,"audience":{"lists"?,"segments"?,"exclude_lists"?,"exclude_segments"?}} (CONTRACT 9); otherwise the broadcast request of spec 2.5 (the data object of upload_contact_and_publish)',
  }),
  async handle({ env, caller, body, panel, db }) {
    const now = Date.now();
    const rules = { allowPrivateFetch: allowsPrivateFetch(env), timezone: panel.timezone, now, leadMinutes: config(env).broadcastLeadMinutes };
    const input: CampaignRequest =
      "audience" in body
        ? { kind: "audience", request: parseOrThrow(audienceCampaignSchema(rules), body) }
        : { kind: "broadcast", request: parseOrThrow(broadcastRequestSchema(rules), body) };
    const { campaign, counters, senderNote, senderField } = unwrap(await createCampaign({ env, db, panel, now }, input, auditorOf(caller)));
    // The outbox keeps mail from an unverified domain; the operator hears now that real email would not go.
    const warnings = senderNote ? [{ field: senderField, message: senderNote }] : [];
    return { CampaignID: campaign.id, ...campaignView(campaign, panel, counters), warnings };
  },
});

const sendTestCopy = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/campaigns/:campaign/test",
  role: "marketer",
  response: testSentAnswer,
  summary:
    "Send one test copy of a campaign to an address, through the campaign's templates, sender checks and email provider; subject prefixed [Test], links as written, no tracking, no counter moves",
  body: testSendBody,
  async handle({ env, caller, path, body, panel, db }) {
    const { messageId } = unwrap(await sendCampaignTestCopy(env, db, panel, path.campaign, body.email, auditorOf(caller)));
    return { message_id: messageId };
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
  role: "viewer",
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
  role: "viewer",
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

export const campaignRoutes = [listPanelCampaigns, createPanelCampaign, readCampaign, readCampaignReport, listCampaignRecipients, sendTestCopy, listPanelOutbox, readOutboxMessage];
