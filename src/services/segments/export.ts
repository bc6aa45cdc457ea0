import { formatCsvRecord } from "../../domain/csv";
import type { FieldProblem } from "../../domain/problems";
import { refused, succeeded, type Result } from "../../lib/problems";
import { newId, randomHex } from "../../lib/random";
import { sendAll } from "../../lib/tasks";
import type { Panel } from "../../store/panels";
import {
  claimStalledExports,
  commitExportPart,
  failSegmentExport,
  getSegmentExport,
  insertSegmentExport,
  leaseSegmentExport,
  recordExportAttempt,
  releaseExportLease,
  renewExportLease,
  setExportTotal,
  type ExportPart,
  type ExportRef,
  type SegmentExport,
} from "../../store/segment-exports";
import { getSegment, memberCount, segmentMembersPage, type Segment } from "../../store/segments";
import type { KeyedContact } from "../../store/contacts";
import { loadAttributeSchema } from "../../store/attributes";
import type { ShardDb } from "../../store/shards";
import { panelDb, panelHome, shardTask } from "../access/shards";
import { mergedContactPage, panelOwningShards, panelShardPlaces } from "../access/partitions";
import { buildSegment } from "./membership";
import { noSuchSegment } from "./definitions";

/**
 * Exports of a saved segment's members as CSV (CONTRACT 9 `POST …/segments/{id}/export`): a
 * background job on the IMPORTS queue. Each step holds the job by a lease renewed while it runs
 * (a heartbeat), finishes the segment's build if one is under way, then writes the next members
 * (by contact id, after the job's cursor) as one R2 object, a part of the file; the part counts
 * only once the job records it, conditionally on the lease and the cursor, so a redelivered or
 * duplicated nudge writes each member once. A lost nudge is found again by the cron (an
 * unfinished job untouched for STALL_MS). The download streams the parts in order.
 * The job lives on the home; a panel split over several shards (decision 0038) has its members
 * on each, so each page merges every shard's next members by contact id (ids are unique across
 * shards), a page a shard at most, and the total sums them.
 */

export interface ExportTuning {
  /** Time one step writes for before handing on to the next message. */
  stepMs: number;
  leaseMs: number;
  heartbeatMs: number;
  /** Members read per page, and at most per part. */
  pageRows: number;
  partRows: number;
}

export const EXPORT_TUNING: ExportTuning = { stepMs: 20_000, leaseMs: 45_000, heartbeatMs: 15_000, pageRows: 5_000, partRows: 50_000 };
/** An unfinished export nobody holds and untouched this long lost its nudge: the cron nudges it again. */
export const EXPORT_STALL_MS = 30_000;
/** Failed steps in a row after which the export fails. */
const MAX_EXPORT_ATTEMPTS = 5;
const PART_BYTES = 8 * 1024 * 1024;
const encoder = new TextEncoder();

export function exportNudge(ref: ExportRef) {
  return { type: "segment_export", panelId: ref.panelId, exportId: ref.exportId };
}

export function readExportNudge(body: unknown): ExportRef | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panelId, exportId } = body as Record<string, unknown>;
  return type === "segment_export" && typeof panelId === "string" && typeof exportId === "string" ? { panelId, exportId } : null;
}

async function nudgeExport(env: Pick<Env, "IMPORTS">, ref: ExportRef, delaySeconds = 0): Promise<void> {
  await env.IMPORTS.send(exportNudge(ref), delaySeconds ? { delaySeconds } : undefined);
}

/** Export ids carry their kind, so GET /jobs/{job} tells them from import jobs. */
export const isExportId = (id: string) => id.startsWith("exp_");

/**
 * Starts an export of the segment's members: the panel's primary key, then `attributes` (each
 * must be one of the panel's). The job is stored before its nudge is sent; a nudge that
 * cannot be sent is sent again by the cron.
 */
export async function startSegmentExport(
  env: Pick<Env, "IMPORTS">,
  db: ShardDb,
  panel: Pick<Panel, "id" | "primaryKey">,
  segment: Pick<Segment, "id">,
  attributes: readonly string[],
  now: number,
): Promise<Result<SegmentExport>> {
  const known = await loadAttributeSchema(db, panel.id);
  const problems = attributes.flatMap((name): FieldProblem[] => (known.has(name) ? [] : [{ field: "attributes", message: `no attribute named ${name} in this panel` }]));
  if (problems.length) return refused("invalid", problems);
  const columns = [panel.primaryKey, ...new Set(attributes.filter((name) => name !== panel.primaryKey))];
  const job = await insertSegmentExport(db, { id: newId("exp"), panelId: panel.id, segmentId: segment.id, columns }, now);
  try {
    await nudgeExport(env, { panelId: panel.id, exportId: job.id });
  } catch (error) {
    console.error(`segment export ${job.id} stored but not enqueued; the cron starts it`, error);
  }
  return succeeded(job);
}

