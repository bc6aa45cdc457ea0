import { mirrorShards, panelOwningShards, panelShards } from "../access/partitions";
import { namedTopic } from "../topics/topics";
import type { CampaignEdit as CampaignEditInput } from "../../domain/broadcast";
import { campaignTransition, deleteTarget, refusedTransition, type CampaignAction, type CampaignStatus } from "../../domain/campaign-lifecycle";
import { config } from "../../lib/config";
import { refused, succeeded, type Result } from "../../lib/problems";
import { newId, randomHex } from "../../lib/random";
import { setCampaignAbTest } from "../../store/campaigns/ab-tests";
import { campaignBodySource, campaignSentAny, cancelCampaign, deleteCampaign, editCampaign, getCampaign, insertAudienceCampaign, moveCampaign, type Campaign, type CampaignCounters, type CampaignEdit } from "../../store/campaigns/definitions";
import { deleteCampaignPart, cancelCampaignPart } from "../../store/campaigns/parts";
import type { Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { senderStanding } from "../channels/email/sender-domains";
import { audienceProblems } from "./audience";
import { readHtmlBody } from "./create";
import { nudgeUnsentBatches } from "./unsent";
import { copyOfEmailTemplate } from "../email-templates/templates";
import { htmlWithPreheader } from "../../domain/email-templates";
import { nudgePublish, nudgeUnfinishedShards } from "./publish";
import { countersAcross } from "./report";

// The campaign lifecycle's use cases (issue 43): each reads the campaign, asks the transition
// table (domain/campaign-lifecycle.ts) whether its state allows the action, and writes with the
// same states as a guard, so a campaign that moved on meanwhile (published by the cron, finished)
// is refused as it would have been a moment later.

/** How far ahead the panel's campaigns must be scheduled: its own setting, else the deployment's (90 by default). */
export function campaignLeadMinutes(panel: Panel, env: Env): number {
  return panel.campaignLeadMinutes ?? config(env).broadcastLeadMinutes;
}

export interface LifecycleContext {
  env: Env;
  db: ShardDb;
  panel: Panel;
  now: number;
}

export type CampaignOutcome = Result<{ campaign: Campaign; counters: CampaignCounters }>;

const noSuchCampaign = (id: string) => refused<never>("not_found", [], `No campaign with id "${id}" in this panel`);

const notAllowed = refusedTransition;

/** The states from which `action` is allowed: the SQL guard of the write. */
export function fromStates(action: CampaignAction, status: CampaignStatus): CampaignStatus[] {
  return campaignTransition(status, action).ok ? [status] : [];
}

/** The campaign with its counters, summed over the shards holding the panel's partitions (the home alone for a panel without a map). */
export async function answer(ctx: LifecycleContext, campaign: Campaign): Promise<CampaignOutcome> {
  return succeeded({ campaign, counters: await countersAcross(panelShards(ctx.env, ctx.panel, ctx.db), campaign.panelId, campaign) });
}

/** Loads the campaign and checks the action against its state. */
export async function load(ctx: LifecycleContext, id: string, action: CampaignAction): Promise<Result<Campaign>> {
  const campaign = await getCampaign(ctx.db, ctx.panel.id, id);
  if (!campaign) return noSuchCampaign(id);
  if (!campaignTransition(campaign.status, action).ok) return notAllowed(campaign.status, action);
  return succeeded(campaign);
}

/** The write lost a race with another change (the cron published it, another operator acted): answered as that state's refusal. */
export async function raced(ctx: LifecycleContext, id: string, action: CampaignAction): Promise<Result<never>> {
  const now = await getCampaign(ctx.db, ctx.panel.id, id);
  return now ? notAllowed(now.status, action) : noSuchCampaign(id);
}

/** A body's fresh R2 key: the send cache keys templates by it, so an edited body is never served stale. */
export function freshBodyKey(campaign: { panelId: string; id: string }): string {
  return `broadcasts/${campaign.panelId}/${campaign.id}/body-${randomHex(6)}.html`;
}

/** Edits a draft or scheduled campaign; the rules of creating one apply to what changes. */
export async function editCampaignContent(ctx: LifecycleContext, id: string, input: CampaignEditInput, by: Auditor): Promise<CampaignOutcome> {
  const { env, db, panel, now } = ctx;
  const loaded = await load(ctx, id, "edit");
  if (!loaded.ok) return loaded;
  const campaign = loaded.value;
  if (input.audience && campaign.listId !== null) {
    return refused("invalid", [{ field: "audience", message: "a campaign of upload_contact_and_publish sends to its own list; its audience cannot change" }]);
  }
  const problems = input.audience ? await audienceProblems(db, panel.id, input.audience) : [];
  if (input.sender_email !== undefined) {
    const sender = await senderStanding(env, db, panel.id, input.sender_email);
    if (sender.refusal) problems.unshift({ field: "sender_email", message: sender.refusal });
  }
  // A named template is copied now, as when a campaign is created from one.
  const copy = input.email_template === undefined ? null : await copyOfEmailTemplate(db, panel.id, input.email_template, "email_template");
  if (copy && !copy.ok) problems.push(...copy.problem.fields);
  const topic = typeof input.topic === "string" ? await namedTopic(db, panel.id, input.topic, "topic") : null;
  if (topic && !topic.ok) problems.push(...topic.problem.fields);
  if (problems.length) return refused("invalid", problems);
  const edit: CampaignEdit = {
    name: input.name,
    subject: input.subject,
    senderName: input.sender_name,
    senderEmail: input.sender_email,
    replyTo: input.reply_to,
    tags: input.tags,
    audience: input.audience,
    topicId: input.topic,
  };
  let html: string | null = null;
  if (copy?.ok) {
    html = htmlWithPreheader(copy.value);
    edit.subject ??= copy.value.subject;
    edit.bodySource = copy.value.bodySource;
    edit.emailTemplateId = copy.value.id;
  } else if (input.html !== undefined || input.html_url !== undefined) {
    const body = await readHtmlBody(env, { sourceHtml: input.html ?? null, sourceFile: input.html_url ?? null }, "html_url");
    if (!body.ok) return body;
    html = body.value;
    // A body of its own: the editor's source when it came with one, and no template any more.
    edit.bodySource = input.body_source ?? null;
    edit.emailTemplateId = null;
  }
  if (html !== null) {
    edit.bodyKey = freshBodyKey(campaign);
    await env.FILES.put(edit.bodyKey, html, { httpMetadata: { contentType: "text/html; charset=utf-8" } });
  }
  const edited = await editCampaign(db, panel.id, id, fromStates("edit", campaign.status), edit, now);
  if (!edited) return raced(ctx, id, "edit");
  await recordAudit(db, panel.id, by, "campaign.edited", id, { changed: Object.keys(input) });
  return answer(ctx, edited);
}

/**
 * Schedules a draft, reschedules a scheduled campaign, or (`send_now`, where the lead time is 0)
 * makes either due at once: the cron publishes it within the minute. `when` passed the panel's
 * lead rule already (domain/broadcast.ts campaignScheduleSchema).
 */
export async function scheduleCampaign(
  ctx: LifecycleContext,
  id: string,
  when: { local: string; sendAt: number },
  sendNow: boolean,
  by: Auditor,
): Promise<CampaignOutcome> {
  const { db, panel, now } = ctx;
  const campaign = await getCampaign(db, panel.id, id);
  if (!campaign) return noSuchCampaign(id);
  const action: CampaignAction = sendNow ? "send_now" : campaign.status === "scheduled" ? "reschedule" : "schedule";
  if (!campaignTransition(campaign.status, action).ok) return notAllowed(campaign.status, action);
  // A draft's lists and segments may have gone since it was written.
  if (campaign.audience) {
    const problems = await audienceProblems(db, panel.id, campaign.audience);
    if (problems.length) return refused("invalid", problems);
  }
  const moved = await moveCampaign(db, panel.id, id, fromStates(action, campaign.status), "scheduled", now, when);
  if (!moved) return raced(ctx, id, action);
  await recordAudit(db, panel.id, by, "campaign.scheduled", id, { schedule_date: when.local, send_now: sendNow });
  return answer(ctx, moved);
}

type SimpleAction = "unschedule" | "pause" | "resume";
const AUDITED = { unschedule: "campaign.unscheduled", pause: "campaign.paused", resume: "campaign.resumed" } as const;

/**
 * Moves a scheduled campaign back to draft, pauses a sending one (no batch claims recipients
 * while it is paused) or resumes it (its unsent batches are nudged again).
 */
export async function changeCampaignState(ctx: LifecycleContext, id: string, action: SimpleAction, by: Auditor): Promise<CampaignOutcome> {
  const { env, db, panel, now } = ctx;
  const loaded = await load(ctx, id, action);
  if (!loaded.ok) return loaded;
  const outcome = campaignTransition(loaded.value.status, action);
  const to = outcome.ok ? (outcome.to as CampaignStatus) : loaded.value.status;
  const moved = await moveCampaign(db, panel.id, id, fromStates(action, loaded.value.status), to, now);
  if (!moved) return raced(ctx, id, action);
  if (action === "resume") {
    // A page of its unsent batches; a continuation nudges the next (decision 0058).
    await nudgeUnsentBatches(env, db, moved);
    // Its recipients were still being inserted: the next step, in case its nudge was lost while paused.
    if (moved.publishing) await nudgePublish(env, moved);
    // The same on each other shard of the campaign not finished yet (decision 0038 step 4).
    await nudgeUnfinishedShards(env, db, panel, moved, now, moved.abWinner !== null);
  }
  await recordAudit(db, panel.id, by, AUDITED[action], id, {});
  return answer(ctx, moved);
}

/** Cancels a scheduled, sending or paused campaign: nothing more goes out; what went out stays in its report. */
export async function cancelCampaignSends(ctx: LifecycleContext, id: string, by: Auditor): Promise<CampaignOutcome> {
  const { env, db, panel, now } = ctx;
  const loaded = await load(ctx, id, "cancel");
  if (!loaded.ok) return loaded;
  const cancelled = await cancelCampaign(db, panel.id, id, fromStates("cancel", loaded.value.status), now);
  if (!cancelled) return raced(ctx, id, "cancel");
  // Its publishing on the other shards of the panel's partitions ends, its recipients queued there are skipped.
  for (const mirror of mirrorShards(env, panel)) await cancelCampaignPart(mirror.db, panel.id, id, now);
  await recordAudit(db, panel.id, by, "campaign.cancelled", id, { was: loaded.value.status });
  return answer(ctx, cancelled);
}

/** A new draft with the campaign's content and audience (a 4.10 campaign's own list becomes the audience). */
export async function cloneCampaign(ctx: LifecycleContext, id: string, by: Auditor): Promise<CampaignOutcome> {
  const { env, db, panel, now } = ctx;
  const loaded = await load(ctx, id, "clone");
  if (!loaded.ok) return loaded;
  const source = loaded.value;
  const body = await env.FILES.get(source.bodyKey);
  if (!body) throw new Error(`campaign ${source.id}: body ${source.bodyKey} is missing from R2`);
  const cloneId = newId("cmp");
  const clone = {
    id: cloneId,
    panelId: panel.id,
    name: `${source.name} (copy)`.slice(0, 500),
    subject: source.subject,
    senderName: source.senderName,
    senderEmail: source.senderEmail,
    tags: source.tags,
    scheduleLocal: source.scheduleLocal,
    sendAt: source.sendAt,
    bodyKey: freshBodyKey({ panelId: panel.id, id: cloneId }),
    requestId: newId("req"),
    createdAt: now,
    replyTo: source.replyTo,
    audience: source.audience ?? { lists: [source.listId!], segments: [], exclude_lists: [], exclude_segments: [] },
    emailTemplateId: source.emailTemplateId,
    topicId: source.topicId,
    bodySource: (await campaignBodySource(db, panel.id, source.id)) ?? null,
  };
  await env.FILES.put(clone.bodyKey, await body.text(), { httpMetadata: { contentType: "text/html; charset=utf-8" } });
  await insertAudienceCampaign(db, clone, "draft");
  if (source.abTest) {
    // The clone's variant bodies are its own copies: deleting either campaign deletes its own.
    const variants = [];
    for (const variant of source.abTest.variants) {
      const html = variant.body_key === null ? null : await (await env.FILES.get(variant.body_key))?.text();
      let bodyKey: string | null = null;
      if (typeof html === "string") {
        bodyKey = freshBodyKey(clone);
        await env.FILES.put(bodyKey, html, { httpMetadata: { contentType: "text/html; charset=utf-8" } });
      }
      variants.push({ subject: variant.subject, body_key: bodyKey });
    }
    await setCampaignAbTest(db, panel.id, cloneId, ["draft"], { ...source.abTest, variants }, now);
  }
  await recordAudit(db, panel.id, by, "campaign.cloned", cloneId, { from: source.id });
  const created = await getCampaign(db, panel.id, cloneId);
  return answer(ctx, created!);
}

/**
 * Deletes a draft, or a cancelled or failed campaign that reached no one; archives a sent one
 * (or a cancelled one that reached someone), its report kept. `archived` tells which.
 */
export async function deleteOrArchiveCampaign(ctx: LifecycleContext, id: string, by: Auditor): Promise<Result<{ deleted: boolean; campaign: Campaign }>> {
  const { env, db, panel, now } = ctx;
  const loaded = await load(ctx, id, "delete");
  if (!loaded.ok) return loaded;
  const campaign = loaded.value;
  // Each shard's recipients go within its buckets (a split's source's fenced copies are cleaning's, decision 0047).
  const [home, ...mirrors] = panelOwningShards(env, panel, db);
  const sentAny = await Promise.all([home, ...mirrors].map((shard) => campaignSentAny(shard.db, panel.id, id)));
  const to = deleteTarget(campaign.status, sentAny.some(Boolean));
  const from = fromStates("delete", campaign.status);
  if (to === "archived") {
    const archived = await moveCampaign(db, panel.id, id, from, "archived", now);
    if (!archived) return raced(ctx, id, "delete");
    await recordAudit(db, panel.id, by, "campaign.archived", id, { name: campaign.name });
    return succeeded({ deleted: false, campaign: archived });
  }
  if (!(await deleteCampaign(db, panel.id, id, from, mirrors.length > 0, home.buckets))) return raced(ctx, id, "delete");
  for (const mirror of mirrors) await deleteCampaignPart(mirror.db, panel.id, id, mirror.buckets);
  await env.FILES.delete([campaign.bodyKey, ...(campaign.abTest?.variants.flatMap((v) => (v.body_key ? [v.body_key] : [])) ?? [])]);
  await recordAudit(db, panel.id, by, "campaign.deleted", id, { name: campaign.name });
  return succeeded({ deleted: true, campaign });
}
