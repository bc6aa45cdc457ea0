import { panelDb, shardTask } from "../access/shards";
import type { ShardDb } from "../../store/shards";
import { afterContactsChanged } from "../contacts/reactions";
import { decodeOrKeep } from "../../lib/uri";
import { IMPORT_DOWNLOAD_LIMITS, transferLimitsFor } from "../../lib/transfer-limits";
import { newId, randomHex } from "../../lib/random";
import {
  advanceImportJob,
  claimStalledImports,
  countHeldImports,
  getImportJob,
  insertImportJob,
  leaseImportJob,
  recordImportAttempt,
  releaseImportLease,
  renewImportLease,
  type ImportJob,
  type ImportSource,
  type ImportVia,
  type NewImportJob,
} from "../../store/imports";
import type { ColumnMapping } from "../../domain/imports";
import type { QueueHandler } from "../../lib/tasks";
import { ImportFailure, TransientImportError } from "./errors";
import { downloadSource } from "./fetch";
import { cleanUpImport, errorReportKey, postImportCallback, sendImportSummary, writeErrorReport } from "./finish";
import { checkHeaders, DEFAULT_TUNING, importRows, type ImportTuning } from "./rows";

/**
 * The import engine (CONTRACT 2.3): a job row in D1 moves through fetch → header → rows →
 * report → notify → done. Queue messages on IMPORTS only name a job; each delivery runs one
 * bounded step from the job's checkpoint and queues the next. Every transition is a
 * compare-and-set on the job, and every chunk of rows commits with its checkpoint, so a
 * message delivered twice, two consumers at once, a crash or a cron re-drive never lose or
 * double a row.
 */

export interface ImportRef {
  panelId: string;
  jobId: string;
}

/** A file to import: a URL to download, or an object already in R2 (e.g. unzipped by a broadcast). */
export type ImportSourceInput = { url: string; name?: string } | { key: string; name?: string };

export interface StartImportOptions {
  panelId: string;
  /** One file, or several imported as one job; every file must have the same header row. */
  sources: readonly ImportSourceInput[];
  listId?: number | null;
  notifyEmails?: readonly string[];
  callbackUrl?: string | null;
  /** Origin for the error report link in the job, the email and the callback. */
  origin?: string;
  /** The panel's column mapping, checked by the caller (checkMapping); none: headers name attributes. */
  mapping?: ColumnMapping | null;
  /** Who starts the job, for the import history; the API's bulk upload when not said. */
  via?: ImportVia;
  now?: number;
}

/** Consecutive failed attempts (exceptions, transient download errors) before a job gives up. */
export const MAX_IMPORT_ATTEMPTS = 5;
/**
 * A job nobody holds and without activity for this long lost its message (the send after a
 * step failed, or the job was never started): the cron sends it a new one. A job a consumer
 * died holding is found by its lease instead (ImportTuning.leaseMs, renewed while the step runs).
 */
export const STALL_MS = 30 * 1000;
/**
 * Per-panel fairness: a panel's jobs hold at most this many of the IMPORTS consumer's
 * invocations at once (wrangler.toml gives it max_concurrency 10); a further job of that panel
 * waits DEFER_SECONDS and looks again, so slow or hostile sources of one panel never occupy
 * every slot (docs/architecture.md, imports).
 */
export const PANEL_IMPORT_SLOTS = 2;
export const DEFER_SECONDS = 15;

function sourceName(input: ImportSourceInput): string {
  if (input.name) return input.name;
  const path = "url" in input ? new URL(input.url).pathname : input.key;
  const last = path.split("/").filter(Boolean).pop();
  const fallback = "url" in input ? new URL(input.url).host : input.key;
  return last ? decodeOrKeep(last) : fallback;
}

