import { jobAnswer } from "../domain/answers/contacts";
import type { ShardDb } from "../store/shards";
import { importErrorReport, importJobStatus } from "../services/imports/jobs";
import { conflict, notFound, orNotFound } from "../lib/http/errors";
import { csvAttachment } from "../lib/http/respond";
import { isExportId, openExportFile, segmentExportView } from "../services/segments/export";
import { getSegmentExport } from "../store/segment-exports";
import type { Panel } from "../store/panels";
import { definePanelRoute } from "./route";

function noSuchJob(panel: Panel, jobId: string) {
  return notFound(`No job "${jobId}" in panel "${panel.id}"`);
}

function exportOfPanel(db: ShardDb, panel: Panel, jobId: string) {
  return orNotFound(getSegmentExport(db, panel.id, jobId), `No job "${jobId}" in panel "${panel.id}"`);
}

/** Where the admin API serves an export's file (the panel's session or the admin token). */
function exportDownloadPath(panel: Panel, jobId: string): string {
  return `/admin/v1/panels/${encodeURIComponent(panel.id)}/jobs/${encodeURIComponent(jobId)}/export.csv`;
}

const readJob = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/jobs/:job",
  role: "viewer",
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
  role: "viewer",
  raw: { contentType: "text/csv", description: "The export's CSV file (attachment)" },
  summary: "A completed segment export's file (CSV: the primary key, then the chosen attributes; formula-like cells start with ')",
  async handle({ env, path, panel, db }) {
    const job = await exportOfPanel(db, panel, path.job);
    if (job.status !== "completed") throw conflict(`The export is ${job.status}; its file can be downloaded once it is completed`);
    const file = await openExportFile(env.FILES, job);
    if (!file.ok) throw notFound(file.reason);
    return csvAttachment(file.body, file.size, `${job.segmentId}-${job.id}.csv`);
  },
});

const downloadErrorReport = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/jobs/:job/errors.csv",
  role: "viewer",
  raw: { contentType: "text/csv", description: "The error report's CSV file (attachment)" },
  summary: "The job's error report (CSV: row, column, reason, then the refused row)",
  async handle({ env, path, panel, db }) {
    const report = await importErrorReport(env.FILES, db, panel.id, path.job);
    if (!report) throw noSuchJob(panel, path.job);
    if (!report.ok) throw notFound(report.reason);
    return csvAttachment(report.body, report.size, report.fileName);
  },
});

export const jobRoutes = [readJob, downloadErrorReport, downloadExport];
