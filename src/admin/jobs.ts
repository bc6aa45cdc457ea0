import { openErrorReport } from "../services/imports/error-report";
import { importJobView } from "../services/imports/view";
import { notFound } from "../lib/http/errors";
import { csvAttachment } from "../lib/http/respond";
import { getImportJob, type ImportJob } from "../store/imports";
import { defineAdminRoute, requirePanel } from "./route";

async function jobOfPanel(db: D1Database, panelId: string | undefined, jobId: string | undefined): Promise<ImportJob> {
  const panel = await requirePanel(db, panelId);
  const job = jobId ? await getImportJob(db, panel.id, jobId) : null;
  if (!job) throw notFound(`No job "${jobId}" in panel "${panel.id}"`);
  return job;
}

const readJob = defineAdminRoute({
  method: "GET",
  path: "/panels/:panel/jobs/:job",
  summary: "A bulk upload job: status, counters, progress, error report link, callback outcome",
  async handle({ env, path }) {
    return importJobView(await jobOfPanel(env.DB, path.panel, path.job));
  },
});

const downloadErrorReport = defineAdminRoute({
  method: "GET",
  path: "/panels/:panel/jobs/:job/errors.csv",
  summary: "The job's error report (CSV: row, column, reason, then the refused row)",
  async handle({ env, path }) {
    const job = await jobOfPanel(env.DB, path.panel, path.job);
    const report = await openErrorReport(env.FILES, job);
    if (!report.ok) throw notFound(report.reason);
    return csvAttachment(report.body, report.size, `${job.id}-errors.csv`);
  },
});

export const jobRoutes = [readJob, downloadErrorReport];
