import type { ShardDb } from "../../store/shards";
import type { KeyedSchema } from "../../domain/contacts";
import { startImport } from "../imports";
import { getImportJob } from "../../store/imports";

/**
 * The broadcast hands its contact files to the bulk-upload engine
 * (src/services/imports: a background job with its state in D1) through startContactImport and
 * asks after it with contactImportStatus, and nowhere else. The files are already validated
 * (headers, row counts, MD5) and stored in R2; the engine imports them into the new list as
 * one job. The publish cron waits while the job runs and fails the campaign if it fails.
 */
export interface ContactImportRequest {
  panelId: string;
  listId: number;
  schema: KeyedSchema;
  /** The validated CSV files, stored in R2 (header row first). */
  sources: ReadonlyArray<{ name: string; r2Key: string }>;
  now: number;
  /** Where the job's error report is linked from (`https://{base_url}`); none: a relative link. */
  origin?: string;
}

export interface ContactImportHandle {
  /** The import job's id (GET /admin/v1/panels/{panel}/jobs/{id}). */
  jobId: string;
}

export type ContactImportStatus = "running" | "completed" | "failed";

export async function startContactImport(env: Pick<Env, "IMPORTS">, db: ShardDb, request: ContactImportRequest): Promise<ContactImportHandle> {
  const jobId = await startImport(env, db, {
    panelId: request.panelId,
    sources: request.sources.map((source) => ({ key: source.r2Key, name: source.name })),
    listId: request.listId,
    via: "broadcast",
    now: request.now,
    ...(request.origin !== undefined ? { origin: request.origin } : {}),
  });
  return { jobId };
}

export async function contactImportStatus(db: ShardDb, panelId: string, jobId: string | null): Promise<ContactImportStatus> {
  // Every campaign gets a job when it is created; one without is a half-written creation.
  if (jobId === null) return "failed";
  const job = await getImportJob(db, panelId, jobId);
  if (!job) return "failed";
  if (job.phase !== "done") return "running";
  return job.status === "completed" ? "completed" : "failed";
}
