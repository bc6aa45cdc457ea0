import { importHistoryAnswer, jobAnswer } from "../domain/answers/contacts";
import { importHistoryQuery } from "../domain/panel-screens";
import { NEEDS } from "../domain/permissions";
import { importHistoryPage } from "../services/imports/history";
import type { ShardDb } from "../store/shards";
import { importErrorReport, importJobStatus } from "../services/imports/jobs";
import { notFound, orNotFound, problemError } from "../lib/http/errors";
import type { Problem, Result } from "../lib/problems";
import { csvAttachment } from "../lib/http/respond";
import { exportFile, isExportId, segmentExportView } from "../services/segments/export";
import { getSegmentExport } from "../store/segment-exports";
import type { Panel } from "../store/panels";
import { definePanelRoute } from "./route";

function noSuchJob(panel: Panel, jobId: string) {
  return notFound(`No job "${jobId}" in panel "${panel.id}"`);
}

function exportOfPanel(db: ShardDb, panel: Panel, jobId: string) {
  return orNotFound(getSegmentExport(db, panel.id, jobId), `No job "${jobId}" in panel "${panel.id}"`);
}

/**
 * A job service's value, or its refusal in the admin API's words: a job the panel does not have
 * (the services' not_found on field `job`, worded for the envelope) is `No job "…" in panel "…"`
 * with no field; their other words stand.
 */
function unwrapJob<T>(result: Result<T>, panel: Panel, jobId: string): T {
  if (result.ok) return result.value;
  const problem: Problem = result.problem;
  if (problem.kind === "not_found" && problem.fields.some((f) => f.field === "job")) throw noSuchJob(panel, jobId);
  throw problemError(problem);
}

/** Where the admin API serves an export's file (the panel's session or the admin token). */
function exportDownloadPath(panel: Panel, jobId: string): string {
  return `/admin/v1/panels/${encodeURIComponent(panel.id)}/jobs/${encodeURIComponent(jobId)}/export.csv`;
}

const readJob = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/jobs/:job",
  role: NEEDS.read,
  response: jobAnswer,
  summary: "A background job: a bulk upload (status, counters, progress, error report link, callback outcome) or a segment export (status, rows written of the members, download link once completed)",
  async handle({ path, panel, db }) {
    if (isExportId(path.job)) return segmentExportView(await exportOfPanel(db, panel, path.job), exportDownloadPath(panel, path.job));
    const job = await importJobStatus(db, panel.id, path.job);
    if (!job) throw noSuchJob(panel, path.job);
    return job;
  },
});

const downloadExport = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/jobs/:job/export.csv",
  role: NEEDS.read,
  raw: { contentType: "text/csv", description: "The export's CSV file (attachment)" },
  summary: "A completed segment export's file (CSV: the primary key, then the chosen attributes; formula-like cells start with ')",
  async handle({ env, path, panel, db }) {
    const file = unwrapJob(await exportFile(env.FILES, db, panel.id, path.job), panel, path.job);
    return csvAttachment(file.body, file.size, `${file.job.segmentId}-${file.job.id}.csv`);
  },
});

const downloadErrorReport = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/jobs/:job/errors.csv",
  role: NEEDS.read,
  raw: { contentType: "text/csv", description: "The error report's CSV file (attachment)" },
  summary: "The job's error report (CSV: row, column, reason, then the refused row)",
  async handle({ env, path, panel, db }) {
    const report = unwrapJob(await importErrorReport(env.FILES, db, panel.id, path.job), panel, path.job);
    return csvAttachment(report.body, report.size, report.fileName);
  },
});

const readImportHistory = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/imports",
  role: NEEDS.read,
  response: importHistoryAnswer,
  query: importHistoryQuery,
  summary:
    "The panel's import history, newest first (`list`: one list's): every import job whoever started it (`via`: the API's bulkupload, the panel, a campaign's contact file), with its status, counts and error report link; next_cursor pages on. Finished jobs are kept for the retention period",
  async handle({ query, panel, db }) {
    return importHistoryPage(db, panel.id, { listId: query.list, cursor: query.cursor, limit: query.limit });
  },
});

export const jobRoutes = [readJob, downloadErrorReport, downloadExport, readImportHistory];
