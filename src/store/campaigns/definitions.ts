/**
 * Campaigns as rows (CONTRACT 9): created, edited, moved through their lifecycle, read and
 * listed. Each lifecycle write repeats in SQL the states it leaves, so a campaign that moved on
 * since it was read is left alone.
 */
import type { ShardDb } from "../shards";
import { fencedCopyHere, notMovingHere } from "../panel-move/triggers";
import type { BucketRanges } from "../../domain/partitions";
import type { CampaignAudience, CampaignCounters, CampaignStatus } from "../../domain/broadcast";
import type { EmailSource } from "../../domain/email-source";
import type { AbTest } from "../../domain/ab-test";
import { listNameKey } from "../../domain/lists";
import { insertListStatement } from "../lists";
import { isUniqueViolation } from "../sql";

export type { CampaignAudience, CampaignCounters, CampaignStatus };

export interface Campaign {
  id: string;
  panelId: string;
  /** The campaign's own list (4.10); null for a campaign with an audience. */
  listId: number | null;
  audience: CampaignAudience | null;
  replyTo: string | null;
  name: string;
  subject: string;
  senderName: string;
  senderEmail: string;
  tags: string[];
  scheduleLocal: string;
  sendAt: number;
  bodyKey: string;
  /** The saved email template the subject and body were copied from at creation; null: the campaign's own. */
  emailTemplateId: string | null;
  /** Its A/B test (domain/ab-test.ts); null without one. */
  abTest: AbTest | null;
  /** The variant the rest got, once the test's winner is picked. */
  abWinner: number | null;
  importJobId: string | null;
  status: CampaignStatus;
  statusReason: string | null;
  recipients: number;
  /** Recipients are still being inserted (publishStep): the campaign is not finished before they are. */
  publishing: boolean;
  requestId: string;
  createdAt: number;
  publishedAt: number | null;
  /** When its last publish step ran (every recipient in); null while publishing, or before shard migration 0090. */
  publishedEndAt: number | null;
  finishedAt: number | null;
  updatedAt: number;
  /** Send at local time: each recipient at this HH:MM on its own clock; null: at once. */
  localTime: string | null;
  /** The topic it is about (issue 45, item 4): its send skips the contacts who left it; null: none. */
  topicId: string | null;
}

export interface CampaignRow {
  id: string;
  panel_id: string;
  list_id: number | null;
  audience: string | null;
  reply_to: string | null;
  name: string;
  subject: string;
  sender_name: string;
  sender_email: string;
  tags: string;
  schedule_local: string;
  send_at: number;
  body_key: string;
  email_template_id: string | null;
  ab_test: string | null;
  ab_winner: number | null;
  import_job_id: string | null;
  status: CampaignStatus;
  status_reason: string | null;
  recipients: number;
  publish_after: number | null;
  request_id: string;
  created_at: number;
  published_at: number | null;
  published_end_at: number | null;
  finished_at: number | null;
  updated_at: number;
  local_time: string | null;
  topic_id: string | null;
}

export function campaignFromRow(row: CampaignRow): Campaign {
  return {
    id: row.id,
    panelId: row.panel_id,
    listId: row.list_id,
    audience: row.audience === null ? null : (JSON.parse(row.audience) as CampaignAudience),
    replyTo: row.reply_to,
    name: row.name,
    subject: row.subject,
    senderName: row.sender_name,
    senderEmail: row.sender_email,
    tags: JSON.parse(row.tags) as string[],
    scheduleLocal: row.schedule_local,
    sendAt: row.send_at,
    bodyKey: row.body_key,
    emailTemplateId: row.email_template_id,
    abTest: row.ab_test === null ? null : (JSON.parse(row.ab_test) as AbTest),
    abWinner: row.ab_winner,
    importJobId: row.import_job_id,
    status: row.status,
    statusReason: row.status_reason,
    recipients: row.recipients,
    publishing: row.publish_after !== null,
    requestId: row.request_id,
    createdAt: row.created_at,
    publishedAt: row.published_at,
    publishedEndAt: row.published_end_at,
    finishedAt: row.finished_at,
    updatedAt: row.updated_at,
    localTime: row.local_time,
    topicId: row.topic_id,
  };
}

export type NewCampaign = Omit<Campaign, "listId" | "audience" | "replyTo" | "status" | "statusReason" | "recipients" | "publishing" | "publishedAt" | "publishedEndAt" | "finishedAt" | "updatedAt" | "importJobId" | "emailTemplateId" | "localTime" | "abTest" | "abWinner" | "topicId">;

