import type { ShardDb } from "../store/shards";
import { openErrorReport } from "../services/imports/error-report";
import { importJobView } from "../services/imports/view";
import { notFound, orNotFound } from "../lib/http/errors";
import { csvAttachment } from "../lib/http/respond";
import { getImportJob } from "../store/imports";
import type { Panel } from "../store/panels";
import { definePanelRoute } from "./route";

function jobOfPanel(db: ShardDb, panel: Panel, jobId: string) {
  return orNotFound(getImportJob(db, panel.id, jobId), `No job "${jobId}" in panel "${panel.id}"`);
}

const readJob = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/jobs/:job",
  role: "viewer",
  summary: "A bulk upload job: status, counters, progress, error report link, callback outcome",
  async handle({ env, path, panel, db }) {
    return importJobView(await jobOfPanel(db, panel, path.job));
  },
});

const downloadErrorReport = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/jobs/:job/errors.csv",
  role: "viewer",
  summary: "The job's error report (CSV: row, column, reason, then the refused row)",
  async handle({ env, path, panel, db }) {
    const job = await jobOfPanel(db, panel, path.job);
    const report = await openErrorReport(env.FILES, job);
    if (!report.ok) throw notFound(report.reason);
    return csvAttachment(report.body, report.size, `${job.id}-errors.csv`);
  },
});

export const jobRoutes = [readJob, downloadErrorReport];
