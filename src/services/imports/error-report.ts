import type { ImportJob } from "../../store/imports";

export type ErrorReport = { ok: true; body: ReadableStream; size: number } | { ok: false; reason: string };

/** The stored error report of a job, or why there is none. */
export async function openErrorReport(files: R2Bucket, job: ImportJob): Promise<ErrorReport> {
  if (!job.errorReportKey) {
    const why = job.phase === "done" || job.phase === "notify" ? "this job refused no rows" : "the report is written when the job ends";
    return { ok: false, reason: `No error report for job "${job.id}": ${why}` };
  }
  const object = await files.get(job.errorReportKey);
  if (!object) return { ok: false, reason: `The error report of job "${job.id}" is no longer stored` };
  return { ok: true, body: object.body, size: object.size };
}