/** The panel's "export this saved segment": as startSegmentExport, once the segment is found. */
export async function exportSavedSegment(
  env: Pick<Env, "IMPORTS">,
  db: ShardDb,
  panel: Pick<Panel, "id" | "primaryKey">,
  segmentId: string,
  attributes: readonly string[],
  now: number,
): Promise<Result<SegmentExport>> {
  const segment = await getSegment(db, panel.id, segmentId);
  if (!segment) return noSuchSegment(segmentId);
  return startSegmentExport(env, db, panel, segment, attributes, now);
}

function cell(value: unknown): string {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : String(value);
}

function partKey(job: Pick<SegmentExport, "panelId" | "id">, index: number, lease: string): string {
  return `exports/${job.panelId}/${job.id}/part-${String(index).padStart(5, "0")}-${lease}.csv`;
}

export type ExportStepOutcome = "done" | "more" | "held";

/** One step of an export under its lease: "more" when members remain (the caller nudges the next step). */
export async function runExportStep(env: Env, ref: ExportRef, tuning: ExportTuning = EXPORT_TUNING, now: () => number = Date.now): Promise<ExportStepOutcome> {
  const db = await panelDb(env, ref.panelId);
  const lease = randomHex(8);
  const leased = await leaseSegmentExport(db, ref, lease, now(), now() + tuning.leaseMs);
  if (leased === null) return "done";
  if (leased === "held") return "held";
  const heartbeat = setInterval(() => {
    renewExportLease(db, ref, lease, now() + tuning.leaseMs).catch((error) => console.error(`segment export ${ref.exportId}: lease not renewed`, error));
  }, tuning.heartbeatMs);
  try {
    return await writeParts(env, db, leased, lease, tuning, now);
  } finally {
    clearInterval(heartbeat);
    await releaseExportLease(db, ref, lease, now()).catch((error) => console.error(`segment export ${ref.exportId}: lease not released; it runs out`, error));
  }
}

async function writeParts(env: Env, db: ShardDb, job: SegmentExport, lease: string, tuning: ExportTuning, now: () => number): Promise<ExportStepOutcome> {
  const ref = { panelId: job.panelId, exportId: job.id };
  const deadline = now() + tuning.stepMs;
  const segment = await getSegment(db, job.panelId, job.segmentId);
  if (!segment) {
    await failSegmentExport(db, ref, "The segment was deleted before its export finished", now());
    return "done";
  }
  const { panel } = await panelHome(env, job.panelId);
  const places = panelShardPlaces(env, panel);
  // Each shard's members in its own buckets: a split's source keeps copies of the moved ones until cleaning (decision 0047).
  const owning = panelOwningShards(env, panel, places[0]!.db);
  for (const place of places) {
    // Members are being built (a new or edited segment) on this shard: the export waits for the whole of them.
    const here = place.home ? segment : await getSegment(place.db, job.panelId, job.segmentId);
    if (!here || here.buildCursor === null) continue;
    await buildSegment(env, here, now(), Math.max(0, deadline - now()), place.db);
    const again = await getSegment(place.db, job.panelId, job.segmentId);
    if (!again || again.buildCursor !== null) return "more";
  }
  if (job.total === null) {
    const counts = await Promise.all(owning.map((shard) => memberCount(shard.db, segment.id, shard.buckets)));
    await setExportTotal(db, ref, lease, counts.reduce((sum, n) => sum + n, 0));
  }

  let cursor = job.cursor;
  let partIndex = job.parts.length;
  for (;;) {
    const lines: string[] = partIndex === 0 ? [formatCsvRecord(job.columns)] : [];
    const from = cursor;
    let rows = 0;
    let bytes = 0;
    let finished = false;
    // At least a page per part, so every step moves the export on.
    do {
      const after = cursor;
      const page = await mergedContactPage<KeyedContact>(job.panelId, owning, (shard, last) => segmentMembersPage(shard, job.panelId, segment.id, last?.id ?? after, tuning.pageRows), (a, b) => a.id - b.id, tuning.pageRows);
      for (const member of page.rows) {
        const line = formatCsvRecord(job.columns.map((column, i) => (i === 0 ? member.key : cell(member.attributes[column]))));
        lines.push(line);
        bytes += line.length + 2;
      }
      rows += page.rows.length;
      // A short page the reads stopped (mergedContactPage's bound) goes on past where they reached.
      const reached = page.readTo ?? page.rows.at(-1);
      if (reached) cursor = reached.id;
      if (page.rows.length < tuning.pageRows && !page.readTo) {
        finished = true;
        break;
      }
    } while (rows < tuning.partRows && bytes < PART_BYTES && now() < deadline);
    let part: ExportPart | null = null;
    if (lines.length) {
      const body = encoder.encode(`${lines.join("\r\n")}\r\n`);
      part = { key: partKey(job, partIndex, lease), size: body.byteLength };
      await env.FILES.put(part.key, body, { httpMetadata: { contentType: "text/csv; charset=utf-8" } });
    }
    if (!(await commitExportPart(db, ref, { lease, from, to: cursor, rows, part, finished }, now()))) {
      // Another step moved the job (this one's lease ran out): its part is not the file's.
      if (part) await env.FILES.delete(part.key).catch(() => undefined);
      return "held";
    }
    if (finished) return "done";
    if (part) partIndex++;
    if (now() >= deadline) return "more";
  }
}

