import { refused, succeeded, type Result } from "../../lib/problems";
import { getImportJob } from "../../store/imports";
import type { ShardDb } from "../../store/shards";
import { openErrorReport, type StoredFile } from "./error-report";
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

/**
 * The job's error report to download as `fileName`. Refused (not_found) with field `job` when
 * the panel has no job by that id, and with no field, saying why, when the job has no report:
 * the admin API words the first its own way (admin/jobs.ts).
 */
export async function importErrorReport(files: R2Bucket, db: ShardDb, panelId: string, jobId: string): Promise<Result<StoredFile & { fileName: string }>> {
  const job = await getImportJob(db, panelId, jobId);
  if (!job) return refused("not_found", [{ field: "job", message: "no such job" }], `No import job "${jobId}" in this panel`);
  const report = await openErrorReport(files, job);
  return report.ok ? succeeded({ ...report.value, fileName: `${job.id}-errors.csv` }) : report;
}