/** The job row for `options`, not yet stored. */
export function newImportJob(options: StartImportOptions): NewImportJob {
  if (options.sources.length === 0) throw new Error("an import needs at least one source");
  const id = newId("job");
  const sources: ImportSource[] = options.sources.map((input, i) =>
    "url" in input
      ? { url: input.url, key: `imports/${options.panelId}/${id}/source-${i}.csv`, name: sourceName(input), owned: true }
      : { key: input.key, name: sourceName(input), owned: false },
  );
  return {
    id,
    panelId: options.panelId,
    sources,
    listId: options.listId ?? null,
    notifyEmails: [...(options.notifyEmails ?? [])],
    callbackUrl: options.callbackUrl ?? null,
    origin: options.origin ?? "",
    mapping: options.mapping ?? null,
    via: options.via ?? "api",
    now: options.now ?? Date.now(),
  };
}

export function importNudge(ref: ImportRef) {
  return { type: "import", panelId: ref.panelId, jobId: ref.jobId };
}

export function readImportNudge(body: unknown): ImportRef | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, jobId } = body as Record<string, unknown>;
  return type === "import" && typeof panelId === "string" && typeof jobId === "string" ? { panelId, jobId } : null;
}

/**
 * Starts an import in the background and returns its job id; progress is read with
 * getImportJob. Callers validate what they were given (URLs, list, addresses); the job itself
 * reports everything found in the files. Used by contact/bulkupload and by the broadcast upload.
 */
export async function startImport(env: Pick<Env, "IMPORTS">, db: ShardDb, options: StartImportOptions): Promise<string> {
  const job = newImportJob(options);
  await insertImportJob(db, job);
  // The job is stored: a failed send must not fail the call (a client retrying would import
  // twice). The cron finds the job never started and sends it again.
  try {
    await nudgeImport(env, { panelId: job.panelId, jobId: job.id });
  } catch (error) {
    console.error(`import ${job.id} stored but not enqueued; the re-drive will start it`, error);
  }
  return job.id;
}

/** "held": another consumer's lease holds the job; it goes on from there (or the cron, once the lease runs out). */
export type StepOutcome = "done" | "more" | "held";

/** Fails an unfinished job (from the state it is in now); its report and notifications still follow. */
async function failImport(env: Env, ref: ImportRef, reason: string, now: number): Promise<ImportJob | null> {
  const db = await panelDb(env, ref.panelId);
  const job = await getImportJob(db, ref.panelId, ref.jobId);
  if (!job || (job.phase !== "fetch" && job.phase !== "header" && job.phase !== "rows")) return null;
  return advanceImportJob(db, job, "report", { status: "failed", reason, finishedAt: now }, now);
}

/** Runs one phase; returns the job as it now is, "yield" to continue in a new message, null to stop. */
async function runPhase(env: Env, job: ImportJob, tuning: ImportTuning, deadline: number, now: () => number): Promise<ImportJob | "yield" | null> {
  const db = await panelDb(env, job.panelId);
  switch (job.phase) {
    case "fetch": {
      const sources = [...job.sources];
      for (const [i, source] of sources.entries()) {
        if (source.url === undefined || source.size !== undefined) continue;
        sources[i] = { ...source, size: await downloadSource(env, source, tuning.download ?? transferLimitsFor(env, IMPORT_DOWNLOAD_LIMITS)) };
        // Each download is recorded, so a job of several files never fetches one twice.
        if (!(await advanceImportJob(db, job, "fetch", { sources }, now()))) return null;
      }
      for (const [i, source] of sources.entries()) {
        if (source.size !== undefined) continue;
        const head = await env.FILES.head(source.key);
        if (!head) throw new ImportFailure(`The file "${source.name}" is not in storage`);
        sources[i] = { ...source, size: head.size };
      }
      return advanceImportJob(db, job, "header", { sources }, now());
    }
    case "header": {
      const { plan, sources } = await checkHeaders(env, job, tuning);
      const first = sources[0]!;
      return advanceImportJob(db, job, "rows", { plan, sources, byteOffset: first.dataOffset ?? 0, rowNumber: first.headerRow ?? 1 }, now());
    }
    case "rows": {
      const outcome = await importRows(env, job, tuning, deadline, now);
      // New members of the list left journey entries with their rows; every step's nudge
      // starts another drain, so a large upload enters its contacts in parallel. The reactions
      // read the home only, which is right for a panel whose contacts span shards only because
      // it has no running journey and no saved segment (refused, decision 0038's Status): the
      // membership trigger on a mirror finds no journey there (journeys are not mirrored), and
      // the drain and the rebuild below find nothing on the home.
      if (job.listId !== null && outcome.state !== "stale") await afterContactsChanged(env, { panelId: job.panelId, joinedList: true, rewritten: false, now: now() });
      if (outcome.state === "stale") return null;
      if (outcome.state === "yielded") return "yield";
      if (outcome.total === 0) throw new ImportFailure(job.sources.length > 1 ? "The files have a header row but no data rows" : "The file has a header row but no data rows");
      return advanceImportJob(db, { ...job, seq: outcome.seq }, "report", {}, now());
    }
    case "report": {
      // The rows changed contacts: segments are built again and segment journeys look at every contact again.
      await afterContactsChanged(env, { panelId: job.panelId, joinedList: false, rewritten: true, now: now() });
      const key = job.failed > 0 ? await writeErrorReport(env, job) : undefined;
      const status = job.status === "failed" ? "failed" : "completed";
      return advanceImportJob(db, job, "notify", { status, errorReportKey: key, finishedAt: now() }, now());
    }
    case "notify": {
      await sendImportSummary(env, job);
      await postImportCallback(env, job, now);
      await cleanUpImport(env, job);
      return advanceImportJob(db, job, "done", {}, now());
    }
    case "done":
      return null;
  }
}