/** Creates a campaign that sends to an audience (CONTRACT 9); it is published when its time comes. */
export async function insertAudienceCampaign(
  db: ShardDb,
  campaign: NewCampaign & { audience: CampaignAudience; replyTo: string | null; emailTemplateId: string | null; bodySource: EmailSource | null; localTime?: string | null; topicId?: string | null },
  status: "draft" | "scheduled" = "scheduled",
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO campaigns (id, panel_id, list_id, audience, reply_to, name, subject, sender_name, sender_email, tags, schedule_local,
         send_at, body_key, status, request_id, created_at, updated_at, email_template_id, body_source, local_time, topic_id)
       VALUES (?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      campaign.id,
      campaign.panelId,
      JSON.stringify(campaign.audience),
      campaign.replyTo,
      campaign.name,
      campaign.subject,
      campaign.senderName,
      campaign.senderEmail,
      JSON.stringify(campaign.tags),
      campaign.scheduleLocal,
      campaign.sendAt,
      campaign.bodyKey,
      status,
      campaign.requestId,
      campaign.createdAt,
      campaign.createdAt,
      campaign.emailTemplateId,
      sourceText(campaign.bodySource),
      campaign.localTime ?? null,
      campaign.topicId ?? null,
    )
    .run();
}

const sourceText = (source: EmailSource | null) => (source === null ? null : JSON.stringify(source));

/**
 * The visual editor's source of the campaign's body (migrations/shard/0072), null when its HTML
 * was written by hand; undefined when the panel has no such campaign. Read apart from the
 * campaign (up to 256 KiB), which lists and the send path load without it.
 */
export async function campaignBodySource(db: ShardDb, panelId: string, id: string): Promise<EmailSource | null | undefined> {
  const row = await db.prepare("SELECT body_source FROM campaigns WHERE panel_id = ? AND id = ?").bind(panelId, id).first<{ body_source: string | null }>();
  if (!row) return undefined;
  // Validated by domain/email-source.ts when it was saved.
  return row.body_source === null ? null : (JSON.parse(row.body_source) as EmailSource);
}

/**
 * Creates the campaign's list and the campaign in one batch; null when the panel already has
 * a list of that name (checked before, but two calls may race).
 */
export async function insertCampaignWithList(
  db: ShardDb,
  campaign: NewCampaign,
  listName: string,
  listDescription: string,
  above?: number,
): Promise<number | null> {
  const key = listNameKey(listName);
  try {
    const [list] = await db.batch<{ id: number }>([
      // `above`: a list number the panel's mirrors still hold (decision 0041), which the new list passes.
      insertListStatement(db, campaign.panelId, listName, listDescription, campaign.createdAt, above),
      db
        .prepare(
          `INSERT INTO campaigns (id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local,
             send_at, body_key, status, request_id, created_at, updated_at)
           SELECT ?, ?, l.id, ?, ?, ?, ?, ?, ?, ?, ?, 'scheduled', ?, ?, ? FROM lists l WHERE l.panel_id = ? AND l.name_key = ?`,
        )
        .bind(
          campaign.id,
          campaign.panelId,
          campaign.name,
          campaign.subject,
          campaign.senderName,
          campaign.senderEmail,
          JSON.stringify(campaign.tags),
          campaign.scheduleLocal,
          campaign.sendAt,
          campaign.bodyKey,
          campaign.requestId,
          campaign.createdAt,
          campaign.createdAt,
          campaign.panelId,
          key,
        ),
    ]);
    return list!.results[0]!.id;
  } catch (error) {
    if (isUniqueViolation(error)) return null;
    throw error;
  }
}

export async function setCampaignImport(db: ShardDb, panelId: string, campaignId: string, jobId: string | null): Promise<void> {
  await db.prepare("UPDATE campaigns SET import_job_id = ? WHERE panel_id = ? AND id = ?").bind(jobId, panelId, campaignId).run();
}

// The lifecycle's writes (services/broadcasts/lifecycle.ts). Each repeats in SQL the states it
// leaves (`from`), so a campaign that moved on since it was read is left alone: null.

/** What an edit may change; `bodyKey` is a fresh key when the body changed (the send cache is keyed by it). */
export interface CampaignEdit {
  name?: string;
  subject?: string;
  senderName?: string;
  senderEmail?: string;
  replyTo?: string | null;
  tags?: string[];
  audience?: CampaignAudience;
  bodyKey?: string;
  /** With a new body: its editor source, or null for HTML written by hand. */
  bodySource?: EmailSource | null;
  /** With a new body from a saved template: the template's id (null: the campaign's own body). */
  emailTemplateId?: string | null;
  /** The topic it is about; null: none. */
  topicId?: string | null;
}

