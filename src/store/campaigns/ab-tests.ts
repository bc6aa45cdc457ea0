/** A campaign's A/B test: its setting, the groups' tallies, the winner and the rest's release (decisions 0055–0057). */
import type { ShardDb } from "../shards";
import type { CampaignStatus } from "../../domain/broadcast";
import type { AbTest, VariantTally } from "../../domain/ab-test";
import { campaignFromRow, type Campaign, type CampaignRow } from "./definitions";

/** Sets or (null) removes the campaign's A/B test while it is in one of `from`. */
export async function setCampaignAbTest(db: ShardDb, panelId: string, id: string, from: readonly CampaignStatus[], test: AbTest | null, now: number): Promise<Campaign | null> {
  const row = await db
    .prepare(
      `UPDATE campaigns SET ab_test = ?3, ab_winner = NULL, updated_at = ?4
       WHERE panel_id = ?1 AND id = ?2 AND status IN (SELECT value FROM json_each(?5)) RETURNING *`,
    )
    .bind(panelId, id, test === null ? null : JSON.stringify(test), now, JSON.stringify(from))
    .first<CampaignRow>();
  return row ? campaignFromRow(row) : null;
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
  return results.map((row) => ({ campaign: campaignFromRow(row), shards: JSON.parse(row.ab_shards) as number[] }));
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

/**
 * The winner of the A/B test of the campaign `campaign` names, as this shard knows it: the
 * campaign's row on the home, its campaign_parts row elsewhere once the release nudge reached it
 * (the other is absent); NULL before. A rest recipient without a variant is the winner's once it
 * is known (decision 0056): the claim writes it, the readers take it for the rest's.
 */
export function abWinnerSql(campaign: string): string {
  return `COALESCE((SELECT ab_winner FROM campaigns WHERE id = ${campaign}), (SELECT ab_winner FROM campaign_parts WHERE campaign_id = ${campaign}))`;
}

/** A recipient's variant (`campaign` names its campaign): its own, or for the rest the winner once picked (decision 0056). */
export function abVariantSql(campaign: string): string {
  return `COALESCE(variant, CASE WHEN ab_group = 'rest' THEN ${abWinnerSql(campaign)} END)`;
}

/**
 * Whether a recipient of the campaign `?campaign` names is held for its A/B test: every one
 * while this shard still publishes (its ranking steps place them a step at a time: none goes
 * before all are placed), the rest (no variant of its own) until this shard knows the winner.
 * Its progress is the campaign's row on the home, its campaign_parts row elsewhere (the other is absent).
 */
export function abHeldSql(campaign: string): string {
  return `(ab_group IS NOT NULL AND ((variant IS NULL AND ${abWinnerSql(campaign)} IS NULL)
    OR EXISTS (SELECT 1 FROM campaigns WHERE id = ${campaign} AND publish_after IS NOT NULL)
    OR EXISTS (SELECT 1 FROM campaign_parts WHERE campaign_id = ${campaign} AND publish_after IS NOT NULL)))`;
}