/**
 * One bounded step of a job, under a lease renewed every heartbeat while it runs (so a slow
 * download is never taken for dead, and a consumer that died is noticed within the lease):
 * phases run until the job is done, the budget is spent ("more": queue another message) or
 * another consumer holds the job. A failure the job cannot recover from (ImportFailure) fails
 * the job here; anything else is thrown for the caller to count and retry.
 */
export async function runImportStep(env: Env, ref: ImportRef, tuning: ImportTuning = DEFAULT_TUNING, now: () => number = Date.now): Promise<StepOutcome> {
  const lease = randomHex(8);
  const db = await panelDb(env, ref.panelId);
  const leased = await leaseImportJob(db, ref, lease, now(), now() + tuning.leaseMs);
  if (leased === null) return "done";
  if (leased === "held") return "held";
  const heartbeat = setInterval(() => {
    renewImportLease(db, ref, lease, now() + tuning.leaseMs).catch((error) => console.error(`import ${ref.jobId}: lease not renewed`, error));
  }, tuning.heartbeatMs);
  try {
    return await runPhases(env, ref, leased, tuning, now);
  } finally {
    clearInterval(heartbeat);
    await releaseImportLease(db, ref, lease, now()).catch((error) => console.error(`import ${ref.jobId}: lease not released; it runs out`, error));
  }
}

async function runPhases(env: Env, ref: ImportRef, first: ImportJob, tuning: ImportTuning, now: () => number): Promise<StepOutcome> {
  let job = first;
  const deadline = now() + tuning.stepMs;
  for (;;) {
    let next: ImportJob | "yield" | null;
    try {
      next = await runPhase(env, job, tuning, deadline, now);
    } catch (error) {
      if (!(error instanceof ImportFailure)) throw error;
      next = await failImport(env, ref, error.message, now());
    }
    if (next === "yield") return "more";
    if (next === null || next.phase === "done") return "done";
    job = next;
    if (now() >= deadline) return "more";
  }
}

/**
 * After MAX_IMPORT_ATTEMPTS failed attempts in a row the job stops trying: an unfinished
 * import fails (with the transient reason, or a generic one for a fault of the service), and
 * a failing report or notification is skipped so the job still ends.
 */
