import { importHistory, type ImportJob } from "../../store/imports";
import { listNamesOf } from "../../store/lists";
import type { ShardDb } from "../../store/shards";
import { isoTime } from "../../store/sql";

/**
 * The import history of a panel or one of its lists: every import job, whoever started it (the
 * API's bulk upload, the panel, a campaign's contact file), newest first, with its counts and
 * where its error report is. Jobs stay until housekeeping removes finished ones past retention.
 */

/** Where the panel's operators download a job's error report (the API's link takes the API key). */
export function adminErrorReportPath(panelId: string, jobId: string): string {
  return `/admin/v1/panels/${encodeURIComponent(panelId)}/jobs/${encodeURIComponent(jobId)}/errors.csv`;
}

function entryView(job: ImportJob, listNames: ReadonlyMap<number, string>) {
  return {
    jobid: job.id,
    via: job.via,
    status: job.status,
    reason: job.reason,
    list: job.listId === null ? null : { id: job.listId, name: listNames.get(job.listId) ?? null },
    files: job.sources.map((s) => s.name),
    mapped: job.mapping !== null,
    total: job.total,
    created: job.created,
    updated: job.updated,
    failed: job.failed,
    error_report: job.errorReportKey ? adminErrorReportPath(job.panelId, job.id) : null,
    created_at: isoTime(job.createdAt),
    finished_at: job.finishedAt === null ? null : isoTime(job.finishedAt),
  };
}

export async function importHistoryPage(
  db: ShardDb,
  panelId: string,
  options: { listId?: number; cursor?: { createdAt: number; id: string }; limit: number },
) {
  const page = await importHistory(db, panelId, { listId: options.listId, before: options.cursor, limit: options.limit });
  const listIds = [...new Set(page.jobs.flatMap((job) => (job.listId === null ? [] : [job.listId])))];
  const names = await listNamesOf(db, panelId, listIds);
  return {
    imports: page.jobs.map((job) => entryView(job, names)),
    next_cursor: page.next ? `${page.next.createdAt}.${page.next.id}` : null,
  };
}