/**
 * A completed export's file, to download: its parts in order, as one stream of `size` bytes.
 * Refused (not_found) with field `job` when the panel has no export by that id, and with no field
 * when its file is gone; a conflict until the export is completed.
 */
export async function exportFile(files: R2Bucket, db: ShardDb, panelId: string, jobId: string): Promise<Result<{ job: SegmentExport; body: ReadableStream; size: number }>> {
  const job = await getSegmentExport(db, panelId, jobId);
  if (!job) return refused("not_found", [{ field: "job", message: "no such job" }], `No export job "${jobId}" in this panel`);
  if (job.status !== "completed") return refused("conflict", [], `The export is ${job.status}; its file can be downloaded once it is completed`);
  const size = job.parts.reduce((sum, part) => sum + part.size, 0);
  const keys = job.parts.map((part) => part.key);
  let reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  const open = async (key: string) => {
    const object = await files.get(key);
    if (!object) throw new Error(`segment export ${job.id}: its part ${key} is not in storage`);
    return object.body.getReader();
  };
  if (keys.length) {
    try {
      reader = await open(keys.shift()!);
    } catch {
      return refused("not_found", [], "The export's file is no longer in storage");
    }
  }
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (reader) {
        const chunk = await reader.read();
        if (!chunk.done) return controller.enqueue(chunk.value);
        reader = keys.length ? await open(keys.shift()!) : null;
      }
      controller.close();
    },
  });
  return succeeded({ job, body, size });
}

/** What GET /jobs/{job} shows of an export. */
export function segmentExportView(job: SegmentExport, downloadPath: string) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    jobid: job.id,
    type: "segment_export" as const,
    segment: job.segmentId,
    status: job.status,
    reason: job.reason,
    columns: job.columns,
    progress: { rows: job.rows, total: job.total ?? 0 },
    download: job.status === "completed" ? downloadPath : null,
    created_at: iso(job.createdAt),
    started_at: iso(job.startedAt),
    finished_at: iso(job.finishedAt),
    updated_at: iso(job.updatedAt),
  };
}

async function failedStep(env: Env, ref: ExportRef, error: unknown, now: number): Promise<"retry" | "failed"> {
  const db = await panelDb(env, ref.panelId);
  const attempts = await recordExportAttempt(db, ref, error instanceof Error ? error.message : String(error), now);
  if (attempts < MAX_EXPORT_ATTEMPTS) return "retry";
  await failSegmentExport(db, ref, `The export stopped after ${MAX_EXPORT_ATTEMPTS} failed attempts; the service logged the cause`, now);
  return "failed";
}

/** The export messages of the IMPORTS queue: one step each, then the next nudge while members remain. */
export function exportMessagesHandler(tuning: ExportTuning = EXPORT_TUNING, now: () => number = Date.now) {
  return async (messages: readonly Message<unknown>[], env: Env): Promise<void> => {
    for (const message of messages) {
      const ref = readExportNudge(message.body)!;
      try {
        if ((await runExportStep(env, ref, tuning, now)) === "more") await nudgeExport(env, ref);
        message.ack();
      } catch (error) {
        console.error(`segment export ${ref.exportId} of panel ${ref.panelId}: step failed`, error);
        const outcome = await failedStep(env, ref, error, now()).catch(() => "retry" as const);
        if (outcome === "failed") message.ack();
        else message.retry({ delaySeconds: 5 });
      }
    }
  };
}

export const handleExportMessages = exportMessagesHandler();

/** A dead-lettered export nudge: counts a failed attempt (the consumer died each time) and is nudged again while the job stays open. */
export async function redriveDeadExport(env: Env, ref: ExportRef, now: number): Promise<string> {
  const outcome = await failedStep(env, ref, new Error("the queue gave the nudge up after its retries"), now);
  if (outcome === "failed") return "export failed after its attempts";
  await nudgeExport(env, ref, 30);
  return "nudged again in 30 s";
}

/** Cron: nudges again the unfinished exports nobody holds that saw no activity for EXPORT_STALL_MS. */
export const segmentExportsRedrive = shardTask("segment-exports.redrive", async (env, db, _index, now) => {
  const stalled = await claimStalledExports(db, now - EXPORT_STALL_MS, now, 100);
  await sendAll(env.IMPORTS, stalled.map(exportNudge));
});
