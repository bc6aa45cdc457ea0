import { notFound, orNotFound } from "../lib/http/errors";
import { z } from "../lib/z";
import { campaignCounters, getCampaign } from "../store/campaigns";
import { getOutboxRecord, listOutbox, type OutboxRecord } from "../store/outbox";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";

const readCampaign = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/campaigns/:campaign",
  role: "viewer",
  summary: "An email campaign with its state and counters (queued, sent, failed, opens, unique opens, clicks, bounces, unsubscribes)",
  async handle({ env, path, panel }) {
    const campaign = await orNotFound(getCampaign(env.DB, panel.id, path.campaign), `No campaign with id "${path.campaign}" in this panel`);
    const counters = await campaignCounters(env.DB, panel.id, campaign.id);
    return {
      id: campaign.id,
      name: campaign.name,
      status: campaign.status,
      status_reason: campaign.statusReason,
      list_id: campaign.listId,
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
  },
});

function outboxView(record: OutboxRecord) {
  return {
    id: record.id,
    channel: record.channel,
    to: record.recipient,
    from: record.sender,
    subject: record.subject,
    campaign_id: record.campaignId,
    size: record.size,
    created_at: isoTime(record.createdAt),
  };
}

const listPanelOutbox = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/outbox",
  role: "viewer",
  summary: "Messages the panel sent through the outbox provider, newest first",
  query: z.object({
    channel: z.string().min(1).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(50),
  }),
  async handle({ env, query, panel }) {
    return { messages: (await listOutbox(env.DB, panel.id, query.limit, query.channel)).map(outboxView) };
  },
});

const readOutboxMessage = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/outbox/:message",
  role: "viewer",
  summary: "One outbox message with its raw RFC 5322 text (the .eml)",
  async handle({ env, path, panel }) {
    const record = await getOutboxRecord(env.DB, panel.id, path.message);
    const object = record ? await env.FILES.get(record.r2Key) : null;
    if (!record || !object) throw notFound(`No outbox message with id "${path.message}" in this panel`);
    return { ...outboxView(record), raw: await object.text() };
  },
});

export const campaignRoutes = [readCampaign, listPanelOutbox, readOutboxMessage];
