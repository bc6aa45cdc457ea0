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

/**
 * The oldest campaign published here, on a shard other than its home (campaign_parts), before
 * `before`, with nothing left queued or in flight and its recipient rows still here: the home's
 * state is not here, so its end of sending here stands for the campaign's end (decision 0038 step 4).
 */
export async function campaignPartToPrune(db: ShardDb, before: number): Promise<string | null> {
  const row = await db
    .prepare(
      `SELECT campaign_id FROM campaign_parts p
       WHERE messages_pruned_at IS NULL AND publish_after IS NULL AND published_end_at < ?1 AND ${NOT_MOVING}
         AND NOT EXISTS (SELECT 1 FROM campaign_messages m WHERE m.campaign_id = p.campaign_id AND m.status IN ('queued', 'sending'))
       ORDER BY published_end_at LIMIT 1`,
    )
    .bind(before)
    .first<{ campaign_id: string }>();
  return row?.campaign_id ?? null;
}

export async function markCampaignPartPruned(db: ShardDb, campaignId: string, now: number): Promise<void> {
  await db.prepare("UPDATE campaign_parts SET messages_pruned_at = ?2 WHERE campaign_id = ?1").bind(campaignId, now).run();
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

/** Sends counted against frequency caps before `before` (oldest first, at most `limit`). */
export async function deleteContactSendsBefore(db: ShardDb, before: number, limit: number): Promise<number> {
  return changes(
    db
      .prepare(
        `DELETE FROM contact_sends WHERE (panel_id, send_key) IN
           (SELECT panel_id, send_key FROM contact_sends WHERE at < ?1 AND ${NOT_MOVING} ORDER BY at LIMIT ?2)`,
      )
      .bind(before, limit),
  );
}

// Finished journey instances (shard migration 0065). What the journey page counts of them goes
// into journey_pruned / journey_pruned_steps in the batch that deletes them, so its counters read
// the same before, during and after; their segment entry keys stay in journey_entry_keys, so a
// contact who entered a segment journey still enters it once. Their points, step runs and messages
// go first, each statement at most `limit` rows; the instance rows last.

/** Up to `limit` instances that ended (completed or exited) before `before`, oldest first. */
export async function finishedInstancesBefore(db: ShardDb, before: number, limit: number): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT id FROM journey_instances INDEXED BY journey_instances_finished
       WHERE status <> 'active' AND ended_at < ?1 AND ${NOT_MOVING} ORDER BY ended_at LIMIT ?2`,
    )
    .bind(before, limit)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}

/** The first `limit` messages of these instances by msgid (each found through journey_messages_by_contact): the same in both statements below. */
const INSTANCE_MESSAGES = `SELECT m.msgid FROM json_each(?1) k JOIN journey_instances i ON i.id = k.value
  CROSS JOIN journey_messages m ON m.panel_id = i.panel_id AND m.contact_id = i.contact_id AND m.instance_id = i.id ORDER BY m.msgid LIMIT ?2`;

/** Removes up to `limit` messages of these instances, with their SMS short links (which name them). */
export async function deleteInstanceMessages(db: ShardDb, instanceIds: readonly string[], limit: number): Promise<number> {
  const ids = JSON.stringify(instanceIds);
  const [, messages] = await db.batch([
    db.prepare(`DELETE FROM sms_links WHERE msgid IN (${INSTANCE_MESSAGES})`).bind(ids, limit),
    db.prepare(`DELETE FROM journey_messages WHERE msgid IN (${INSTANCE_MESSAGES})`).bind(ids, limit),
  ]);
  return messages!.meta.changes;
}

/** Removes up to `limit` step runs of these instances, adding them to their steps' pruned counts first. */
export async function deleteInstanceStepRuns(db: ShardDb, instanceIds: readonly string[], limit: number): Promise<number> {
  const ids = JSON.stringify(instanceIds);
  const chunk = `SELECT r.instance_id, r.step_id FROM json_each(?1) k CROSS JOIN journey_step_runs r ON r.instance_id = k.value ORDER BY r.instance_id, r.step_id LIMIT ?2`;
  const [, runs] = await db.batch([
    db
      .prepare(
        `INSERT INTO journey_pruned_steps (journey_id, step_id, panel_id, acted)
         SELECT r.journey_id, r.step_id, j.panel_id, COUNT(*) FROM journey_step_runs r JOIN journeys j ON j.id = r.journey_id
         WHERE (r.instance_id, r.step_id) IN (${chunk}) GROUP BY r.journey_id, r.step_id
         ON CONFLICT (journey_id, step_id) DO UPDATE SET acted = acted + excluded.acted`,
      )
      .bind(ids, limit),
    db.prepare(`DELETE FROM journey_step_runs WHERE (instance_id, step_id) IN (${chunk})`).bind(ids, limit),
  ]);
  return runs!.meta.changes;
}

/** Removes up to `limit` points of these instances (all ended: no waiting count changes). */
export async function deleteInstancePoints(db: ShardDb, instanceIds: readonly string[], limit: number): Promise<number> {
  return changes(
    db
      .prepare(
        `DELETE FROM journey_points WHERE id IN (
           SELECT p.id FROM json_each(?1) k CROSS JOIN journey_points p ON p.instance_id = k.value LIMIT ?2)`,
      )
      .bind(JSON.stringify(instanceIds), limit),
  );
}

/** Removes these instances if still finished, counting them per journey and version and keeping their segment entry keys. */
export async function deleteFinishedInstances(db: ShardDb, instanceIds: readonly string[]): Promise<number> {
  const ids = JSON.stringify(instanceIds);
  const these = "id IN (SELECT value FROM json_each(?1)) AND status <> 'active'";
  const [, , deleted] = await db.batch([
    db
      .prepare(
        `INSERT INTO journey_pruned (journey_id, version, panel_id, completed, exited)
         SELECT journey_id, version, panel_id, SUM(status = 'completed'), SUM(status = 'exited') FROM journey_instances
         WHERE ${these} GROUP BY journey_id, version
         ON CONFLICT (journey_id, version) DO UPDATE SET completed = completed + excluded.completed, exited = exited + excluded.exited`,
      )
      .bind(ids),
    db
      .prepare(`INSERT OR IGNORE INTO journey_entry_keys (journey_id, entry_key, panel_id) SELECT journey_id, entry_key, panel_id FROM journey_instances WHERE ${these} AND entry_key LIKE 'segment:%'`)
      .bind(ids),
    db.prepare(`DELETE FROM journey_instances WHERE ${these}`).bind(ids),
  ]);
  return deleted!.meta.changes;
}

/** Removes up to `limit` double opt-in signups whose link expired before `now` (the link confirms nothing any more). */
export async function deleteExpiredSignups(db: ShardDb, now: number, limit: number): Promise<number> {
  return changes(
    db
      .prepare(
        `DELETE FROM form_signups
         WHERE (panel_id, form_id, contact_id) IN (SELECT panel_id, form_id, contact_id FROM form_signups INDEXED BY form_signups_expiry
                                                   WHERE expires_at < ?1 AND ${NOT_MOVING} ORDER BY expires_at LIMIT ?2)`,
      )
      .bind(now, limit),
  );
}

/** Removes up to `limit` signup form counts whose window started before `before` (they limit nothing any more), oldest first. */
export async function deleteFormAttemptsBefore(db: ShardDb, before: number, limit: number): Promise<number> {
  return changes(
    db
      .prepare(
        `DELETE FROM form_attempts
         WHERE (panel_id, subject) IN (SELECT panel_id, subject FROM form_attempts INDEXED BY form_attempts_by_window
                                       WHERE window_start < ?1 AND ${NOT_MOVING} ORDER BY window_start LIMIT ?2)`,
      )
      .bind(before, limit),
  );
}