export async function editCampaign(db: ShardDb, panelId: string, id: string, from: readonly CampaignStatus[], edit: CampaignEdit, now: number): Promise<Campaign | null> {
  const row = await db
    .prepare(
      `UPDATE campaigns SET name = COALESCE(?3, name), subject = COALESCE(?4, subject), sender_name = COALESCE(?5, sender_name),
         sender_email = COALESCE(?6, sender_email), reply_to = CASE WHEN ?7 THEN ?8 ELSE reply_to END, tags = COALESCE(?9, tags),
         audience = COALESCE(?10, audience), body_key = COALESCE(?11, body_key), updated_at = ?12,
         body_source = CASE WHEN ?14 THEN ?15 ELSE body_source END, email_template_id = CASE WHEN ?16 THEN ?17 ELSE email_template_id END,
         topic_id = CASE WHEN ?18 THEN ?19 ELSE topic_id END
       WHERE panel_id = ?1 AND id = ?2 AND status IN (SELECT value FROM json_each(?13)) RETURNING *`,
    )
    .bind(
      panelId,
      id,
      edit.name ?? null,
      edit.subject ?? null,
      edit.senderName ?? null,
      edit.senderEmail ?? null,
      edit.replyTo !== undefined ? 1 : 0,
      edit.replyTo ?? null,
      edit.tags ? JSON.stringify(edit.tags) : null,
      edit.audience ? JSON.stringify(edit.audience) : null,
      edit.bodyKey ?? null,
      now,
      JSON.stringify(from),
      edit.bodySource !== undefined ? 1 : 0,
      sourceText(edit.bodySource ?? null),
      edit.emailTemplateId !== undefined ? 1 : 0,
      edit.emailTemplateId ?? null,
      edit.topicId !== undefined ? 1 : 0,
      edit.topicId ?? null,
    )
    .first<CampaignRow>();
  return row ? campaignFromRow(row) : null;
}

/** Moves a campaign from one of `from` to `to`, with its new schedule when given. */
export async function moveCampaign(
  db: ShardDb,
  panelId: string,
  id: string,
  from: readonly CampaignStatus[],
  to: CampaignStatus,
  now: number,
  schedule?: { local: string; sendAt: number },
): Promise<Campaign | null> {
  const row = await db
    .prepare(
      `UPDATE campaigns SET status = ?3, schedule_local = COALESCE(?4, schedule_local), send_at = COALESCE(?5, send_at), updated_at = ?6
       WHERE panel_id = ?1 AND id = ?2 AND status IN (SELECT value FROM json_each(?7)) RETURNING *`,
    )
    .bind(panelId, id, to, schedule?.local ?? null, schedule?.sendAt ?? null, now, JSON.stringify(from))
    .first<CampaignRow>();
  return row ? campaignFromRow(row) : null;
}

/** The reason a recipient left unsent by a cancel is skipped with. */
export const CANCELLED_SKIP = "not sent: the campaign was cancelled";

/**
 * Cancels a campaign that has not finished: nothing more is claimed (claimBatch sends only for
 * a sending campaign), and recipients still queued are settled as skipped, so the report counts
 * what went out and what did not. A batch already claimed is settled skipped by its sender, which
 * reads the state again before it hands the batch over (services/broadcasts/send.ts).
 */
export async function cancelCampaign(db: ShardDb, panelId: string, id: string, from: readonly CampaignStatus[], now: number): Promise<Campaign | null> {
  const [moved] = await db.batch<CampaignRow>([
    db
      .prepare(
        `UPDATE campaigns SET status = 'cancelled', status_reason = 'cancelled by an operator', finished_at = ?3, updated_at = ?3
         WHERE panel_id = ?1 AND id = ?2 AND status IN (SELECT value FROM json_each(?4)) RETURNING *`,
      )
      .bind(panelId, id, now, JSON.stringify(from)),
    db
      .prepare(
        // Rows a split's fence keeps are skipped on the target (skipQueuedRecipients; their copies here go with the old rows).
        `UPDATE campaign_messages SET status = 'skipped', error = ?3
         WHERE campaign_id = ?2 AND panel_id = ?1 AND status = 'queued' AND EXISTS (SELECT 1 FROM campaigns WHERE id = ?2 AND status = 'cancelled')
           AND ${notMovingHere("campaign_messages")}`,
      )
      .bind(panelId, id, CANCELLED_SKIP),
  ]);
  const row = moved!.results[0];
  return row ? campaignFromRow(row) : null;
}

/**
 * Whether any message of the campaign went out (its recipient rows, or its counters once those
 * are pruned), or may be going out: a batch claimed before a cancel is still with its sender,
 * which settles what the provider took as sent after the campaign was read here.
 */