async function giveUp(env: Env, ref: ImportRef, error: unknown, now: number): Promise<void> {
  const db = await panelDb(env, ref.panelId);
  const job = await getImportJob(db, ref.panelId, ref.jobId);
  if (!job) return;
  if (job.phase === "report") await advanceImportJob(db, job, "notify", { status: job.status === "failed" ? "failed" : "completed", finishedAt: now }, now);
  else if (job.phase === "notify") await advanceImportJob(db, job, "done", {}, now);
  else if (job.phase !== "done") {
    const reason =
      error instanceof TransientImportError
        ? error.message
        : `The import stopped after ${MAX_IMPORT_ATTEMPTS} failed attempts; the service logged the cause`;
    await failImport(env, ref, reason, now);
  }
}

export async function nudgeImport(env: Pick<Env, "IMPORTS">, ref: ImportRef, delaySeconds = 0): Promise<void> {
  await env.IMPORTS.send(importNudge(ref), delaySeconds ? { delaySeconds } : undefined);
}

/** The IMPORTS consumer: one step per message, then the next message if work remains. */
export function importQueueHandler(tuning: ImportTuning = DEFAULT_TUNING, now: () => number = Date.now): QueueHandler {
  return async (batch, env) => {
    for (const message of batch.messages) {
      const ref = readImportNudge(message.body);
      if (!ref) {
        console.error(`imports queue: message ${message.id} names no import job; retried`, message.body);
        message.retry();
        continue;
      }
      try {
        if ((await countHeldImports(await panelDb(env, ref.panelId), ref.panelId, ref.jobId, now())) >= PANEL_IMPORT_SLOTS) {
          // The panel's other jobs hold its share of the consumer: look again later (not an attempt).
          await nudgeImport(env, ref, DEFER_SECONDS);
          message.ack();
          continue;
        }
        if ((await runImportStep(env, ref, tuning, now)) === "more") await nudgeImport(env, ref);
        message.ack();
      } catch (error) {
        console.error(`import ${ref.jobId}: step failed`, error);
        const attempts = await recordImportAttempt(await panelDb(env, ref.panelId), ref.panelId, ref.jobId, error instanceof Error ? error.message : String(error), now());
        if (attempts >= MAX_IMPORT_ATTEMPTS) {
          await giveUp(env, ref, error, now());
          await nudgeImport(env, ref);
          message.ack();
        } else {
          message.retry({ delaySeconds: Math.min(300, 5 * 2 ** (attempts - 1)) });
        }
      }
    }
  };
}

export const handleImportQueue = importQueueHandler();

/**
 * A message of this job was dead-lettered: the queue gave up on it after its retries, which
 * the consumer itself never lets happen (it counts failures and gives up first), so the
 * consumer died each time. That counts as one failed attempt; past the limit the job gives
 * up. Either way it gets a new message. Returns what was done.
 */
export async function redriveDeadImport(env: Env, ref: ImportRef, now: number): Promise<string> {
  const db = await panelDb(env, ref.panelId);
  const job = await getImportJob(db, ref.panelId, ref.jobId);
  if (!job || job.phase === "done") return "nothing left: the job is done";
  const reason = "the queue gave up on the job's message after its retries";
  const attempts = await recordImportAttempt(db, ref.panelId, ref.jobId, reason, now);
  const gaveUp = attempts >= MAX_IMPORT_ATTEMPTS;
  if (gaveUp) await giveUp(env, ref, new Error(reason), now);
  await nudgeImport(env, ref);
  return gaveUp ? `attempt ${attempts}: gave up, nudged to finish` : `attempt ${attempts}: nudged`;
}

/** Cron: sends a new message to every unfinished job nobody holds that stopped moving (a lost message, a crash). */
// A sweep over every panel's jobs, shard by shard, as a cron must; each message still names its panel.
export const redriveStalledImports = shardTask("imports.redrive", async (env, db, _index, now) => {
  const stalled = await claimStalledImports(db, now - STALL_MS, now, 100);
  if (stalled.length) await env.IMPORTS.sendBatch(stalled.map((ref) => ({ body: importNudge({ panelId: ref.panelId, jobId: ref.id }) })));
});

export { DEFAULT_TUNING, errorReportKey, type ImportTuning };
