import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { DEFAULT_TUNING, importNudge, importQueueHandler, newImportJob, type ImportRef, type ImportTuning, type StartImportOptions } from "../../src/services/imports";
import { getImportJob, insertImportJob, type ChunkCommit, type ImportedRow, type ImportJob } from "../../src/store/imports";
import type { TransferLimits } from "../../src/lib/transfer-limits";
import { contactBucket } from "../../src/domain/partitions";
import { apiFor, call, receiver, type TestPanel, panelData } from "./helpers";

/** Puts a file on the loopback receiver; returns the URL a bulk upload's `path` names. */
export async function hostFile(body: string | Uint8Array, contentType = "text/csv"): Promise<string> {
  return receiver.putFile(`import-${crypto.randomUUID()}.csv`, body, contentType);
}

/** Waits until the job has finished everything, notifications included (the queue delivers for real); returns bulkstatus's job. */
export async function importFinished(panel: TestPanel, jobid: string): Promise<any> {
  for (let i = 0; i < 600; i++) {
    const job = await getImportJob(panelData, panel.id, jobid);
    if (job?.phase === "done") return (await apiFor(panel)("contact", "bulkstatus", { data: jobid })).body.job;
    await scheduler.wait(50);
  }
  throw new Error(`job ${jobid} did not finish`);
}

/** contact/bulkupload of `csv` through the API, to its end. */
export async function importCsv(panel: TestPanel, csv: string | Uint8Array, params: Record<string, unknown> = {}): Promise<any> {
  const started = await apiFor(panel)("contact", "bulkupload", { path: await hostFile(csv), ...params });
  expect(started.status).toBe(200);
  expect(started.body.result).toBe("Success");
  expect(started.body.jobid).toMatch(/^job_/);
  return importFinished(panel, started.body.jobid);
}

/** An error report (a job's `error_report` URL) as the panel's API key downloads it. */
export async function downloadErrorReport(url: string, apiKey: string): Promise<{ status: number; text: string; type: string | null }> {
  const response = await call(`${new URL(url).pathname}?apikey=${encodeURIComponent(apiKey)}`);
  return { status: response.status, text: await response.text(), type: response.headers.get("content-type") };
}

// The import engine driven by hand: a test stores a job and delivers its queue messages itself.

/** Small chunks and reads, so a few rows make many chunks, checkpoints and reads. */
export const TINY: ImportTuning = { ...DEFAULT_TUNING, chunkRows: 2, chunkBytes: 64, readBytes: 7, stepChunks: 1 };

/** Download limits for hostile sources: headers within 300 ms, at least 1 KiB/s over 300 ms windows, all within 3 s. */
export const TIGHT_DOWNLOADS: TransferLimits = { headersMs: 300, deadlineMs: 3_000, minBytesPerSecond: 1024, windowMs: 300 };

/** The Worker's env with an IMPORTS queue that records messages instead of delivering them. */
export function quietEnv(overrides: Partial<Env> = {}): { env: Env; sent: unknown[] } {
  const sent: unknown[] = [];
  const queue = {
    send: async (body: unknown) => void sent.push(body),
    sendBatch: async (messages: Array<{ body: unknown }>) => void sent.push(...messages.map((m) => m.body)),
  } as unknown as Queue;
  return { env: { ...env, IMPORTS: queue, ...overrides } as Env, sent };
}

/** A job stored but not queued. */
export async function storeImportJob(panelId: string, options: Omit<StartImportOptions, "panelId">, now = Date.now()): Promise<ImportRef> {
  const job = newImportJob({ panelId, origin: "https://api.test", now, ...options });
  await insertImportJob(panelData, job);
  return { panelId: job.panelId, jobId: job.id };
}

/** One queue message of the job, handled as the IMPORTS consumer would. */
export async function deliver(ref: ImportRef, handlerEnv: Env, tuning: ImportTuning = TINY, now: () => number = Date.now) {
  const batch = createMessageBatch("apiv2-imports-default", [{ id: crypto.randomUUID(), timestamp: new Date(), attempts: 1, body: importNudge(ref) }]);
  const ctx = createExecutionContext();
  await importQueueHandler(tuning, now)(batch, handlerEnv, ctx);
  return getQueueResult(batch, ctx);
}

export async function job(ref: ImportRef): Promise<ImportJob> {
  return (await getImportJob(panelData, ref.panelId, ref.jobId))!;
}

/** Delivers messages one after another, as the queue would, until the job is done. */
export async function runToEnd(ref: ImportRef, handlerEnv: Env, tuning: ImportTuning = TINY, now: () => number = Date.now): Promise<ImportJob> {
  for (let i = 0; i < 500; i++) {
    await deliver(ref, handlerEnv, tuning, now);
    const current = await job(ref);
    if (current.phase === "done") return current;
  }
  throw new Error("the job did not finish");
}

/** A chunk of `rows` read at the job's checkpoint (as `seq`), as the rows step hands it to importChunkStatements. */
export function chunkAt(at: ImportJob, rows: Array<readonly [string, ImportedRow[1]]>, seq = at.seq): ChunkCommit {
  return {
    seq,
    sourceIndex: 0,
    rows: importedRows(at.panelId, rows),
    records: rows.length,
    refused: 0,
    errorLines: [],
    next: { sourceIndex: 0, byteOffset: at.byteOffset, rowNumber: at.rowNumber },
    listId: null,
    now: Date.now(),
  };
}

/** Rows as the rows step makes them: [key, attributes] with the key's bucket. */
export function importedRows(panelId: string, rows: ReadonlyArray<readonly [string, ImportedRow[1]]>): ImportedRow[] {
  return rows.map(([key, attrs]) => [key, attrs, contactBucket(panelId, key)]);
}
