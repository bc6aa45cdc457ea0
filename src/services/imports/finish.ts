import { panelDb } from "../access/shards";
import { sendNotification } from "../channels/notifications";
import { formatCsvRecord } from "../../domain/csv";
import { errorReportHeader } from "../../domain/imports";
import { fetchOutbound } from "../../lib/outbound";
import { R2Upload } from "../../lib/r2-upload";
import { claimImportCallback, deleteErrorLines, readErrorLines, recordImportCallback, type ImportJob } from "../../store/imports";
import { callbackBody, summaryEmail } from "./view";

const REPORT_PAGE_ROWS = 5000;
const CALLBACK_TIMEOUT_MS = 10_000;
const encoder = new TextEncoder();

export function errorReportKey(job: Pick<ImportJob, "panelId" | "id">): string {
  return `imports/${job.panelId}/${job.id}/errors.csv`;
}

/**
 * Assembles the error report (CONTRACT 2.3) from the refused rows kept in D1 into one CSV
 * object in R2, page by page. Running it again writes the same object.
 */
export async function writeErrorReport(env: Env, job: ImportJob): Promise<string> {
  const db = await panelDb(env, job.panelId);
  const key = errorReportKey(job);
  const upload = new R2Upload(env.FILES, key, {
    httpMetadata: { contentType: "text/csv; charset=utf-8", contentDisposition: `attachment; filename="${job.id}-errors.csv"` },
  });
  try {
    const header = job.plan ? errorReportHeader(job.plan, job.sources.length > 1) : ["row", "column", "reason"];
    await upload.write(encoder.encode(`${formatCsvRecord(header)}\r\n`));
    let after = { sourceIndex: -1, row: -1 };
    for (;;) {
      const page = await readErrorLines(db, job.panelId, job.id, after, REPORT_PAGE_ROWS);
      if (page.length === 0) break;
      await upload.write(encoder.encode(`${page.map((line) => line.line).join("\r\n")}\r\n`));
      const last = page[page.length - 1]!;
      after = { sourceIndex: last.sourceIndex, row: last.row };
    }
    await upload.close();
  } catch (error) {
    await upload.abort().catch(() => undefined);
    throw error;
  }
  return key;
}

/** The summary email, at most once per job (the dedupe key holds across retries). */
export async function sendImportSummary(env: Env, job: ImportJob): Promise<void> {
  if (job.notifyEmails.length === 0) return;
  const { subject, text } = summaryEmail(job);
  await sendNotification(env, { panelId: job.panelId, kind: "import_summary", to: job.notifyEmails, subject, text, dedupeKey: `import:${job.id}`, capped: true });
}

/**
 * POSTs the job's outcome to `callback` once: the send is claimed in D1 first, so a retried
 * step never posts twice. A failure is recorded on the job and changes nothing else.
 */
export async function postImportCallback(env: Env, job: ImportJob, now: () => number): Promise<void> {
  const db = await panelDb(env, job.panelId);
  if (!job.callbackUrl || !(await claimImportCallback(db, job.panelId, job.id, now()))) return;
  let outcome: { state: "sent" | "failed"; status: number | null; error: string | null };
  try {
    const response = await fetchOutbound(
      env,
      job.callbackUrl,
      { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(callbackBody(job)) },
      { timeoutMs: CALLBACK_TIMEOUT_MS },
    );
    await response.body?.cancel();
    outcome = response.ok
      ? { state: "sent", status: response.status, error: null }
      : { state: "failed", status: response.status, error: `the callback answered HTTP ${response.status}` };
  } catch (error) {
    outcome = { state: "failed", status: null, error: error instanceof Error ? error.message : String(error) };
  }
  await recordImportCallback(db, job.panelId, job.id, outcome, now());
}

/** Leaves nothing behind but the job row and its report: refused-row lines and downloaded copies. */
export async function cleanUpImport(env: Env, job: ImportJob): Promise<void> {
  const db = await panelDb(env, job.panelId);
  await deleteErrorLines(db, job.panelId, job.id);
  const owned = job.sources.filter((source) => source.owned).map((source) => source.key);
  if (owned.length) await env.FILES.delete(owned);
}