export async function campaignSentAny(db: ShardDb, panelId: string, id: string): Promise<boolean> {
  const row = await db
    .prepare(
      `SELECT EXISTS (SELECT 1 FROM campaign_messages WHERE campaign_id = ?2 AND panel_id = ?1 AND status IN ('sent', 'sending'))
           OR EXISTS (SELECT 1 FROM campaign_stats WHERE campaign_id = ?2 AND panel_id = ?1 AND sent > 0) AS sent`,
    )
    .bind(panelId, id)
    .first<{ sent: number }>();
  return row?.sent === 1;
}

/**
 * Deletes a campaign in one of `from` with its recipients and counters; false when it moved on.
 * With `buckets` (the home's in the panel's map) a split's source's fenced copies of moved
 * recipients are left to its cleaning (campaignMessagesGone).
 */
export async function deleteCampaign(db: ShardDb, panelId: string, id: string, from: readonly CampaignStatus[], spread = false, buckets: BucketRanges | null = null): Promise<boolean> {
  const states = JSON.stringify(from);
  const gone = (table: string) =>
    db.prepare(`DELETE FROM ${table} WHERE campaign_id = ?2 AND panel_id = ?1 AND EXISTS (SELECT 1 FROM campaigns WHERE id = ?2 AND status IN (SELECT value FROM json_each(?3)))`).bind(panelId, id, states);
  const results = await db.batch([
    db
      .prepare(`${campaignMessagesGone("?4")} AND EXISTS (SELECT 1 FROM campaigns WHERE id = ?2 AND status IN (SELECT value FROM json_each(?3)))`)
      .bind(panelId, id, states, buckets && JSON.stringify(buckets)),
    gone("campaign_stats"),
    gone("campaign_ab_tallies"),
    gone("campaign_link_clicks"),
    // `spread`: the panel has partitions on other shards; their rows go with deleteCampaignPart.
    ...(spread ? [gone("campaign_shards")] : []),
    db.prepare("DELETE FROM campaigns WHERE panel_id = ?1 AND id = ?2 AND status IN (SELECT value FROM json_each(?3))").bind(panelId, id, states),
  ]);
  return results[results.length - 1]!.meta.changes > 0;
}

/**
 * The delete of a deleted campaign's recipients on a shard (`?1` the panel, `?2` the campaign),
 * within the buckets `ranges` names (the shard's in the panel's map): between a split's switch and
 * its cleaning the source's fenced copies of moved recipients are cleaning's to delete (decision
 * 0047); deleting them met the fence and refused the campaign's delete (503) until then.
 */
export function campaignMessagesGone(ranges: string): string {
  return `DELETE FROM campaign_messages WHERE campaign_id = ?2 AND panel_id = ?1 AND NOT ${fencedCopyHere("campaign_messages", ranges)}`;
}

/** The campaign's state now (the sender reads it again before handing a claimed batch over). */
export async function campaignStatus(db: ShardDb, panelId: string, id: string): Promise<CampaignStatus | null> {
  const row = await db.prepare("SELECT status FROM campaigns WHERE panel_id = ? AND id = ?").bind(panelId, id).first<{ status: CampaignStatus }>();
  return row?.status ?? null;
}

export async function getCampaign(db: ShardDb, panelId: string, id: string): Promise<Campaign | null> {
  const row = await db.prepare("SELECT * FROM campaigns WHERE panel_id = ? AND id = ?").bind(panelId, id).first<CampaignRow>();
  return row ? campaignFromRow(row) : null;
}

/** The panel's campaigns, newest first; archived ones only when asked for. */
export async function listCampaigns(db: ShardDb, panelId: string, limit: number, archived = false): Promise<Campaign[]> {
  const { results } = await db
    .prepare("SELECT * FROM campaigns WHERE panel_id = ? AND (? OR status <> 'archived') ORDER BY created_at DESC, id DESC LIMIT ?")
    .bind(panelId, archived ? 1 : 0, limit)
    .all<CampaignRow>();
  return results.map(campaignFromRow);
}

/** Scheduled campaigns whose time has come, oldest first (a system scan across panels). */
export async function dueCampaigns(db: ShardDb, now: number, limit: number): Promise<Campaign[]> {
  const { results } = await db
    .prepare("SELECT * FROM campaigns WHERE status = 'scheduled' AND send_at <= ? ORDER BY send_at LIMIT ?")
    .bind(now, limit)
    .all<CampaignRow>();
  return results.map(campaignFromRow);
}

export async function failCampaign(db: ShardDb, panelId: string, campaignId: string, reason: string, now: number): Promise<void> {
  await db
    .prepare(
      `UPDATE campaigns SET status = 'failed', status_reason = ?, finished_at = ?, updated_at = ?
       WHERE panel_id = ? AND id = ? AND status IN ('scheduled', 'sending')`,
    )
    .bind(reason, now, now, panelId, campaignId)
    .run();
}
