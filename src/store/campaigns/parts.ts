/** A campaign's part on a shard other than its home (decision 0038 step 4) and what a split's target takes of it (decision 0047). */
import type { ShardDb } from "../shards";
import { notMovingHere } from "../panel-move/triggers";
import { campaignMessagesGone, CANCELLED_SKIP } from "./definitions";
import type { BucketRanges } from "../../domain/partitions";
import { PUBLISHING } from "./publish";

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

/**
 * A campaign deleted on its home: its rows on another shard (recipients, counters, progress), the
 * recipients within `buckets`, the shard's in the panel's map (campaignMessagesGone).
 */
export async function deleteCampaignPart(db: ShardDb, panelId: string, campaignId: string, buckets: BucketRanges | null = null): Promise<void> {
  await db.batch([
    db.prepare(campaignMessagesGone("?3")).bind(panelId, campaignId, buckets && JSON.stringify(buckets)),
    ...["campaign_stats", "campaign_ab_tallies", "campaign_link_clicks", "campaign_parts"].map((table) =>
      db.prepare(`DELETE FROM ${table} WHERE campaign_id = ?2 AND panel_id = ?1`).bind(panelId, campaignId),
    ),
  ]);
}
