import type { ShardDb } from "./shards";

/**
 * Old rows housekeeping removes (services/retention/housekeeping.ts), across the panels of a
 * shard, a page at a time.
 */

/** Import jobs done before `before`, except those a campaign still waits for; with their error report's key. */
export async function finishedImportsBefore(db: ShardDb, before: number, limit: number): Promise<Array<{ id: string; errorReportKey: string | null }>> {
  const { results } = await db
    .prepare(
      `SELECT id, error_report_key FROM import_jobs
       WHERE phase = 'done' AND finished_at < ?1
         AND id NOT IN (SELECT import_job_id FROM campaigns WHERE status IN ('draft', 'scheduled') AND import_job_id IS NOT NULL)
       ORDER BY finished_at LIMIT ?2`,
    )
    .bind(before, limit)
    .all<{ id: string; error_report_key: string | null }>();
  return results.map((r) => ({ id: r.id, errorReportKey: r.error_report_key }));
}

export async function deleteImportJobs(db: ShardDb, ids: readonly string[]): Promise<void> {
  const list = JSON.stringify(ids);
  await db.batch([
    db.prepare("DELETE FROM import_errors WHERE job_id IN (SELECT value FROM json_each(?))").bind(list),
    db.prepare("DELETE FROM import_jobs WHERE id IN (SELECT value FROM json_each(?))").bind(list),
  ]);
}

/** Outbox messages kept before `before`, with their .eml key. */
export async function outboxBefore(db: ShardDb, before: number, limit: number): Promise<Array<{ id: string; r2Key: string }>> {
  const { results } = await db.prepare("SELECT id, r2_key FROM outbox WHERE created_at < ? ORDER BY created_at LIMIT ?").bind(before, limit).all<{ id: string; r2_key: string }>();
  return results.map((r) => ({ id: r.id, r2Key: r.r2_key }));
}

export async function deleteOutboxRows(db: ShardDb, ids: readonly string[]): Promise<void> {
  await db.prepare("DELETE FROM outbox WHERE id IN (SELECT value FROM json_each(?))").bind(JSON.stringify(ids)).run();
}

// Age-based pruning (issue 42, bounded storage). Each statement removes at most `limit` rows,
// found oldest first through an index on their time (shard migration 0060), so its cost does
// not depend on the size of the table. Rows of a panel in transit on this shard (a move copying
// it here, or removing it from here) are left alone: the move compares row counts and removes
// them itself. A delete on a panel being copied away is captured and copied like any other.
const NOT_MOVING = "panel_id NOT IN (SELECT panel_id FROM panels_in_transit)";

async function changes(statement: D1PreparedStatement): Promise<number> {
  return (await statement.run()).meta.changes;
}

/** Gives guids claimed before they carried a time (migration 0060) the time `now`: their window starts there. */
export async function stampUntimedGuids(db: ShardDb, now: number, limit: number): Promise<number> {
  return changes(
    db
      .prepare(
        `UPDATE event_guids SET at = ?1
         WHERE (panel_id, guid) IN (SELECT panel_id, guid FROM event_guids WHERE at IS NULL AND ${NOT_MOVING} LIMIT ?2)`,
      )
      .bind(now, limit),
  );
}

/** Removes up to `limit` guids claimed before `before`: a repeat of one is stored again. */
export async function deleteGuidsBefore(db: ShardDb, before: number, limit: number): Promise<number> {
  return changes(
    db
      .prepare(
        `DELETE FROM event_guids
         WHERE (panel_id, guid) IN (SELECT panel_id, guid FROM event_guids WHERE at < ?1 AND ${NOT_MOVING} ORDER BY at LIMIT ?2)`,
      )
      .bind(before, limit),
  );
}

/** The oldest campaign that finished before `before` and still has its recipient rows. */
export async function campaignToPrune(db: ShardDb, before: number): Promise<string | null> {
  const row = await db
    .prepare(
      `SELECT id FROM campaigns INDEXED BY campaigns_to_prune
       WHERE messages_pruned_at IS NULL AND finished_at IS NOT NULL AND finished_at < ?1 AND status IN ('sent', 'failed') AND ${NOT_MOVING}
       ORDER BY finished_at LIMIT 1`,
    )
    .bind(before)
    .first<{ id: string }>();
  return row?.id ?? null;
}

/** Removes up to `limit` of the campaign's recipient rows, in key order. No trigger counts a delete: its report's sums stay. */
export async function deleteCampaignMessages(db: ShardDb, campaignId: string, limit: number): Promise<number> {
  return changes(
    db
      .prepare(
        `DELETE FROM campaign_messages
         WHERE campaign_id = ?1 AND (batch, contact_id) IN (SELECT batch, contact_id FROM campaign_messages WHERE campaign_id = ?1 ORDER BY batch, contact_id LIMIT ?2)`,
      )
      .bind(campaignId, limit),
  );
}

export async function markCampaignMessagesPruned(db: ShardDb, campaignId: string, now: number): Promise<void> {
  await db.prepare("UPDATE campaigns SET messages_pruned_at = ?2 WHERE id = ?1").bind(campaignId, now).run();
}

/** Removes up to `limit` audit entries recorded before `before`. */
export async function deleteAuditEntriesBefore(db: ShardDb, before: number, limit: number): Promise<number> {
  return changes(
    db
      .prepare(`DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ?1 AND ${NOT_MOVING} ORDER BY at LIMIT ?2)`)
      .bind(before, limit),
  );
}

/** Removes up to `limit` segment entries and exits made before `before`. */
export async function deleteSegmentChangesBefore(db: ShardDb, before: number, limit: number): Promise<number> {
  return changes(
    db
      .prepare(`DELETE FROM segment_changes WHERE id IN (SELECT id FROM segment_changes WHERE at < ?1 AND ${NOT_MOVING} ORDER BY at LIMIT ?2)`)
      .bind(before, limit),
  );
}
