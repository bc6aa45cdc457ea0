/** A campaign's publication on its home: its recipients written in bounded steps, into send batches. */
import type { ShardDb } from "../shards";
import { campaignHoldMark } from "../panel-move/triggers";
import { abOrderSql, abSeed, testRecipients, type AbTest } from "../../domain/ab-test";
import type { BucketRanges } from "../../domain/partitions";
import type { CompiledSegment } from "../segment-sql";
import { inBucketRanges } from "../sql";
import { campaignFromRow, type Campaign, type CampaignRow } from "./definitions";

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
    return row ? campaignFromRow(row) : null;
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
  return row ? campaignFromRow(row) : null;
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
export const PUBLISHING = "('sending', 'paused')";

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
