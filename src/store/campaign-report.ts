import type { ShardDb } from "./shards";
import type { BucketRanges } from "../domain/partitions";
import { inBucketRanges } from "./sql";
import type { CampaignCounters, CampaignHour, CampaignLinkClicks, CampaignSums, RecipientFilter } from "../domain/broadcast";

/**
 * A campaign's report from its aggregates (migration 0050): the counters and the hours are sums
 * over campaign_stats, a few rows per campaign whatever its size; links from
 * campaign_link_clicks. Only the contacts behind a number read the campaign's messages, a page at a time.
 */

const SUMS = `COALESCE(SUM(sent), 0) AS sent, COALESCE(SUM(failed), 0) AS failed, COALESCE(SUM(skipped), 0) AS skipped,
  COALESCE(SUM(opens), 0) AS opens, COALESCE(SUM(unique_opens), 0) AS unique_opens,
  COALESCE(SUM(clicks), 0) AS clicks, COALESCE(SUM(unique_clicks), 0) AS unique_clicks,
  COALESCE(SUM(bounces), 0) AS bounces, COALESCE(SUM(unsubscribes), 0) AS unsubscribes`;

export function countersOf(recipients: number, sums: CampaignSums): CampaignCounters {
  return { recipients, queued: Math.max(0, recipients - sums.sent - sums.failed - sums.skipped), ...sums };
}

/** The campaign's sums on this shard (its counters are these summed over the shards it sent from). */
export async function campaignSums(db: ShardDb, panelId: string, campaignId: string): Promise<CampaignSums> {
  return (await db.prepare(`SELECT ${SUMS} FROM campaign_stats WHERE campaign_id = ?2 AND panel_id = ?1`).bind(panelId, campaignId).first<CampaignSums>())!;
}

/** The campaign's counters; `recipients` is the number its publication froze. */
export async function campaignCounters(db: ShardDb, panelId: string, campaign: { id: string; recipients: number }): Promise<CampaignCounters> {
  return countersOf(campaign.recipients, await campaignSums(db, panelId, campaign.id));
}

export const NO_SUMS: CampaignSums = { sent: 0, failed: 0, skipped: 0, opens: 0, unique_opens: 0, clicks: 0, unique_clicks: 0, bounces: 0, unsubscribes: 0 };

/** The sums of several campaigns on this shard in one read, in their order. */
export async function sumsOfCampaigns(db: ShardDb, panelId: string, campaignIds: readonly string[]): Promise<CampaignSums[]> {
  if (campaignIds.length === 0) return [];
  const { results } = await db
    .prepare(`SELECT campaign_id, ${SUMS} FROM campaign_stats WHERE campaign_id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1 GROUP BY campaign_id`)
    .bind(panelId, JSON.stringify(campaignIds))
    .all<CampaignSums & { campaign_id: string }>();
  const byId = new Map(results.map(({ campaign_id, ...sums }) => [campaign_id, sums]));
  return campaignIds.map((id) => byId.get(id) ?? NO_SUMS);
}

/** The counters of several campaigns in one read (the campaign list). */
export async function countersOfCampaigns(db: ShardDb, panelId: string, campaigns: ReadonlyArray<{ id: string; recipients: number }>): Promise<CampaignCounters[]> {
  const sums = await sumsOfCampaigns(db, panelId, campaigns.map((c) => c.id));
  return campaigns.map((campaign, i) => countersOf(campaign.recipients, sums[i]!));
}

/** The campaign's hours with any change, oldest first. */
export async function campaignHours(db: ShardDb, panelId: string, campaignId: string): Promise<CampaignHour[]> {
  const { results } = await db
    .prepare(`SELECT hour, sent, failed, skipped, opens, unique_opens, clicks, unique_clicks, bounces, unsubscribes FROM campaign_stats WHERE campaign_id = ?2 AND panel_id = ?1 ORDER BY hour`)
    .bind(panelId, campaignId)
    .all<CampaignHour>();
  return results;
}

/** The campaign's most clicked links. */
export async function campaignTopLinks(db: ShardDb, panelId: string, campaignId: string, limit: number): Promise<CampaignLinkClicks[]> {
  const { results } = await db
    .prepare("SELECT url, clicks FROM campaign_link_clicks WHERE campaign_id = ?2 AND panel_id = ?1 ORDER BY clicks DESC, url LIMIT ?3")
    .bind(panelId, campaignId, limit)
    .all<CampaignLinkClicks>();
  return results;
}

