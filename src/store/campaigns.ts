import type { ShardDb } from "./shards";
import { campaignHoldMark, notMovingHere } from "./panel-move/triggers";
import type { CampaignAudience, CampaignCounters, CampaignStatus } from "../domain/broadcast";
import type { EmailSource } from "../domain/email-source";
import { abOrderSql, abSeed, testRecipients, type AbTest, type VariantTally } from "../domain/ab-test";
import { ERASED_RANGE, erasedIdentifier } from "../domain/erasure";
import { listNameKey } from "../domain/lists";
import type { BucketRanges } from "../domain/partitions";
import type { SuppressionReason } from "../domain/preferences";
import { countLinkClickStatement } from "./campaign-report";
import { insertListStatement } from "./lists";
import type { CompiledSegment } from "./segment-sql";
import { inBucketRanges, isUniqueViolation } from "./sql";

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

interface CampaignRow {
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

function fromRow(row: CampaignRow): Campaign {
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
  return row ? fromRow(row) : null;
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
  return row ? fromRow(row) : null;
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
  return row ? fromRow(row) : null;
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

/** Deletes a campaign in one of `from` with its recipients and counters; false when it moved on. */
export async function deleteCampaign(db: ShardDb, panelId: string, id: string, from: readonly CampaignStatus[], spread = false): Promise<boolean> {
  const states = JSON.stringify(from);
  const gone = (table: string) =>
    db.prepare(`DELETE FROM ${table} WHERE campaign_id = ?2 AND panel_id = ?1 AND EXISTS (SELECT 1 FROM campaigns WHERE id = ?2 AND status IN (SELECT value FROM json_each(?3)))`).bind(panelId, id, states);
  const results = await db.batch([
    gone("campaign_messages"),
    gone("campaign_stats"),
    gone("campaign_ab_tallies"),
    gone("campaign_link_clicks"),
    // `spread`: the panel has partitions on other shards; their rows go with deleteCampaignPart.
    ...(spread ? [gone("campaign_shards")] : []),
    db.prepare("DELETE FROM campaigns WHERE panel_id = ?1 AND id = ?2 AND status IN (SELECT value FROM json_each(?3))").bind(panelId, id, states),
  ]);
  return results[results.length - 1]!.meta.changes > 0;
}

/** The campaign's state now (the sender reads it again before handing a claimed batch over). */
export async function campaignStatus(db: ShardDb, panelId: string, id: string): Promise<CampaignStatus | null> {
  const row = await db.prepare("SELECT status FROM campaigns WHERE panel_id = ? AND id = ?").bind(panelId, id).first<{ status: CampaignStatus }>();
  return row?.status ?? null;
}

export async function getCampaign(db: ShardDb, panelId: string, id: string): Promise<Campaign | null> {
  const row = await db.prepare("SELECT * FROM campaigns WHERE panel_id = ? AND id = ?").bind(panelId, id).first<CampaignRow>();
  return row ? fromRow(row) : null;
}

/** The panel's campaigns, newest first; archived ones only when asked for. */
export async function listCampaigns(db: ShardDb, panelId: string, limit: number, archived = false): Promise<Campaign[]> {
  const { results } = await db
    .prepare("SELECT * FROM campaigns WHERE panel_id = ? AND (? OR status <> 'archived') ORDER BY created_at DESC, id DESC LIMIT ?")
    .bind(panelId, archived ? 1 : 0, limit)
    .all<CampaignRow>();
  return results.map(fromRow);
}

/** Scheduled campaigns whose time has come, oldest first (a system scan across panels). */
export async function dueCampaigns(db: ShardDb, now: number, limit: number): Promise<Campaign[]> {
  const { results } = await db
    .prepare("SELECT * FROM campaigns WHERE status = 'scheduled' AND send_at <= ? ORDER BY send_at LIMIT ?")
    .bind(now, limit)
    .all<CampaignRow>();
  return results.map(fromRow);
}

/** Not while a partition split of the panel holds campaign starts (campaignHoldMark, decision 0047): the campaign stays scheduled and the next run starts it. */
const NOT_HELD = "NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = ?4)";

/**
 * Starts publishing a scheduled campaign: it moves to `sending` with nothing inserted yet, and
 * its recipients are then inserted by `publishStep`, a bounded number of contacts (or list
 * members) at a time, up to the shard's largest contact id now (contacts made later are not
 * recipients). Answers the campaign as it started; only the first caller
 * wins (a second cron run gets null), and none while a split of the panel runs (NOT_HELD). With
 * `dueBy` (the cron's time), only while it is due by then: a reschedule after the cron read it
 * as due keeps it scheduled (without, tools and tests publish a campaign whatever its date).
 */
export async function startPublish(db: ShardDb, campaign: { id: string; panelId: string }, now: number, elsewhere: readonly number[] = [], dueBy: number | null = null): Promise<Campaign | null> {
  const start = db
    .prepare(
      `UPDATE campaigns SET status = 'sending', published_at = ?3, updated_at = ?3, recipients = 0, publish_batch = 0, ab_held = 0, ab_ranked = NULL,
         publish_until = (SELECT MAX(id) FROM contacts),
         publish_after = CASE WHEN (SELECT MAX(id) FROM contacts) IS NULL THEN NULL ELSE 0 END,
         published_end_at = CASE WHEN (SELECT MAX(id) FROM contacts) IS NULL THEN ?3 END
       WHERE id = ?1 AND panel_id = ?2 AND status = 'scheduled' AND (?5 IS NULL OR send_at <= ?5) AND ${NOT_HELD} RETURNING *`,
    )
    .bind(campaign.id, campaign.panelId, now, campaignHoldMark(campaign.panelId), dueBy);
  if (elsewhere.length === 0) {
    const row = await start.first<CampaignRow>();
    return row ? fromRow(row) : null;
  }
  // A panel with partitions on other shards (decision 0038 step 4): each of those shards is
  // recorded in the same transaction, so the campaign is not sent before each says it is done.
  const [shards, started] = await db.batch<CampaignRow>([
    db
      .prepare(
        `INSERT OR IGNORE INTO campaign_shards (campaign_id, shard, panel_id)
         SELECT ?1, s.value, ?2 FROM json_each(?3) s WHERE EXISTS (SELECT 1 FROM campaigns WHERE id = ?1 AND panel_id = ?2 AND status = 'scheduled' AND (?5 IS NULL OR send_at <= ?5)) AND ${NOT_HELD}`,
      )
      .bind(campaign.id, campaign.panelId, JSON.stringify(elsewhere), campaignHoldMark(campaign.panelId), dueBy),
    start,
  ]);
  void shards;
  const row = started!.results[0];
  return row ? fromRow(row) : null;
}

/**
 * Where a publish step runs (decision 0038 step 4): `buckets`, the bucket ranges of the panel's
 * partitions on this shard (a shard may still hold rows of buckets a split moved away: they
 * are not this shard's recipients); `part`, a shard other than the campaign's home, whose
 * progress is its campaign_parts row. Absent for a panel without partitions: the home's
 * statements, as they were.
 */
export interface PublishScope {
  buckets: BucketRanges;
  part: boolean;
}

/** What one publish step did: its recipients fill send batches [firstBatch, nextBatch). */
export interface PublishStep {
  firstBatch: number;
  nextBatch: number;
  /** Every recipient is in: no step is left. */
  done: boolean;
  /** The campaign's recipients so far. */
  recipients: number;
}

/** Campaign states in which recipients are still inserted (a paused campaign sends nothing, but its audience is fixed all the same). */
const PUBLISHING = "('sending', 'paused')";

/**
 * Inserts the recipients among the next `chunkIds` contacts (past the last step's end),
 * numbered into send batches after the last step's, and moves the campaign's progress and
 * recipient total on, in one transaction: a step repeated after a crash or run twice at once
 * inserts nothing twice (both statements hold only while the progress is where the step read
 * it). A campaign with its own list goes through the list's members by contact id. A campaign
 * with an audience goes through the panel's own contacts by contacts_by_panel (panel_id, id),
 * in id order, each contact's bucket checked against the scope's ranges (a shard may still hold
 * rows of buckets a split moved away): each statement reads at most `chunkIds` of the panel's
 * rows (and the contacts made since the publish began, which it leaves out), never another
 * panel's, so a step's cost and the number of steps follow the panel's contacts on this shard,
 * not the shard's. Null when this call did nothing: the campaign is not publishing (cancelled,
 * failed) or another call took the step. `audience` is the compiled audience in `probe` shape
 * (correlated per contact, so a step reads only its own contacts' rows).
 */
export async function publishStep(
  db: ShardDb,
  campaign: { id: string; panelId: string; listId: number | null; abTest: AbTest | null },
  batchSize: number,
  chunkIds: number,
  now: number,
  audience?: CompiledSegment,
  scope?: PublishScope,
): Promise<PublishStep | null> {
  const part = scope?.part === true;
  // The progress: the campaign's own columns on its home (while it publishes), its campaign_parts row elsewhere.
  const progress = part
    ? { table: "campaign_parts", row: "campaign_id = ?1 AND panel_id = ?2" }
    : { table: "campaigns", row: `id = ?1 AND panel_id = ?2 AND status IN ${PUBLISHING}` };
  // The next contact (of the list, or of the panel on this shard) past the cursor.
  const next = audience
    ? "(SELECT id FROM contacts INDEXED BY contacts_by_panel WHERE panel_id = ?2 AND id > " + progress.table + ".publish_after ORDER BY id LIMIT 1)"
    : `(SELECT contact_id FROM list_members WHERE list_id = ${part ? "?3" : "campaigns.list_id"} AND contact_id > ${progress.table}.publish_after AND panel_id = ?2 ORDER BY contact_id LIMIT 1)`;
  const stateQuery = `SELECT publish_after AS "after", publish_until AS "until", publish_batch AS batch, recipients,
         ab_held AS held, ab_ranked AS ranked, ${next} AS "next"
       FROM ${progress.table} WHERE ${progress.row}`;
  const state = await (part && !audience ? db.prepare(stateQuery).bind(campaign.id, campaign.panelId, campaign.listId) : db.prepare(stateQuery).bind(campaign.id, campaign.panelId))
    .first<PublishState>();
  if (!state) return null;
  const { after } = state;
  if (after === null) return { firstBatch: state.batch, nextBatch: state.batch, done: true, recipients: state.recipients };
  // Every recipient is in: an A/B test's are ranked into its groups, a step's worth at a time.
  if (campaign.abTest && state.ranked !== null) return abRankStep(db, campaign as { id: string; panelId: string; abTest: AbTest }, progress, { ...state, ranked: state.ranked }, chunkIds, now);
  // Elsewhere than the home the campaign's state is read from the home before each step (services/broadcasts/publish.ts).
  const stillHere = part
    ? "EXISTS (SELECT 1 FROM campaign_parts WHERE campaign_id = ?3 AND publish_after = ?6)"
    : `EXISTS (SELECT 1 FROM campaigns WHERE id = ?3 AND status IN ${PUBLISHING} AND publish_after = ?6)`;
  // An A/B test's recipients are held ('pending') with their place in its order until the ranking steps after the last insert place them.
  const held = campaign.abTest ? "'pending'" : "NULL";
  const order = (contact: string) => (campaign.abTest ? abOrderSql(contact, String(abSeed(campaign.id))) : "NULL");
  const to = audience ? await audienceStepEnd(db, campaign.panelId, { ...state, after }, chunkIds) : listStepEnd({ ...state, after }, chunkIds);
  const done = to >= state.until;
  // ?1 panel, ?2 the audience's values or the list, ?3 campaign, ?4 first batch, ?5 batch size, ?6 the cursor, ?7 the step's last id, ?8 the scope's bucket ranges.
  const values: unknown[] = [campaign.panelId, audience ? audience.values : campaign.listId, campaign.id, state.batch, batchSize, after, to];
  if (scope) values.push(JSON.stringify(scope.buckets));
  // Each contact row is read in table order and each recipient lands in campaign_messages' keys in order.
  const insert =
    to <= after
      ? null
      : audience
        ? db
            .prepare(
              `INSERT OR IGNORE INTO campaign_messages (campaign_id, contact_id, panel_id, batch, status, bucket, ab_group, ab_order)
               SELECT ?3, c.id, ?1, ?4 + (ROW_NUMBER() OVER (ORDER BY c.id) - 1) / CAST(?5 AS INTEGER), 'queued', c.bucket, ${held}, ${order("c.id")}
               FROM contacts c INDEXED BY contacts_by_panel
               WHERE c.panel_id = ?1 AND c.id > ?6 AND c.id <= ?7${scope ? ` AND ${inBucketRanges("c.bucket", "?8")}` : ""} AND ${stillHere} AND ${audience.where}
               ORDER BY c.id`,
            )
            .bind(...values)
        : db
            .prepare(
              `INSERT OR IGNORE INTO campaign_messages (campaign_id, contact_id, panel_id, batch, status, bucket, ab_group, ab_order)
               SELECT ?3, m.contact_id, ?1, ?4 + (ROW_NUMBER() OVER (ORDER BY m.contact_id) - 1) / CAST(?5 AS INTEGER), 'queued', m.bucket, ${held}, ${order("m.contact_id")}
               FROM list_members m
               WHERE m.list_id = ?2 AND m.contact_id > ?6 AND m.contact_id <= ?7 AND m.panel_id = ?1 AND ${stillHere}${scope ? ` AND ${inBucketRanges("m.bucket", "?8")}` : ""}`,
            )
            .bind(...values);
  // This step's rows (the batches from its first): the recipients it adds, and with an A/B test those it holds.
  const added = "(SELECT COUNT(*) FROM campaign_messages WHERE campaign_id = ?1 AND batch >= ?3)";
  // With an A/B test the last insert does not end the publication: the ranking steps begin (abRankStep).
  const ab = campaign.abTest !== null;
  const move = db
    .prepare(
      `UPDATE ${progress.table} SET
         recipients = recipients + ${added},
         ${ab ? `ab_held = ab_held + ${added}, ab_ranked = CASE WHEN ?7 THEN 0 END,` : ""}
         publish_batch = COALESCE((SELECT MAX(batch) + 1 FROM campaign_messages WHERE campaign_id = ?1 AND batch >= ?3), publish_batch),
         publish_after = CASE WHEN ?7 AND ${ab ? "0" : "1"} THEN NULL ELSE ?5 END,
         published_end_at = CASE WHEN ?7 AND ${ab ? "0" : "1"} THEN ?6 END,
         updated_at = MAX(updated_at, ?6)
       WHERE ${progress.row} AND publish_after = ?4${ab ? " AND ab_ranked IS NULL" : ""}
       RETURNING recipients, publish_batch, publish_after, ab_held, ab_ranked`,
    )
    .bind(campaign.id, campaign.panelId, state.batch, after, to, now, done ? 1 : 0);
  const [moved] = (
    await db.batch<{ recipients: number; publish_batch: number; publish_after: number | null; ab_held: number; ab_ranked: number | null }>([...(insert ? [insert] : []), move])
  ).slice(insert ? 1 : 0);
  const row = moved!.results[0];
  if (!row) return null;
  // The last insert of an A/B test: its first ranking step follows at once (a test of at most a
  // step's worth of recipients is so ranked in the step that inserted the last, as before).
  if (campaign.abTest && row.ab_ranked !== null) {
    const inserted = { ...state, recipients: row.recipients, held: row.ab_held, ranked: row.ab_ranked };
    return abRankStep(db, campaign as { id: string; panelId: string; abTest: AbTest }, progress, inserted, chunkIds, now);
  }
  return { firstBatch: state.batch, nextBatch: row.publish_batch, done: row.publish_after === null, recipients: row.recipients };
}

/**
 * A campaign's publish progress (its row on the home, its campaign_parts row elsewhere): the
 * cursor (the last id gone through), up to `until`; `next`, the first contact past the cursor;
 * with an A/B test, the recipients held for it and how many of them are ranked (null before the
 * ranking steps).
 */
interface PublishState {
  after: number | null;
  until: number;
  batch: number;
  recipients: number;
  next: number | null;
  held: number;
  ranked: number | null;
}

/** The last id of a step that starts at the cursor's next contact and goes through `chunkIds` ids (a list's members are not read for it). */
function listStepEnd(state: PublishState & { after: number }, chunkIds: number): number {
  return state.next === null || state.next > state.until ? state.until : Math.min(state.until, state.next + chunkIds - 1);
}

/**
 * One ranking step of an A/B test on this shard, after its last insert (decision 0055): the next
 * `chunk` held recipients in the test's order (the campaign's hash of the contact, ab_order,
 * read in campaign_messages_ab_held from its start: those ranked left it), numbered on from the
 * ones ranked before. The first test share of this shard's held recipients (at least one per
 * variant: testRecipients) get the variants in turn, so each variant's count is within one of
 * the others'; the rest wait for the winner. The groups are those one statement over all of
 * them made before (the same order, the same count), each statement now reading and writing at
 * most `chunk` recipients. The progress moves on in the same transaction, both guarded by where
 * it stood (a step repeated or run twice ranks nothing twice); the last step ends the
 * publication. Per shard (decision 0038 step 4): each shard ranks its own recipients so, never
 * reading another shard's rows; each so tests its share of its own.
 */
async function abRankStep(
  db: ShardDb,
  campaign: { id: string; panelId: string; abTest: AbTest },
  progress: { table: string; row: string },
  state: PublishState & { ranked: number },
  chunk: number,
  now: number,
): Promise<PublishStep | null> {
  if (!Number.isInteger(chunk) || chunk < 1) throw new Error("a ranking step takes a whole number of recipients");
  const test = campaign.abTest;
  const tested = testRecipients(state.held, test.test_share, test.variants.length);
  const next = Math.min(state.ranked + chunk, state.held);
  const done = next >= state.held;
  const [, moved] = await db.batch<{ recipients: number; publish_batch: number; publish_after: number | null }>([
    db
      .prepare(
        `UPDATE campaign_messages SET
           ab_group = CASE WHEN r.rank < ?4 THEN 'test' ELSE 'rest' END,
           variant = CASE WHEN r.rank < ?4 THEN r.rank % ?5 END
         FROM (
           SELECT contact_id, ?3 + ROW_NUMBER() OVER (ORDER BY ab_order, contact_id) - 1 AS rank FROM (
             SELECT contact_id, ab_order FROM campaign_messages INDEXED BY campaign_messages_ab_held
             WHERE campaign_id = ?1 AND ab_group = 'pending' ORDER BY ab_order, contact_id LIMIT ${chunk})
         ) AS r
         -- The step's rows found by key from r: with the limit a literal and +ab_group, the planner
         -- does not walk every held recipient of the campaign to match them against r.
         WHERE campaign_messages.campaign_id = ?1 AND campaign_messages.contact_id = r.contact_id AND +campaign_messages.ab_group = 'pending'
           AND EXISTS (SELECT 1 FROM ${progress.table} WHERE ${progress.row} AND ab_ranked = ?3)`,
      )
      .bind(campaign.id, campaign.panelId, state.ranked, tested, test.variants.length),
    db
      .prepare(
        `UPDATE ${progress.table} SET ab_ranked = ?4,
           publish_after = CASE WHEN ?5 THEN NULL ELSE publish_after END,
           published_end_at = CASE WHEN ?5 THEN ?6 END,
           updated_at = MAX(updated_at, ?6)
         WHERE ${progress.row} AND ab_ranked = ?3
         RETURNING recipients, publish_batch, publish_after`,
      )
      .bind(campaign.id, campaign.panelId, state.ranked, next, done ? 1 : 0, now),
  ]);
  const row = moved!.results[0];
  if (!row) return null;
  return { firstBatch: state.batch, nextBatch: row.publish_batch, done: row.publish_after === null, recipients: row.recipients };
}

/**
 * The last id of the next audience step over the panel's contacts on this shard: the
 * `chunkIds`-th of them past the cursor with an id up to the publish's last, or `until` when
 * fewer are left. Reads only contacts_by_panel's entries of this panel.
 */
async function audienceStepEnd(db: ShardDb, panelId: string, state: PublishState & { after: number }, chunkIds: number): Promise<number> {
  // No contact of the panel past the cursor: the publish here is done, without a read.
  if (state.next === null || state.next > state.until) return state.until;
  const end = await db
    .prepare(`SELECT id FROM contacts INDEXED BY contacts_by_panel WHERE panel_id = ?1 AND id > ?2 AND id <= ?3 ORDER BY id LIMIT 1 OFFSET ?4`)
    .bind(panelId, state.after, state.until, chunkIds - 1)
    .first<number>("id");
  return end ?? state.until;
}

/**
 * Starts the campaign's publishing on a shard other than its home (decision 0038 step 4): its
 * progress row, up to the shard's largest contact id now. Once: a row already there (a repeated
 * nudge, a step after a crash) is left as it is.
 */
export async function startPublishPart(db: ShardDb, campaign: { id: string; panelId: string }, now: number): Promise<void> {
  await db
    .prepare(
      `INSERT OR IGNORE INTO campaign_parts (campaign_id, panel_id, publish_after, publish_until, publish_batch, recipients, started_at, published_end_at, updated_at)
       SELECT ?1, ?2, CASE WHEN MAX(id) IS NULL THEN NULL ELSE 0 END, MAX(id), 0, 0, ?3, CASE WHEN MAX(id) IS NULL THEN ?3 END, ?3 FROM contacts`,
    )
    .bind(campaign.id, campaign.panelId, now)
    .run();
}

/** Where the campaign stands on a shard other than its home; null before its publishing started there. */
export interface CampaignPart {
  /** Recipients are still being inserted there. */
  publishing: boolean;
  recipients: number;
  /** Nothing of it is queued or in flight there. */
  idle: boolean;
  /** When its last publish step there ran (or its publishing started): a live step chain moves it every few seconds. */
  updatedAt: number;
}

export async function campaignPart(db: ShardDb, campaignId: string): Promise<CampaignPart | null> {
  const row = await db
    .prepare(
      `SELECT publish_after IS NOT NULL AS publishing, recipients, updated_at,
         NOT EXISTS (SELECT 1 FROM campaign_messages WHERE campaign_id = ?1 AND status IN ('queued', 'sending')) AS idle
       FROM campaign_parts WHERE campaign_id = ?1`,
    )
    .bind(campaignId)
    .first<{ publishing: number; recipients: number; idle: number; updated_at: number }>();
  return row ? { publishing: row.publishing === 1, recipients: row.recipients, idle: row.idle === 1, updatedAt: row.updated_at } : null;
}

/**
 * Records on the home what a shard of the campaign reported (campaignPart): once its
 * publishing ended, its recipients are added to the campaign's, once (the row's published_at
 * guards both, in one transaction); once it is also idle, it is finished.
 */
export async function recordShardProgress(db: ShardDb, campaignId: string, shard: number, part: CampaignPart, now: number): Promise<void> {
  if (part.publishing) return;
  const statements = [
    db
      .prepare(
        `UPDATE campaigns SET recipients = recipients + ?3, updated_at = MAX(updated_at, ?4)
         WHERE id = ?1 AND EXISTS (SELECT 1 FROM campaign_shards WHERE campaign_id = ?1 AND shard = ?2 AND published_at IS NULL)`,
      )
      .bind(campaignId, shard, part.recipients, now),
    db.prepare("UPDATE campaign_shards SET recipients = ?3, published_at = ?4 WHERE campaign_id = ?1 AND shard = ?2 AND published_at IS NULL").bind(campaignId, shard, part.recipients, now),
  ];
  if (part.idle) statements.push(db.prepare("UPDATE campaign_shards SET finished_at = ?3 WHERE campaign_id = ?1 AND shard = ?2 AND finished_at IS NULL").bind(campaignId, shard, now));
  await db.batch(statements);
}

/** The shards other than its home on which the campaign is not finished (recordShardProgress). */
export async function unfinishedShards(db: ShardDb, campaignId: string): Promise<number[]> {
  const { results } = await db.prepare("SELECT shard FROM campaign_shards WHERE campaign_id = ? AND finished_at IS NULL ORDER BY shard").bind(campaignId).all<{ shard: number }>();
  return results.map((r) => r.shard);
}

/**
 * A campaign of the panel under way (sending, paused) whose recipients are not all inserted yet:
 * on its home (its progress) or on another shard (campaign_shards not yet published). A partition
 * split waits for it (decision 0047): a part still publishing walks its map's buckets, and the
 * moving buckets' contacts not yet inserted would be nobody's. Its id; null when none.
 */
export async function campaignStillPublishing(db: ShardDb, panelId: string): Promise<string | null> {
  return await db
    .prepare(
      `SELECT id FROM campaigns c WHERE panel_id = ?1 AND status IN ${PUBLISHING}
         AND (publish_after IS NOT NULL OR EXISTS (SELECT 1 FROM campaign_shards s WHERE s.campaign_id = c.id AND s.published_at IS NULL)) LIMIT 1`,
    )
    .bind(panelId)
    .first<string>("id");
}

/** A campaign under way whose every part has published, as a split's target takes its part (decision 0047). */
export interface PublishedCampaign {
  id: string;
  panelId: string;
  status: "sending" | "paused";
  /** The test's winner as the home picked it (the rest's release, decision 0056); null before, or without a test. */
  abWinner: number | null;
  /** When the source shard's part ended publishing: the target's part ended then too (an A/B test's wait counts from it). */
  publishedAt: number;
}

/**
 * On the home: the panel's campaigns under way, all published (campaignStillPublishing finds
 * none by the time a split switches), with when the shard `source` (`sourceIsHome`: the home
 * itself) ended publishing its part.
 */
export async function publishedCampaignsUnderWay(db: ShardDb, panelId: string, source: number, sourceIsHome: boolean): Promise<PublishedCampaign[]> {
  const { results } = await db
    .prepare(
      `SELECT id, panel_id, status, ab_winner,
         CASE WHEN ?3 THEN COALESCE(published_end_at, published_at) ELSE (SELECT s.published_at FROM campaign_shards s WHERE s.campaign_id = c.id AND s.shard = ?2) END AS published
       FROM campaigns c WHERE panel_id = ?1 AND status IN ${PUBLISHING} AND publish_after IS NULL
         AND NOT EXISTS (SELECT 1 FROM campaign_shards s WHERE s.campaign_id = c.id AND s.published_at IS NULL)`,
    )
    .bind(panelId, source, sourceIsHome ? 1 : 0)
    .all<{ id: string; panel_id: string; status: "sending" | "paused"; ab_winner: number | null; published: number | null }>();
  return results.map((r) => ({ id: r.id, panelId: r.panel_id, status: r.status, abWinner: r.ab_winner, publishedAt: r.published ?? 0 }));
}

/**
 * What a split's target takes of a campaign's part on the source shard (`part`: a shard other
 * than the home): whether its A/B figures are counted (ab_tallied, decision 0057) and the keys of
 * its counters rows (each group and variant the source counted).
 */
export async function sourceAbCounters(db: ShardDb, campaignId: string, part: boolean): Promise<{ tallied: boolean; keys: Array<{ group: string; variant: number }> }> {
  const [tallied, keys] = await db.batch<Record<string, unknown>>([
    db.prepare(part ? "SELECT ab_tallied FROM campaign_parts WHERE campaign_id = ?" : "SELECT ab_tallied FROM campaigns WHERE id = ?").bind(campaignId),
    db.prepare(`SELECT ab_group AS "group", variant FROM campaign_ab_tallies WHERE campaign_id = ?`).bind(campaignId),
  ]);
  return { tallied: tallied!.results[0]?.ab_tallied !== 0, keys: keys!.results as Array<{ group: string; variant: number }> };
}

/**
 * On a split's target (decision 0047): the campaign's part, published (its recipients came with
 * their contacts, none is inserted there), with the winner the home picked (its held rest
 * released; a part there already takes it if it had none, as releaseAbRest), and zeroed counters
 * rows under the source's keys, so the moved recipients' later sends, opens and clicks are
 * counted there (the triggers of decision 0057 update a row found by key: without one they
 * counted nothing). Their recipients stay counted on the source, where they were grouped.
 */
export async function carryCampaignPart(
  db: ShardDb,
  campaign: PublishedCampaign,
  counters: { tallied: boolean; keys: ReadonlyArray<{ group: string; variant: number }> },
  now: number,
): Promise<void> {
  await db.batch([
    db
      .prepare(
        `INSERT INTO campaign_parts (campaign_id, panel_id, publish_after, publish_until, publish_batch, recipients, started_at, published_end_at, updated_at, ab_winner, ab_tallied)
         SELECT ?1, ?2, NULL, NULL, COALESCE((SELECT MAX(batch) + 1 FROM campaign_messages WHERE campaign_id = ?1), 0), 0, ?3, ?3, ?4, ?5, ?6 WHERE true
         ON CONFLICT (campaign_id) DO UPDATE SET ab_winner = COALESCE(ab_winner, excluded.ab_winner)`,
      )
      .bind(campaign.id, campaign.panelId, campaign.publishedAt, now, campaign.abWinner, counters.tallied ? 1 : 0),
    ...(counters.tallied ? counters.keys : []).map((key) =>
      db.prepare("INSERT OR IGNORE INTO campaign_ab_tallies (campaign_id, ab_group, variant, panel_id) VALUES (?, ?, ?, ?)").bind(campaign.id, key.group, key.variant, campaign.panelId),
    ),
  ]);
}

/**
 * On the home: the split's target is one of the campaign's shards (decision 0047), published
 * when the source's part was (its recipients, 0 here, stay counted with the source's), not
 * finished, so the campaign is not sent before the target is. Only while the campaign is under way.
 */
export async function recordCarriedShard(db: ShardDb, campaign: PublishedCampaign, shard: number): Promise<void> {
  await db
    .prepare(
      `INSERT OR IGNORE INTO campaign_shards (campaign_id, shard, panel_id, recipients, published_at)
       SELECT ?1, ?2, ?3, 0, ?4 WHERE EXISTS (SELECT 1 FROM campaigns WHERE id = ?1 AND panel_id = ?3 AND status IN ${PUBLISHING})`,
    )
    .bind(campaign.id, shard, campaign.panelId, campaign.publishedAt)
    .run();
}

/** A campaign sending from another shard moved on: what the stalled-campaign re-drive goes by (finishClaims does it on the home). */
export async function touchSendingCampaign(db: ShardDb, campaignId: string, now: number): Promise<void> {
  await db.prepare("UPDATE campaigns SET updated_at = MAX(updated_at, ?) WHERE id = ? AND status = 'sending'").bind(now, campaignId).run();
}

function skipQueuedStatement(db: ShardDb, panelId: string, campaignId: string): D1PreparedStatement {
  return db
    .prepare(`UPDATE campaign_messages SET status = 'skipped', error = ?3 WHERE campaign_id = ?2 AND panel_id = ?1 AND status = 'queued' AND ${notMovingHere("campaign_messages")}`)
    .bind(panelId, campaignId, CANCELLED_SKIP);
}

/** A cancel seen late on a shard other than the campaign's home (a split's target): its recipients still queued there are settled as skipped. */
export async function skipQueuedRecipients(db: ShardDb, panelId: string, campaignId: string): Promise<void> {
  await skipQueuedStatement(db, panelId, campaignId).run();
}

/**
 * A cancel on a shard other than the campaign's home: its publishing there ends (its part's
 * cursor cleared, the part written ended when its first step has not come yet), then its
 * recipients still queued are settled as skipped, in one transaction. A publish step there read
 * the campaign on the home before the cancel; its insert, guarded by the cursor, now adds none
 * (it added them queued for good: nothing sends a cancelled campaign's).
 */
export async function cancelCampaignPart(db: ShardDb, panelId: string, campaignId: string, now: number): Promise<void> {
  await db.batch([
    db
      .prepare(
        `INSERT INTO campaign_parts (campaign_id, panel_id, publish_after, publish_until, publish_batch, recipients, started_at, published_end_at, updated_at)
         VALUES (?1, ?2, NULL, NULL, 0, 0, ?3, ?3, ?3)
         ON CONFLICT (campaign_id) DO UPDATE SET publish_after = NULL, published_end_at = COALESCE(published_end_at, ?3), updated_at = MAX(updated_at, ?3)`,
      )
      .bind(campaignId, panelId, now),
    skipQueuedStatement(db, panelId, campaignId),
  ]);
}

/** The panel's campaigns cancelled since `since` (a split's start): their recipients a split's target took are skipped there too. */
export async function campaignsCancelledSince(db: ShardDb, panelId: string, since: number): Promise<string[]> {
  const { results } = await db.prepare("SELECT id FROM campaigns WHERE panel_id = ? AND status = 'cancelled' AND finished_at >= ?").bind(panelId, since).all<{ id: string }>();
  return results.map((r) => r.id);
}

/** A campaign deleted on its home: its rows on another shard (recipients, counters, progress). */
export async function deleteCampaignPart(db: ShardDb, panelId: string, campaignId: string): Promise<void> {
  await db.batch(
    ["campaign_messages", "campaign_stats", "campaign_ab_tallies", "campaign_link_clicks", "campaign_parts"].map((table) =>
      db.prepare(`DELETE FROM ${table} WHERE campaign_id = ?2 AND panel_id = ?1`).bind(panelId, campaignId),
    ),
  );
}

/**
 * Publishes a scheduled campaign whole: `startPublish`, then every step in turn. Returns the
 * number of recipients, or null when another caller published it. For tests and tools: the
 * cron publishes step by step through the queue (services/broadcasts/publish.ts).
 */
export async function publishCampaign(db: ShardDb, campaign: Campaign, batchSize: number, now: number, audience?: CompiledSegment, chunkIds = 50_000): Promise<number | null> {
  const started = await startPublish(db, campaign, now);
  if (!started) return null;
  for (;;) {
    const step = await publishStep(db, started, batchSize, chunkIds, now, audience);
    if (!step) return null;
    if (step.done) return step.recipients;
  }
}

/** Sets or (null) removes the campaign's A/B test while it is in one of `from`. */
export async function setCampaignAbTest(db: ShardDb, panelId: string, id: string, from: readonly CampaignStatus[], test: AbTest | null, now: number): Promise<Campaign | null> {
  const row = await db
    .prepare(
      `UPDATE campaigns SET ab_test = ?3, ab_winner = NULL, updated_at = ?4
       WHERE panel_id = ?1 AND id = ?2 AND status IN (SELECT value FROM json_each(?5)) RETURNING *`,
    )
    .bind(panelId, id, test === null ? null : JSON.stringify(test), now, JSON.stringify(from))
    .first<CampaignRow>();
  return row ? fromRow(row) : null;
}

/**
 * When a campaign's A/B test's wait begins: the end of its publication (its last publish step);
 * for a campaign spread over shards (decision 0038 step 4), the last of its home's and every
 * other shard's (campaign_shards), NULL while any of them still publishes. A campaign without
 * campaign_shards rows: its own end, as before.
 */
const AB_WAIT_FROM = `CASE WHEN publish_after IS NULL AND NOT EXISTS (SELECT 1 FROM campaign_shards s WHERE s.campaign_id = campaigns.id AND s.published_at IS NULL)
    THEN MAX(COALESCE(published_end_at, published_at), COALESCE((SELECT MAX(s.published_at) FROM campaign_shards s WHERE s.campaign_id = campaigns.id), 0)) END`;

/** A campaign whose A/B test is due, with the shards other than its home it was published on (none for a panel without partitions elsewhere). */
export interface DueAbTest {
  campaign: Campaign;
  shards: number[];
}

/** Sending campaigns whose A/B test's wait, from the end of their publication (on every shard), is over and whose winner is not yet picked (a paused one waits for its resume). */
export async function abTestsDue(db: ShardDb, now: number, limit: number): Promise<DueAbTest[]> {
  const { results } = await db
    .prepare(
      `SELECT *, (SELECT json_group_array(shard) FROM campaign_shards WHERE campaign_id = campaigns.id) AS ab_shards
       FROM campaigns WHERE status = 'sending' AND ab_test IS NOT NULL AND ab_winner IS NULL
         AND ${AB_WAIT_FROM} + json_extract(ab_test, '$.wait_minutes') * 60000 <= ? ORDER BY published_at LIMIT ?`,
    )
    .bind(now, limit)
    .all<CampaignRow & { ab_shards: string }>();
  return results.map((row) => ({ campaign: fromRow(row), shards: JSON.parse(row.ab_shards) as number[] }));
}

/** When the campaign's A/B test's wait began (AB_WAIT_FROM); null while it publishes on some shard. */
export async function abWaitFrom(db: ShardDb, campaignId: string): Promise<number | null> {
  return (await db.prepare(`SELECT ${AB_WAIT_FROM} AS at FROM campaigns WHERE id = ?`).bind(campaignId).first<number | null>("at")) ?? null;
}

/** One group of an A/B test's recipients, what it came to so far. */
export interface AbGroupTally extends Omit<VariantTally, "variant"> {
  group: "test" | "rest";
  /** Null for the rest before the winner is picked. */
  variant: number | null;
  recipients: number;
  failed: number;
  skipped: number;
  opens: number;
  clicks: number;
  bounces: number;
  unsubscribes: number;
}

/**
 * What a shard's recipients of each group came to, from the counters the triggers on
 * campaign_messages keep (shard migration 0113, decision 0057): a row per variant and one for the
 * rest, which is the winner's (abWinnerSql) whatever variant its rows hold (?1: the campaign's id).
 */
const COUNTED_TALLIES = `SELECT ab_group AS "group", CASE WHEN variant >= 0 THEN variant WHEN ab_group = 'rest' THEN ${abWinnerSql("?1")} END AS variant,
    recipients, sent, failed, skipped, opens, unique_opens, clicks, unique_clicks, bounces, unsubscribes
  FROM campaign_ab_tallies WHERE campaign_id = ?1 AND panel_id = ?2 ORDER BY ab_group, 2`;

/**
 * The tallies of a campaign published before shard migration 0113, which are not counted: read
 * from its messages (?1: the campaign's id), a GROUP BY over its grouped rows on the shard.
 */
const TALLIES = `SELECT ab_group AS "group", ${abVariantSql("?1")} AS variant, COUNT(*) AS recipients, COALESCE(SUM(status = 'sent'), 0) AS sent, COALESCE(SUM(status = 'failed'), 0) AS failed,
    COALESCE(SUM(status = 'skipped'), 0) AS skipped, COALESCE(SUM(opens), 0) AS opens, COALESCE(SUM(first_open_at IS NOT NULL), 0) AS unique_opens,
    COALESCE(SUM(clicks), 0) AS clicks, COALESCE(SUM(first_click_at IS NOT NULL), 0) AS unique_clicks,
    COALESCE(SUM(bounced_at IS NOT NULL), 0) AS bounces, COALESCE(SUM(unsubscribed_at IS NOT NULL), 0) AS unsubscribes
  FROM campaign_messages WHERE campaign_id = ?1 AND ab_group IS NOT NULL GROUP BY ab_group, 2 ORDER BY ab_group, 2`;

/**
 * Keeps the test's tallies with the campaign before its messages are pruned (once: while none is
 * kept, so before the first rows go), for its report to show them after. Only for a campaign
 * published before shard migration 0113: the counters of one published since outlive its rows.
 */
export async function keepAbResults(db: ShardDb, campaignId: string): Promise<void> {
  await db.prepare(`UPDATE campaigns SET ab_results = (${KEPT_TALLIES}) WHERE id = ?1 AND ab_test IS NOT NULL AND ab_results IS NULL AND NOT ab_tallied`).bind(campaignId).run();
}

/** The tallies as kept (a JSON array of AbGroupTally). */
const KEPT_TALLIES = `SELECT json_group_array(json_object('group', "group", 'variant', variant, 'recipients', recipients, 'sent', sent, 'failed', failed, 'skipped', skipped,
    'opens', opens, 'unique_opens', unique_opens, 'clicks', clicks, 'unique_clicks', unique_clicks, 'bounces', bounces, 'unsubscribes', unsubscribes))
  FROM (${TALLIES})`;

/**
 * keepAbResults on a shard other than the campaign's home (decision 0038 step 4; shard migration
 * 0104): its share of the test's tallies, kept with its part before its rows go (none for a
 * campaign without a test: no row of it has a group; none for a part counted since 0113).
 */
export async function keepPartAbResults(db: ShardDb, campaignId: string): Promise<void> {
  await db
    .prepare(
      `UPDATE campaign_parts SET ab_results = (${KEPT_TALLIES})
       WHERE campaign_id = ?1 AND ab_results IS NULL AND NOT ab_tallied AND EXISTS (SELECT 1 FROM campaign_messages WHERE campaign_id = ?1 AND ab_group IS NOT NULL)`,
    )
    .bind(campaignId)
    .run();
}

/**
 * What each variant's test recipients and the rest came to on this shard: a few rows of its
 * counters (decision 0057), whatever the test's size. `part`: a shard other than the campaign's
 * home, whose part says how its share is kept (decision 0038 step 4). A campaign published before
 * shard migration 0113 reads the tallies kept before its messages were pruned, or its messages.
 */
export async function abGroupTallies(db: ShardDb, panelId: string, campaignId: string, part = false): Promise<AbGroupTally[]> {
  const kept = await (part
    ? db.prepare("SELECT ab_results, ab_tallied FROM campaign_parts WHERE panel_id = ? AND campaign_id = ?")
    : db.prepare("SELECT ab_results, ab_tallied FROM campaigns WHERE panel_id = ? AND id = ?")
  )
    .bind(panelId, campaignId)
    .first<{ ab_results: string | null; ab_tallied: number }>();
  // Pruned messages of a campaign from before the counters: the tallies kept before they went.
  if (kept?.ab_results) return JSON.parse(kept.ab_results) as AbGroupTally[];
  const read = kept?.ab_tallied === 0 ? db.prepare(TALLIES).bind(campaignId) : db.prepare(COUNTED_TALLIES).bind(campaignId, panelId);
  const { results } = await read.all<AbGroupTally>();
  return results;
}

/**
 * Records the test's winner, once: only while the campaign sends and has no winner yet. That one
 * row is the release of the home's rest (decision 0056): a rest recipient keeps no variant until
 * its batch is claimed, which gives it the winner (abWinnerSql), so no statement writes the rest
 * whole, however large. False when it moved on (paused, cancelled, decided).
 */
export async function decideAbTest(db: ShardDb, panelId: string, campaignId: string, winner: number, now: number): Promise<boolean> {
  const decided = await db
    .prepare("UPDATE campaigns SET ab_winner = ?3, updated_at = ?4 WHERE panel_id = ?1 AND id = ?2 AND status = 'sending' AND ab_test IS NOT NULL AND ab_winner IS NULL")
    .bind(panelId, campaignId, winner, now)
    .run();
  return decided.meta.changes > 0;
}

/**
 * On a shard other than the campaign's home (decision 0038 step 4): its part takes the winner the
 * home picked, which releases its held rest (decision 0056: one row, the rest's rows get it as
 * their batches are claimed). Once: a winner already there is kept, so repeating it changes nothing.
 */
export async function releaseAbRest(db: ShardDb, panelId: string, campaignId: string, winner: number): Promise<void> {
  await db.prepare("UPDATE campaign_parts SET ab_winner = ?3 WHERE campaign_id = ?2 AND panel_id = ?1 AND ab_winner IS NULL").bind(panelId, campaignId, winner).run();
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

/** Marks a sending campaign sent once every recipient is in (publishStep) and none is left queued or in flight. */
export async function completeCampaignIfDone(db: ShardDb, panelId: string, campaignId: string, now: number, spread = false): Promise<boolean> {
  // `spread`: the panel has partitions on other shards, each of which must have finished too (campaign_shards).
  const shards = spread ? "\n         AND NOT EXISTS (SELECT 1 FROM campaign_shards WHERE campaign_id = ?2 AND finished_at IS NULL)" : "";
  const result = await db
    .prepare(
      `UPDATE campaigns SET status = 'sent', finished_at = ?3, updated_at = ?3
       WHERE panel_id = ?1 AND id = ?2 AND status = 'sending' AND publish_after IS NULL
         AND NOT EXISTS (SELECT 1 FROM campaign_messages WHERE campaign_id = ?2 AND status IN ('queued', 'sending'))
         -- An A/B test's campaign is done once its winner went to the rest, however small the rest.
         AND (ab_test IS NULL OR ab_winner IS NOT NULL)${shards}`,
    )
    .bind(panelId, campaignId, now)
    .run();
  return result.meta.changes > 0;
}

/**
 * Campaigns still sending although no batch (nor publish step) finished since `before`: their nudges were
 * lost (a crash, a failed send to the queue, a dead-lettered message) or their consumers died.
 * Each is touched so the next cron minute does not pick it again at once.
 */
export async function stalledCampaigns(
  db: ShardDb,
  before: number,
  now: number,
  limit: number,
): Promise<Array<{ id: string; panelId: string; publishing: boolean; spread: boolean; abDecided: boolean }>> {
  const { results } = await db
    .prepare(
      `UPDATE campaigns SET updated_at = ? WHERE id IN (SELECT id FROM campaigns WHERE status = 'sending' AND updated_at < ? LIMIT ?)
       RETURNING id, panel_id, publish_after IS NOT NULL AS publishing, EXISTS (SELECT 1 FROM campaign_shards WHERE campaign_id = campaigns.id) AS spread,
         ab_winner IS NOT NULL AS ab_decided`,
    )
    .bind(now, before, limit)
    .all<{ id: string; panel_id: string; publishing: number; spread: number; ab_decided: number }>();
  // Their unsent batches are nudged a page at a time by the caller (decision 0058), not read here.
  return results.map((row) => ({ id: row.id, panelId: row.panel_id, publishing: row.publishing === 1, spread: row.spread === 1, abDecided: row.ab_decided === 1 }));
}

/**
 * The winner of the A/B test of the campaign `campaign` names, as this shard knows it: the
 * campaign's row on the home, its campaign_parts row elsewhere once the release nudge reached it
 * (the other is absent); NULL before. A rest recipient without a variant is the winner's once it
 * is known (decision 0056): the claim writes it, the readers take it for the rest's.
 */
function abWinnerSql(campaign: string): string {
  return `COALESCE((SELECT ab_winner FROM campaigns WHERE id = ${campaign}), (SELECT ab_winner FROM campaign_parts WHERE campaign_id = ${campaign}))`;
}

/** A recipient's variant (`campaign` names its campaign): its own, or for the rest the winner once picked (decision 0056). */
function abVariantSql(campaign: string): string {
  return `COALESCE(variant, CASE WHEN ab_group = 'rest' THEN ${abWinnerSql(campaign)} END)`;
}

/**
 * Whether a recipient of the campaign `?campaign` names is held for its A/B test: every one
 * while this shard still publishes (its ranking steps place them a step at a time: none goes
 * before all are placed), the rest (no variant of its own) until this shard knows the winner.
 * Its progress is the campaign's row on the home, its campaign_parts row elsewhere (the other is absent).
 */
function abHeldSql(campaign: string): string {
  return `(ab_group IS NOT NULL AND ((variant IS NULL AND ${abWinnerSql(campaign)} IS NULL)
    OR EXISTS (SELECT 1 FROM campaigns WHERE id = ${campaign} AND publish_after IS NOT NULL)
    OR EXISTS (SELECT 1 FROM campaign_parts WHERE campaign_id = ${campaign} AND publish_after IS NOT NULL)))`;
}

/**
 * A page of the batches of a campaign with recipients still queued or in flight (deferred ones
 * only once due, when `now` is given): up to `limit` after batch `after`, in order. A page walks
 * the primary key (campaign_id, batch, …) from `after`, so its cost is the page's, not the
 * campaign's (decision 0058); a page shorter than `limit` is the last.
 */
export async function unsentBatches(db: ShardDb, campaignId: string, now: number | undefined, after: number, limit: number): Promise<number[]> {
  const { results } = await db
    // Held recipients of an A/B test: nothing to nudge before.
    .prepare(
      `SELECT DISTINCT batch FROM campaign_messages WHERE campaign_id = ?1 AND batch > ?3 AND status IN ('queued', 'sending') AND (?2 IS NULL OR due_at IS NULL OR due_at <= ?2) AND NOT ${abHeldSql("?1")} ORDER BY batch LIMIT ?4`,
    )
    .bind(campaignId, now ?? null, after, limit)
    .all<{ batch: number }>();
  return results.map((b) => b.batch);
}

export interface ClaimedRecipient {
  contactId: number;
  /** When a deferral (quiet hours, local time) let it go; null: never deferred. */
  dueAt: number | null;
  /** The A/B test's variant the recipient gets; null outside a test. */
  variant: number | null;
  attributes: Record<string, string | number | boolean>;
  suppressed: SuppressionReason | null;
  /** The contact left the campaign's topic (issue 45, item 4). */
  leftTopic: boolean;
}

/** The error of a recipient whose send attempt died after the provider may have been called. */
export const UNKNOWN_OUTCOME_ERROR = "outcome unknown: the send attempt was interrupted after the provider was called; not resent, to send at most once";

/**
 * Claims the batch's recipients that are still queued, and those whose claim is older than
 * `staleBefore` (its holder died; a live holder renews its claim while it sends): all of them
 * with an idempotent provider, which makes a resend harmless; otherwise only those with no
 * attempt recorded, which provably never reached the provider. A stale claim with an attempt
 * recorded is settled as failed with an unknown outcome (its claim kept, so a holder that was
 * only slow can still record what really happened). Returns the claimed recipients with their
 * attributes and whether their address is suppressed.
 */
export async function claimBatch(
  db: ShardDb,
  campaign: { id: string; panelId: string; topicId?: string | null },
  batch: number,
  claim: string,
  now: number,
  staleBefore: number,
  idempotent: boolean,
  part = false,
): Promise<ClaimedRecipient[]> {
  // `part`: a shard other than the campaign's home, which has no campaign row: its state was read
  // from the home just before (and again before each group is handed over), its topic is bound.
  const sending = part ? "" : `
           -- A campaign paused or cancelled since its nudge was read claims nothing more.
           AND EXISTS (SELECT 1 FROM campaigns WHERE id = ?3 AND status = 'sending')`;
  const leftTopic = part
    ? "EXISTS (SELECT 1 FROM topic_optouts t WHERE t.panel_id = m.panel_id AND t.topic_id = ?4 AND t.contact_id = m.contact_id)"
    : `EXISTS (SELECT 1 FROM campaigns k JOIN topic_optouts t ON t.panel_id = k.panel_id AND t.topic_id = k.topic_id
                   WHERE k.id = m.campaign_id AND t.contact_id = m.contact_id)`;
  const claimed = db.prepare(
    `SELECT m.contact_id, m.due_at, m.variant, c.attrs, s.reason AS suppressed,
           ${leftTopic} AS left_topic
         FROM campaign_messages m JOIN contacts c ON c.id = m.contact_id
         LEFT JOIN email_suppressions s ON s.panel_id = m.panel_id AND s.address = lower(trim(json_extract(c.attrs, '$.EMAIL')))
         WHERE m.campaign_id = ?1 AND m.batch = ?2 AND m.claim = ?3`,
  );
  const statements = [
    db
      .prepare(
        // A released rest recipient takes the winner with its claim (decision 0056): its row is written here anyway.
        `UPDATE campaign_messages SET status = 'sending', claim = ?1, claimed_at = ?2, attempted_at = NULL, variant = COALESCE(variant, ${abWinnerSql("?3")})
         WHERE campaign_id = ?3 AND panel_id = ?4 AND batch = ?5
           AND ((status = 'queued' AND (due_at IS NULL OR due_at <= ?2)) OR (status = 'sending' AND claimed_at < ?7 AND (?6 OR attempted_at IS NULL)))
           -- Held recipients of an A/B test (abHeldSql) are not claimed, nor rows a split's fence
           -- keeps (decision 0047: the target sends them from its switch; one such row would abort the claim of the batch's others).
           AND NOT ${abHeldSql("?3")} AND ${notMovingHere("campaign_messages")}${sending}`,
      )
      .bind(claim, now, campaign.id, campaign.panelId, batch, idempotent ? 1 : 0, staleBefore),
    part ? claimed.bind(campaign.id, batch, claim, campaign.topicId ?? null) : claimed.bind(campaign.id, batch, claim),
  ];
  if (!idempotent) {
    statements.unshift(
      db
        .prepare(
          `UPDATE campaign_messages SET status = 'failed', error = ?4
           WHERE campaign_id = ?1 AND batch = ?2 AND status = 'sending' AND claimed_at < ?3 AND attempted_at IS NOT NULL AND ${notMovingHere("campaign_messages")}`,
        )
        .bind(campaign.id, batch, staleBefore, UNKNOWN_OUTCOME_ERROR),
    );
  }
  statements.push(
    db.prepare("SELECT address, reason FROM email_suppressions WHERE panel_id = ? AND address >= ? AND address < ?").bind(campaign.panelId, ERASED_RANGE.from, ERASED_RANGE.to),
  );
  const results = await db.batch<Record<string, any>>(statements);
  const recipients: ClaimedRecipient[] = results[results.length - 2]!.results.map((row) => ({
    contactId: row.contact_id as number,
    dueAt: row.due_at as number | null,
    variant: row.variant as number | null,
    attributes: JSON.parse(row.attrs as string) as Record<string, string | number | boolean>,
    suppressed: row.suppressed as SuppressionReason | null,
    leftTopic: row.left_topic === 1,
  }));
  // Addresses of erased contacts are kept hashed (domain/erasure.ts): one that came back is stopped still.
  const erased = new Map(results[results.length - 1]!.results.map((row) => [row.address as string, row.reason as SuppressionReason]));
  if (erased.size) {
    for (const recipient of recipients) {
      const address = recipient.attributes.EMAIL;
      if (recipient.suppressed === null && typeof address === "string") recipient.suppressed = erased.get(await erasedIdentifier(campaign.panelId, address.trim().toLowerCase())) ?? null;
    }
  }
  return recipients;
}

/**
 * Records that these recipients of the claim are about to be handed to the provider, and
 * renews the whole claim (the sender's heartbeat). Returns the recipients still held by the
 * claim: only those may be sent (a claim that went stale may have been taken by another).
 */
export async function markSendAttempts(db: ShardDb, campaignId: string, batch: number, claim: string, contactIds: readonly number[], now: number): Promise<Set<number>> {
  const [, marked] = await db.batch<{ contact_id: number }>([
    db.prepare("UPDATE campaign_messages SET claimed_at = ?4 WHERE campaign_id = ?1 AND batch = ?2 AND claim = ?3 AND status = 'sending'").bind(campaignId, batch, claim, now),
    db
      .prepare(
        `UPDATE campaign_messages SET attempted_at = ?4
         WHERE campaign_id = ?1 AND batch = ?2 AND claim = ?3 AND status = 'sending' AND contact_id IN (SELECT value FROM json_each(?5))
         RETURNING contact_id`,
      )
      .bind(campaignId, batch, claim, now, JSON.stringify(contactIds)),
  ]);
  return new Set(marked!.results.map((row) => row.contact_id));
}

export interface MessageOutcome {
  contactId: number;
  status: "sent" | "failed" | "skipped" | "queued";
  address: string | null;
  providerMessageId: string | null;
  error: string | null;
  /** The filled subject, where the campaign's subject has merge tags. */
  subject?: string | null;
  /** The values the merge tags were filled with (mergeValuesOf), where there were any. */
  mergeValues?: Readonly<Record<string, unknown>> | null;
}

/**
 * Records the outcome of each claimed recipient (`queued` hands a recipient back for a retry),
 * and counts as the campaign's progress: a campaign whose sends stopped is noticed by the
 * lack of it.
 */
export async function finishClaims(db: ShardDb, campaignId: string, batch: number, claim: string, outcomes: readonly MessageOutcome[], now: number): Promise<void> {
  if (outcomes.length === 0) return;
  const rows = JSON.stringify(
    outcomes.map((o) => [o.contactId, o.status, o.address, o.providerMessageId, o.error, o.subject ?? null, o.mergeValues ? JSON.stringify(o.mergeValues) : null]),
  );
  // Each row is found by its key through the IN list; the per-row values are looked up in the
  // same small JSON array (an UPDATE ... FROM json_each would scan the whole campaign instead).
  const field = (index: number) => `(SELECT r.value ->> ${index} FROM json_each(?1) AS r WHERE r.value ->> 0 = campaign_messages.contact_id)`;
  await db.batch([
    db
      .prepare(
        `UPDATE campaign_messages SET
           status = ${field(1)},
           address = ${field(2)},
           provider_msg_id = ${field(3)},
           error = ${field(4)},
           subject = ${field(5)},
           merge_values = ${field(6)},
           sent_at = CASE WHEN ${field(1)} = 'sent' THEN ?4 ELSE NULL END,
           claim = CASE WHEN ${field(1)} = 'queued' THEN NULL ELSE claim END,
           attempted_at = CASE WHEN ${field(1)} = 'queued' THEN NULL ELSE attempted_at END
         WHERE campaign_id = ?2 AND batch = ?3 AND contact_id IN (SELECT r.value ->> 0 FROM json_each(?1) AS r) AND claim = ?5`,
      )
      .bind(rows, campaignId, batch, now, claim),
    db.prepare("UPDATE campaigns SET updated_at = MAX(updated_at, ?) WHERE id = ? AND status = 'sending'").bind(now, campaignId),
  ]);
}

/**
 * Hands these recipients of the claim back to the queue until their time (quiet hours, send
 * at local time): claimed again once due, by the nudge the stalled-campaign re-drive sends then.
 */
export async function deferClaimed(db: ShardDb, campaignId: string, batch: number, claim: string, deferred: ReadonlyArray<{ contactId: number; dueAt: number }>): Promise<void> {
  if (deferred.length === 0) return;
  await db
    .prepare(
      `UPDATE campaign_messages SET status = 'queued', claim = NULL, claimed_at = NULL, attempted_at = NULL,
         due_at = (SELECT r.value ->> 1 FROM json_each(?4) AS r WHERE r.value ->> 0 = campaign_messages.contact_id)
       WHERE campaign_id = ?1 AND batch = ?2 AND claim = ?3 AND status = 'sending' AND contact_id IN (SELECT r.value ->> 0 FROM json_each(?4) AS r)`,
    )
    .bind(campaignId, batch, claim, JSON.stringify(deferred.map((d) => [d.contactId, d.dueAt])))
    .run();
}

/** Hands a claim's recipients back untouched (the attempt failed before anything was sent). */
export async function releaseClaim(db: ShardDb, campaignId: string, batch: number, claim: string): Promise<void> {
  await db
    .prepare(
      "UPDATE campaign_messages SET status = 'queued', claim = NULL, claimed_at = NULL, attempted_at = NULL WHERE campaign_id = ? AND batch = ? AND claim = ? AND status = 'sending'",
    )
    .bind(campaignId, batch, claim)
    .run();
}

export interface TrackedMessage {
  panelId: string;
  campaignId: string;
  contactId: number;
  address: string | null;
}

type TrackedRow = { panel_id: string; campaign_id: string; contact_id: number; address: string | null };
const tracked = (row: TrackedRow | null): TrackedMessage | null =>
  row ? { panelId: row.panel_id, campaignId: row.campaign_id, contactId: row.contact_id, address: row.address } : null;

const ENGAGEMENT_COLUMNS = { open: ["opens", "first_open_at"], click: ["clicks", "first_click_at"] } as const;

/**
 * Counts an open or a click of a sent message, and a click on its link `url` with it (the
 * report's top links); null when the panel sent no such message.
 */
export async function countEngagement(
  db: ShardDb,
  m: { panelId: string; campaignId: string; contactId: number },
  kind: keyof typeof ENGAGEMENT_COLUMNS,
  now: number,
  url?: string,
): Promise<TrackedMessage | null> {
  const [count, first] = ENGAGEMENT_COLUMNS[kind];
  const statements = [
    db
      .prepare(
        `UPDATE campaign_messages SET ${count} = ${count} + 1, ${first} = COALESCE(${first}, ?)
         WHERE panel_id = ? AND campaign_id = ? AND contact_id = ? AND status = 'sent'
         RETURNING panel_id, campaign_id, contact_id, address`,
      )
      .bind(now, m.panelId, m.campaignId, m.contactId),
  ];
  if (url !== undefined) statements.push(countLinkClickStatement(db, m, url));
  const [counted] = await db.batch<TrackedRow>(statements);
  return tracked(counted!.results[0] ?? null);
}

/** Marks the message's recipient unsubscribed; `first` tells whether this was the first time. */
export async function markUnsubscribed(
  db: ShardDb,
  m: { panelId: string; campaignId: string; contactId: number },
  now: number,
): Promise<{ message: TrackedMessage; first: boolean } | null> {
  const row = await db
    .prepare(
      `UPDATE campaign_messages SET unsubscribed_at = COALESCE(unsubscribed_at, ?1)
       WHERE panel_id = ?2 AND campaign_id = ?3 AND contact_id = ?4 AND status = 'sent'
       RETURNING panel_id, campaign_id, contact_id, address, unsubscribed_at = ?1 AS first`,
    )
    .bind(now, m.panelId, m.campaignId, m.contactId)
    .first<TrackedRow & { first: number }>();
  return row ? { message: tracked(row)!, first: row.first === 1 } : null;
}

/** The message of a campaign to one contact, if it was sent. */
export async function getSentCampaignMessage(db: ShardDb, m: { panelId: string; campaignId: string; contactId: number }): Promise<TrackedMessage | null> {
  const row = await db
    .prepare("SELECT panel_id, campaign_id, contact_id, address FROM campaign_messages WHERE panel_id = ? AND campaign_id = ? AND contact_id = ? AND status = 'sent'")
    .bind(m.panelId, m.campaignId, m.contactId)
    .first<TrackedRow>();
  return tracked(row);
}

/** The sent message the provider knows by its message id (a complaint names only that). */
export async function sentMessageByProviderId(db: ShardDb, providerMessageId: string): Promise<TrackedMessage | null> {
  const row = await db
    .prepare("SELECT panel_id, campaign_id, contact_id, address FROM campaign_messages WHERE provider_msg_id = ? AND status = 'sent'")
    .bind(providerMessageId)
    .first<TrackedRow>();
  return tracked(row);
}

/** Marks the message a provider reported bounced, found by the provider's message id. */
export async function markBounced(db: ShardDb, providerMessageId: string, now: number): Promise<TrackedMessage | null> {
  const row = await db
    .prepare(
      `UPDATE campaign_messages SET bounced_at = COALESCE(bounced_at, ?)
       WHERE provider_msg_id = ? RETURNING panel_id, campaign_id, contact_id, address`,
    )
    .bind(now, providerMessageId)
    .first<TrackedRow>();
  return tracked(row);
}

/** What a campaign message's copy is rendered from: its outcome, the subject it went with and its merge values. */
export interface CampaignMessageRecord {
  campaignId: string;
  contactId: number;
  status: string;
  address: string | null;
  /** The filled subject, or null where the campaign's subject had no merge tags. */
  subject: string | null;
  mergeValues: Record<string, string | number | boolean> | null;
  sentAt: number | null;
  /** The A/B test's variant it got; null outside a test. */
  variant: number | null;
}

export async function getCampaignMessage(db: ShardDb, panelId: string, campaignId: string, contactId: number): Promise<CampaignMessageRecord | null> {
  const row = await db
    .prepare(`SELECT status, address, subject, merge_values, sent_at, ${abVariantSql("campaign_messages.campaign_id")} AS variant FROM campaign_messages WHERE panel_id = ? AND campaign_id = ? AND contact_id = ?`)
    .bind(panelId, campaignId, contactId)
    .first<{ status: string; address: string | null; subject: string | null; merge_values: string | null; sent_at: number | null; variant: number | null }>();
  if (!row) return null;
  return {
    campaignId,
    contactId,
    status: row.status,
    address: row.address,
    subject: row.subject,
    mergeValues: row.merge_values ? (JSON.parse(row.merge_values) as CampaignMessageRecord["mergeValues"]) : null,
    sentAt: row.sent_at,
    variant: row.variant,
  };
}
