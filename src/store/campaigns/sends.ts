/** Sending a published campaign: its unsent batches, claims on their recipients, outcomes, completion and re-drives. */
import type { ShardDb } from "../shards";
import { notMovingHere } from "../panel-move/triggers";
import { ERASED_RANGE, erasedIdentifier } from "../../domain/erasure";
import type { SuppressionReason } from "../../domain/preferences";
import { abHeldSql, abWinnerSql } from "./ab-tests";

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
