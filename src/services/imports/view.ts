import { isoTime } from "../../store/sql";
import type { ImportJob } from "../../store/imports";

/**
 * Where an API client downloads the error report: a path under the envelope's version that
 * takes the panel's API key (query `apikey` or `Authorization: Bearer`), so only the job's own
 * panel can read it. Operators have the admin route.
 */
export function errorReportPath(jobId: string): string {
  return `/apiv2/jobs/${encodeURIComponent(jobId)}/errors.csv`;
}

export function errorReportUrl(job: Pick<ImportJob, "id" | "origin" | "errorReportKey">): string | null {
  return job.errorReportKey ? `${job.origin}${errorReportPath(job.id)}` : null;
}

function bytesDone(job: ImportJob): number {
  if (job.phase === "report" || job.phase === "notify" || job.phase === "done") return job.sources.reduce((sum, s) => sum + (s.size ?? 0), 0);
  if (job.phase !== "rows") return 0;
  return job.sources.slice(0, job.sourceIndex).reduce((sum, s) => sum + (s.size ?? 0), 0) + job.byteOffset;
}

/** A job as bulkstatus and the admin route show it. */
export function importJobView(job: ImportJob) {
  const sizes = job.sources.map((s) => s.size);
  return {
    jobid: job.id,
    status: job.status,
    reason: job.reason,
    total: job.total,
    created: job.created,
    updated: job.updated,
    failed: job.failed,
    listid: job.listId,
    sources: job.sources.map((s) => ({ ...(s.url ? { path: s.url } : {}), name: s.name, bytes: s.size ?? null })),
    progress: {
      bytes_done: bytesDone(job),
      bytes_total: sizes.every((size) => size !== undefined) ? sizes.reduce((sum: number, size) => sum + size!, 0) : null,
    },
    error_report: errorReportUrl(job),
    notifyemail: job.notifyEmails,
    callback: job.callbackUrl
      ? {
          url: job.callbackUrl,
          state: job.callbackState,
          http_status: job.callbackStatus,
          error: job.callbackError,
          at: job.callbackAt === null ? null : isoTime(job.callbackAt),
        }
      : null,
    created_at: isoTime(job.createdAt),
    started_at: job.startedAt === null ? null : isoTime(job.startedAt),
    finished_at: job.finishedAt === null ? null : isoTime(job.finishedAt),
    updated_at: isoTime(job.updatedAt),
  };
}

/** The callback's body, exactly the members CONTRACT 2.3 names. */
export function callbackBody(job: ImportJob) {
  return {
    jobid: job.id,
    status: job.status,
    total: job.total,
    created: job.created,
    updated: job.updated,
    failed: job.failed,
    error_report: errorReportUrl(job),
  };
}

/**
 * The summary email sent to `notifyemail`. It carries counts and ids the service made, never
 * caller-chosen text (file URLs, or a failure reason that may quote the file): the job's
 * status answer holds those for the caller.
 */
export function summaryEmail(job: ImportJob): { subject: string; text: string } {
  const counts = `${job.total} rows: ${job.created} created, ${job.updated} updated, ${job.failed} refused`;
  const subject = job.status === "completed" ? `Contact import ${job.id} completed: ${counts}` : `Contact import ${job.id} failed`;
  const lines = [
    job.status === "completed" ? `Your contact import ${job.id} is complete.` : `Your contact import ${job.id} failed.`,
    "",
    ...(job.status === "failed" ? ["The job's status answer says why.", ""] : []),
    `Files: ${job.sources.length}`,
    ...(job.listId === null ? [] : [`List: ${job.listId}`]),
    `Rows read: ${job.total}`,
    `Created: ${job.created}`,
    `Updated: ${job.updated}`,
    `Refused: ${job.failed}`,
  ];
  const report = errorReportUrl(job);
  if (report) lines.push("", `The refused rows and the reasons: ${report} (with the panel's API key)`);
  return { subject, text: lines.join("\n") };
}
