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
         AND id NOT IN (SELECT import_job_id FROM campaigns WHERE status = 'scheduled' AND import_job_id IS NOT NULL)
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
