import { refused, succeeded, type Result } from "../../lib/problems";
import type { ImportJob } from "../../store/imports";

/** A stored file to answer as a download. */
export type StoredFile = { body: ReadableStream; size: number };

/** The stored error report of a job; refused (not_found, saying why) when there is none. */
export async function openErrorReport(files: R2Bucket, job: ImportJob): Promise<Result<StoredFile>> {
  if (!job.errorReportKey) {
    const why = job.phase === "done" || job.phase === "notify" ? "this job refused no rows" : "the report is written when the job ends";
    return refused("not_found", [], `No error report for job "${job.id}": ${why}`);
  }
  const object = await files.get(job.errorReportKey);
  if (!object) return refused("not_found", [], `The error report of job "${job.id}" is no longer stored`);
  return succeeded({ body: object.body, size: object.size });
}
