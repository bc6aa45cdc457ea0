import type { AudienceCampaignRequest } from "../../domain/broadcast";
import type { FieldProblem } from "../../domain/problems";
import { refused, succeeded, type Result } from "../../lib/problems";
import { insertAudienceCampaign, type CampaignAudience } from "../../store/campaigns/definitions";
import { existingListIds } from "../../store/lists";
import type { Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { compileSegment, type CompiledSegment, type SegmentSqlMode } from "../../store/segment-sql";
import { existingSegmentIds, getSegment, loadSegmentCatalog } from "../../store/segments";
import type { SegmentNode } from "../../domain/segments";
import { newCampaign, putCampaignBody, readHtmlBody } from "./create";
import { senderStanding } from "../channels/email/sender-domains";
import { copyOfEmailTemplate } from "../email-templates/templates";
import { htmlWithPreheader } from "../../domain/email-templates";
import { namedTopic } from "../topics/topics";

/**
 * Campaigns of the admin API that send to an audience (CONTRACT 9): lists and saved segments
 * of the panel, minus excluded ones, resolved when the campaign is published, so the
 * recipients are who matches then. Everything else follows 4.10 (schema in domain/broadcast.ts,
 * the HTML body's download, publishing and sending).
 */

/** `senderNote`: the outbox accepts a sender domain that a real provider would refuse. */
export type AudienceCampaignOutcome = Result<{ campaignId: string; senderNote: string | null }>;

/** Checks the lists and segments the audience names, keeps the HTML body in R2, and schedules the campaign (or keeps it a draft). */
export async function createAudienceCampaign(
  ctx: { env: Env; db: ShardDb; panel: Panel; requestId: string; now: number },
  request: AudienceCampaignRequest,
  status: "draft" | "scheduled" = "scheduled",
): Promise<AudienceCampaignOutcome> {
  const { env, db, panel } = ctx;
  const problems = await audienceProblems(db, panel.id, request.audience);
  const sender = await senderStanding(env, db, panel.id, request.senderEmail);
  if (sender.refusal) problems.unshift({ field: "sender_email", message: sender.refusal });
  // A named template is copied now, when the campaign is created: what was previewed and
  // scheduled is what goes out, whatever happens to the template afterwards.
  const copy = request.emailTemplate === null ? null : await copyOfEmailTemplate(db, panel.id, request.emailTemplate, "email_template");
  if (copy && !copy.ok) problems.push(...copy.problem.fields);
  const topic = request.topicId === null ? null : await namedTopic(db, panel.id, request.topicId, "topic");
  if (topic && !topic.ok) problems.push(...topic.problem.fields);
  if (problems.length) return refused("invalid", problems);
  const body = copy?.ok ? succeeded(htmlWithPreheader(copy.value)) : await readHtmlBody(env, request, "html_url");
  if (!body.ok) return body;

  const campaign = newCampaign(ctx, { ...request, subject: request.subject ?? (copy?.ok ? copy.value.subject : "") });
  await putCampaignBody(env, campaign, body.value);
  await insertAudienceCampaign(db, { ...campaign, replyTo: request.replyTo, audience: request.audience, emailTemplateId: copy?.ok ? copy.value.id : null, bodySource: copy?.ok ? copy.value.bodySource : request.bodySource, localTime: request.localTime, topicId: request.topicId }, status);
  return succeeded({ campaignId: campaign.id, senderNote: sender.note });
}

/** Each list and segment the audience names that the panel does not have. */
export async function audienceProblems(db: ShardDb, panelId: string, audience: CampaignAudience): Promise<FieldProblem[]> {
  const problems: FieldProblem[] = [];
  const lists = await existingListIds(db, panelId, [...audience.lists, ...audience.exclude_lists]);
  const segments = await existingSegmentIds(db, panelId, [...audience.segments, ...audience.exclude_segments]);
  for (const member of ["lists", "exclude_lists"] as const) {
    audience[member].forEach((id, i) => lists.has(id) || problems.push({ field: `audience.${member}.${i}`, message: `no list with id ${id} in this panel` }));
  }
  for (const member of ["segments", "exclude_segments"] as const) {
    audience[member].forEach((id, i) => segments.has(id) || problems.push({ field: `audience.${member}.${i}`, message: `no segment with id "${id}" in this panel` }));
  }
  return problems;
}

/**
 * The audience as one compiled condition over the panel's contacts: in any listed list or
 * segment, in no excluded one, and with an EMAIL that is not suppressed.
 */
export async function compileAudience(db: ShardDb, panelId: string, audience: CampaignAudience, now: number, mode: SegmentSqlMode = "scan"): Promise<CompiledSegment> {
  const matchOf = async (id: string): Promise<SegmentNode> => (await getSegment(db, panelId, id))?.match ?? { any: [{ list: 0, op: "in" }] };
  const include: SegmentNode[] = [...audience.lists.map((list): SegmentNode => ({ list, op: "in" })), ...(await Promise.all(audience.segments.map(matchOf)))];
  const exclude: SegmentNode[] = [...audience.exclude_lists.map((list): SegmentNode => ({ list, op: "in" })), ...(await Promise.all(audience.exclude_segments.map(matchOf)))];
  const match: SegmentNode = { all: [{ reachable: "email" }, { any: include }, ...(exclude.length ? [{ not: { any: exclude } }] : [])] };
  return compileSegment(match, await loadSegmentCatalog(db, panelId), now, mode);
}
