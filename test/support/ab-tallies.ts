import type { ShardDb } from "../../src/store/shards";

/**
 * What a GROUP BY over a campaign's messages on `db` gives each A/B group: the report's and the
 * decision's read before shard migration 0113 (decision 0057), the rest taking the winner as this
 * shard knows it (decision 0056). The counters must give the same, row for row.
 */
export async function talliesFromMessages(db: ShardDb, campaignId: string): Promise<unknown[]> {
  const winner = "COALESCE((SELECT ab_winner FROM campaigns WHERE id = ?1), (SELECT ab_winner FROM campaign_parts WHERE campaign_id = ?1))";
  const { results } = await db
    .prepare(
      `SELECT ab_group AS "group", COALESCE(variant, CASE WHEN ab_group = 'rest' THEN ${winner} END) AS variant, COUNT(*) AS recipients,
         SUM(status = 'sent') AS sent, SUM(status = 'failed') AS failed, SUM(status = 'skipped') AS skipped, SUM(opens) AS opens, SUM(first_open_at IS NOT NULL) AS unique_opens,
         SUM(clicks) AS clicks, SUM(first_click_at IS NOT NULL) AS unique_clicks, SUM(bounced_at IS NOT NULL) AS bounces, SUM(unsubscribed_at IS NOT NULL) AS unsubscribes
       FROM campaign_messages WHERE campaign_id = ?1 AND ab_group IN ('test', 'rest') GROUP BY ab_group, 2 ORDER BY ab_group, 2`,
    )
    .bind(campaignId)
    .all();
  return results;
}

/** The statements among `caught` that name a campaign's recipient rows. */
export const namingMessages = (caught: ReadonlyArray<{ sql: string }>) => caught.filter((c) => /\bcampaign_messages\b/.test(c.sql)).map((c) => c.sql);
