import { getImportJob } from "../../store/imports";
import type { ShardDb } from "../../store/shards";
import { openErrorReport, type ErrorReport } from "./error-report";
import { importJobView } from "./view";

/**
 * A panel's import job as its readers see it (bulkstatus, the API's error report download,
 * the admin's job routes). A job of another panel answers as one that does not exist: null,
 * for the caller to say which of its inputs named it.
 */

/** The job's state and counters; null when the panel has no job by that id. */
export async function importJobStatus(db: ShardDb, panelId: string, jobId: string): Promise<ReturnType<typeof importJobView> | null> {
  const job = await getImportJob(db, panelId, jobId);
  return job && importJobView(job);
}

/** The job's error report to download as `fileName`, or why there is none; null when the panel has no job by that id. */
export async function importErrorReport(files: R2Bucket, db: ShardDb, panelId: string, jobId: string): Promise<(ErrorReport & { fileName: string }) | null> {
  const job = await getImportJob(db, panelId, jobId);
  return job && { ...(await openErrorReport(files, job)), fileName: `${job.id}-errors.csv` };
}