/** Counts a click on one of the campaign's links, when the panel sent the message (as countEngagement counts it). */
export function countLinkClickStatement(db: ShardDb, m: { panelId: string; campaignId: string; contactId: number }, url: string): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO campaign_link_clicks (campaign_id, url, panel_id, clicks)
       SELECT ?2, ?4, ?1, 1 WHERE EXISTS (SELECT 1 FROM campaign_messages WHERE campaign_id = ?2 AND contact_id = ?3 AND panel_id = ?1 AND status = 'sent')
       ON CONFLICT (campaign_id, url) DO UPDATE SET clicks = clicks + 1`,
    )
    .bind(m.panelId, m.campaignId, m.contactId, url);
}

const FILTERS: Record<RecipientFilter, string> = {
  all: "1",
  sent: "m.status = 'sent'",
  failed: "m.status = 'failed'",
  skipped: "m.status = 'skipped'",
  queued: "m.status IN ('queued', 'sending')",
  opened: "m.first_open_at IS NOT NULL",
  clicked: "m.first_click_at IS NOT NULL",
  bounced: "m.bounced_at IS NOT NULL",
  unsubscribed: "m.unsubscribed_at IS NOT NULL",
};

export interface CampaignRecipient {
  campaignId: string;
  contactId: number;
  /** The contact's primary key value; null once the contact is gone. */
  key: string | null;
  address: string | null;
  status: string;
  error: string | null;
  sentAt: number | null;
  opens: number;
  clicks: number;
  firstOpenAt: number | null;
  firstClickAt: number | null;
  bouncedAt: number | null;
  unsubscribedAt: number | null;
  /** As sent: the filled subject, or the campaign's where it has no merge tags. */
  subject: string;
}

interface RecipientRow {
  contact_id: number;
  pk_value: string | null;
  address: string | null;
  status: string;
  error: string | null;
  sent_at: number | null;
  opens: number;
  clicks: number;
  first_open_at: number | null;
  first_click_at: number | null;
  bounced_at: number | null;
  unsubscribed_at: number | null;
  subject: string;
}

/**
 * One page of the recipients behind a number, by contact id after `afterContactId`; with
 * `buckets` (the shard's in the panel's map) only those in them: a split's source holds copies
 * of the moved recipients until cleaning (decision 0047).
 */
export async function campaignRecipients(
  db: ShardDb,
  panelId: string,
  campaignId: string,
  filter: RecipientFilter,
  afterContactId: number,
  limit: number,
  buckets: BucketRanges | null = null,
): Promise<CampaignRecipient[]> {
  const { results } = await db
    .prepare(
      // The (campaign_id, contact_id) unique index walks the campaign in contact order.
      `SELECT m.contact_id, c.pk_value, m.address, m.status, m.error, m.sent_at, m.opens, m.clicks, m.first_open_at, m.first_click_at, m.bounced_at, m.unsubscribed_at,
              COALESCE(m.subject, (SELECT subject FROM campaigns WHERE id = ?2 AND panel_id = ?1)) AS subject
       FROM campaign_messages m LEFT JOIN contacts c ON c.id = m.contact_id AND c.panel_id = ?1
       WHERE m.campaign_id = ?2 AND m.panel_id = ?1 AND m.contact_id > ?3 AND ${FILTERS[filter]} AND (?5 IS NULL OR ${inBucketRanges("m.bucket", "?5")})
       ORDER BY m.contact_id LIMIT ?4`,
    )
    .bind(panelId, campaignId, afterContactId, limit, buckets && JSON.stringify(buckets))
    .all<RecipientRow>();
  return results.map((row) => ({
    campaignId,
    contactId: row.contact_id,
    key: row.pk_value,
    address: row.address,
    status: row.status,
    error: row.error,
    sentAt: row.sent_at,
    opens: row.opens,
    clicks: row.clicks,
    firstOpenAt: row.first_open_at,
    firstClickAt: row.first_click_at,
    bouncedAt: row.bounced_at,
    unsubscribedAt: row.unsubscribed_at,
    subject: row.subject,
  }));
}
