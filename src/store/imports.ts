import type { ShardDb } from "./shards";
import type { ColumnMapping, ColumnPlan } from "../domain/imports";
import type { AttributeValue } from "../domain/attributes";
import { jsonArrays } from "./json-arrays";
import { batchWithJsonEach, type JsonEach } from "./json-each";
import { importedContactsStatement } from "./contacts";
import { clearedMembershipsStatement } from "./lists";
import { uuidV7 } from "../lib/random";

export type ImportStatus = "queued" | "running" | "completed" | "failed";
export type ImportPhase = "fetch" | "header" | "rows" | "report" | "notify" | "done";
export type CallbackState = "none" | "pending" | "sending" | "sent" | "failed";
/** Who started a job: the API's bulk upload, the panel (a list's upload or URL import), a campaign's contact file. */
export type ImportVia = "api" | "panel" | "broadcast";

/** One file of a job: downloaded from `url` into `key`, or already in R2 at `key`. */
export interface ImportSource {
  url?: string;
  key: string;
  /** Shown in the error report of a job of several files. */
  name: string;
  /** The engine downloaded it, so it deletes it when the job is done. */
  owned: boolean;
  size?: number;
  /** Where the first data row starts (after the BOM and the header row). */
  dataOffset?: number;
  /** Row number of the header row (1 unless blank lines come first). */
  headerRow?: number;
}

export interface ImportJob {
  id: string;
  panelId: string;
  status: ImportStatus;
  phase: ImportPhase;
  reason: string | null;
  sources: ImportSource[];
  plan: ColumnPlan | null;
  mapping: ColumnMapping | null;
  via: ImportVia;
  listId: number | null;
  notifyEmails: string[];
  callbackUrl: string | null;
  callbackState: CallbackState;
  callbackStatus: number | null;
  callbackError: string | null;
  callbackAt: number | null;
  origin: string;
  seq: number;
  sourceIndex: number;
  byteOffset: number;
  rowNumber: number;
  total: number;
  created: number;
  updated: number;
  failed: number;
  errorReportKey: string | null;
  attempts: number;
  lastError: string | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  updatedAt: number;
}

interface ImportJobRow {
  id: string;
  panel_id: string;
  status: ImportStatus;
  phase: ImportPhase;
  reason: string | null;
  sources: string;
  columns: string | null;
  mapping: string | null;
  via: ImportVia;
  list_id: number | null;
  notify_emails: string;
  callback_url: string | null;
  callback_state: CallbackState;
  callback_status: number | null;
  callback_error: string | null;
  callback_at: number | null;
  origin: string;
  seq: number;
  source_index: number;
  byte_offset: number;
  row_number: number;
  total: number;
  created: number;
  updated: number;
  failed: number;
  error_report_key: string | null;
  attempts: number;
  last_error: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  updated_at: number;
}

function jobFromRow(row: ImportJobRow): ImportJob {
  return {
    id: row.id,
    panelId: row.panel_id,
    status: row.status,
    phase: row.phase,
    reason: row.reason,
    sources: JSON.parse(row.sources) as ImportSource[],
    plan: row.columns === null ? null : (JSON.parse(row.columns) as ColumnPlan),
    mapping: row.mapping === null ? null : (JSON.parse(row.mapping) as ColumnMapping),
    via: row.via,
    listId: row.list_id,
    notifyEmails: JSON.parse(row.notify_emails) as string[],
    callbackUrl: row.callback_url,
    callbackState: row.callback_state,
    callbackStatus: row.callback_status,
    callbackError: row.callback_error,
    callbackAt: row.callback_at,
    origin: row.origin,
    seq: row.seq,
    sourceIndex: row.source_index,
    byteOffset: row.byte_offset,
    rowNumber: row.row_number,
    total: row.total,
    created: row.created,
    updated: row.updated,
    failed: row.failed,
    errorReportKey: row.error_report_key,
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    updatedAt: row.updated_at,
  };
}

export interface NewImportJob {
  id: string;
  panelId: string;
  sources: ImportSource[];
  listId: number | null;
  notifyEmails: string[];
  callbackUrl: string | null;
  origin: string;
  mapping: ColumnMapping | null;
  via: ImportVia;
  now: number;
}

export async function insertImportJob(db: ShardDb, job: NewImportJob): Promise<void> {
  await db
    .prepare(
      `INSERT INTO import_jobs (id, panel_id, status, phase, sources, list_id, notify_emails, callback_url, callback_state, origin, mapping, via, created_at, updated_at)
       VALUES (?, ?, 'queued', 'fetch', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .bind(
      job.id,
      job.panelId,
      JSON.stringify(job.sources),
      job.listId,
      JSON.stringify(job.notifyEmails),
      job.callbackUrl,
      job.callbackUrl === null ? "none" : "pending",
      job.origin,
      job.mapping === null ? null : JSON.stringify(job.mapping),
      job.via,
      job.now,
      job.now,
    )
    .run();
}

export async function getImportJob(db: ShardDb, panelId: string, jobId: string): Promise<ImportJob | null> {
  const row = await db.prepare("SELECT * FROM import_jobs WHERE panel_id = ? AND id = ?").bind(panelId, jobId).first<ImportJobRow>();
  return row ? jobFromRow(row) : null;
}

export interface ImportHistoryPage {
  jobs: ImportJob[];
  /** The last job's (created_at, id), to page on; null on the last page. */
  next: { createdAt: number; id: string } | null;
}

/**
 * A panel's import jobs (or one list's), newest first, `limit` a page after `before`: the import
 * history, whoever started them. Kept until housekeeping removes finished ones past retention.
 */
export async function importHistory(
  db: ShardDb,
  panelId: string,
  options: { listId?: number; before?: { createdAt: number; id: string }; limit: number },
): Promise<ImportHistoryPage> {
  const where = ["panel_id = ?1"];
  const binds: unknown[] = [panelId, options.limit + 1];
  if (options.listId !== undefined) {
    binds.push(options.listId);
    where.push(`list_id = ?${binds.length}`);
  }
  if (options.before) {
    binds.push(options.before.createdAt, options.before.id);
    where.push(`(created_at, id) < (?${binds.length - 1}, ?${binds.length})`);
  }
  const { results } = await db
    .prepare(`SELECT * FROM import_jobs WHERE ${where.join(" AND ")} ORDER BY created_at DESC, id DESC LIMIT ?2`)
    .bind(...binds)
    .all<ImportJobRow>();
  const jobs = results.slice(0, options.limit).map(jobFromRow);
  const last = jobs.at(-1);
  return { jobs, next: results.length > options.limit && last ? { createdAt: last.createdAt, id: last.id } : null };
}

/**
 * Moves a job from one phase to the next, with whatever else changes with it, only if it is
 * still where the caller read it (phase and chunk count). Answers the job as it now is, or null
 * when another consumer moved it.
 */
export async function advanceImportJob(
  db: ShardDb,
  job: Pick<ImportJob, "id" | "panelId" | "phase" | "seq">,
  next: ImportPhase,
  changes: Partial<{
    status: ImportStatus;
    reason: string;
    sources: ImportSource[];
    plan: ColumnPlan;
    byteOffset: number;
    rowNumber: number;
    errorReportKey: string;
    startedAt: number;
    finishedAt: number;
  }>,
  now: number,
): Promise<ImportJob | null> {
  const row = await db
    .prepare(
      `UPDATE import_jobs SET phase = ?3,
         status = COALESCE(?4, status), reason = COALESCE(?5, reason), sources = COALESCE(?6, sources),
         columns = COALESCE(?7, columns), byte_offset = COALESCE(?8, byte_offset), row_number = COALESCE(?9, row_number),
         error_report_key = COALESCE(?10, error_report_key), started_at = COALESCE(started_at, ?11),
         finished_at = COALESCE(finished_at, ?12), attempts = 0, updated_at = ?13
       WHERE panel_id = ?1 AND id = ?2 AND phase = ?14 AND seq = ?15
       RETURNING *`,
    )
    .bind(
      job.panelId,
      job.id,
      next,
      changes.status ?? null,
      changes.reason ?? null,
      changes.sources ? JSON.stringify(changes.sources) : null,
      changes.plan ? JSON.stringify(changes.plan) : null,
      changes.byteOffset ?? null,
      changes.rowNumber ?? null,
      changes.errorReportKey ?? null,
      changes.startedAt ?? null,
      changes.finishedAt ?? null,
      now,
      job.phase,
      job.seq,
    )
    .first<ImportJobRow>();
  return row ? jobFromRow(row) : null;
}

/**
 * Takes the job for one step: only when no live lease holds it, marking a queued job running.
 * Returns the job, "held" while another consumer's lease runs, or null when there is no
 * unfinished job.
 */
export async function leaseImportJob(
  db: ShardDb,
  ref: { panelId: string; jobId: string },
  lease: string,
  now: number,
  until: number,
): Promise<ImportJob | "held" | null> {
  const row = await db
    .prepare(
      `UPDATE import_jobs SET lease = ?3, leased_until = ?4,
         status = CASE WHEN status = 'queued' THEN 'running' ELSE status END,
         started_at = COALESCE(started_at, ?5),
         updated_at = CASE WHEN status = 'queued' THEN ?5 ELSE updated_at END
       WHERE panel_id = ?1 AND id = ?2 AND phase <> 'done' AND (leased_until IS NULL OR leased_until <= ?5)
       RETURNING *`,
    )
    .bind(ref.panelId, ref.jobId, lease, until, now)
    .first<ImportJobRow>();
  if (row) return jobFromRow(row);
  const job = await getImportJob(db, ref.panelId, ref.jobId);
  return job && job.phase !== "done" ? "held" : null;
}

/** How many of the panel's jobs other than `exceptJobId` a consumer holds right now (per-panel fairness). */
export async function countHeldImports(db: ShardDb, panelId: string, exceptJobId: string, now: number): Promise<number> {
  const row = await db
    .prepare("SELECT COUNT(*) AS n FROM import_jobs WHERE panel_id = ? AND id <> ? AND phase <> 'done' AND leased_until > ?")
    .bind(panelId, exceptJobId, now)
    .first<{ n: number }>();
  return row?.n ?? 0;
}

/** The heartbeat of a running step: false when the lease is no longer this step's. */
export async function renewImportLease(db: ShardDb, ref: { panelId: string; jobId: string }, lease: string, until: number): Promise<boolean> {
  const result = await db.prepare("UPDATE import_jobs SET leased_until = ? WHERE panel_id = ? AND id = ? AND lease = ?").bind(until, ref.panelId, ref.jobId, lease).run();
  return result.meta.changes > 0;
}

/** Ends a step's hold on the job; the time counts as activity, so the re-drive waits for the next message. */
export async function releaseImportLease(db: ShardDb, ref: { panelId: string; jobId: string }, lease: string, now: number): Promise<void> {
  await db
    .prepare("UPDATE import_jobs SET lease = NULL, leased_until = NULL, updated_at = MAX(updated_at, ?) WHERE panel_id = ? AND id = ? AND lease = ?")
    .bind(now, ref.panelId, ref.jobId, lease)
    .run();
}

/**
 * Counts a failed attempt (an exception in the consumer, a transient download error) and
 * returns how many came in a row; any progress resets the count.
 */
export async function recordImportAttempt(db: ShardDb, panelId: string, jobId: string, error: string, now: number): Promise<number> {
  const row = await db
    .prepare(
      `UPDATE import_jobs SET attempts = attempts + 1, last_error = ?, updated_at = ?
       WHERE panel_id = ? AND id = ? AND phase <> 'done' RETURNING attempts`,
    )
    .bind(error.slice(0, 1000), now, panelId, jobId)
    .first<{ attempts: number }>();
  return row?.attempts ?? 0;
}

/** A row to upsert, as the upsert's JSON array holds it: the contact's key, then its attributes. */
/** A contact of an import chunk; its bucket is contactBucket of the key (decision 0038). */
export type ImportedRow = readonly [key: string, attrs: Record<string, AttributeValue>, bucket: number];

export interface RefusedRowLine {
  row: number;
  /** The error report line of the row (CSV, no line end). */
  line: string;
}

export interface ChunkCommit {
  /** The job's chunk count when the chunk was read. */
  seq: number;
  sourceIndex: number;
  rows: readonly ImportedRow[];
  /** Data rows of the chunk (blank lines excluded), imported or refused. */
  records: number;
  refused: number;
  /** Lines for the error report (the report may hold fewer than `refused`). */
  errorLines: RefusedRowLine[];
  /** Where the next chunk starts. */
  next: { sourceIndex: number; byteOffset: number; rowNumber: number };
  listId: number | null;
  now: number;
}

/** Report lines of a JSON array of [row, line]: ?1 panel, ?2 job, ?3 source. */
const errorLinesSql = (each: JsonEach) => `INSERT OR REPLACE INTO import_errors (panel_id, job_id, source_index, row_number, line)
  SELECT ?1, ?2, ?3, r.value ->> 0, r.value ->> 1 FROM ${each}(?4) AS r`;

/**
 * Rows per upsert, as JSON text: a few statements per chunk. One array per chunk (220 KB in
 * bench:import) cost no less CPU but raised workerd's peak memory by about 100 MiB.
 */
const UPSERT_JSON_CHARS = 100_000;

/** A chunk's D1 batch, its arrays' JSON made once, for whichever table function reads them. */
export interface ChunkStatements {
  /** How many statements the batch holds, whichever function reads the arrays. */
  count: number;
  /** `createdElsewhere`: contacts the chunk's parts on other shards created (counted with the home's). */
  build(each: JsonEach, createdElsewhere?: number): D1PreparedStatement[];
}

/** The statements membershipStatements makes (a batch's size is counted before it is built). */
const MEMBERSHIP_STATEMENTS = 3;

/**
 * A chunk's list memberships, with a proof-of-consent record each (issue 45, item 5), for the
 * contacts of `keysJson` (a JSON array of keys) on `db`: ?1 panel, ?2 list, ?3 keys, ?4 time.
 * The consent record is found before the membership it names is added, so a member already
 * there gets none, and a chunk written again adds neither twice. Ids: the chunk's time-ordered
 * uuid and the contact id (unique per region), unique per chunk.
 */
function membershipStatements(db: ShardDb, jobId: string, panelId: string, listId: number, keysJson: string, now: number): D1PreparedStatement[] {
  return [
    // Members an emptying of the list has yet to reach are made anew (and get their consent record).
    clearedMembershipsStatement(db, panelId, JSON.stringify([listId]), keysJson),
    db
      .prepare(
        `INSERT INTO consent_records (panel_id, id, contact_id, kind, list_id, topic, via, via_id, ip, user_agent, text, at)
         SELECT c.panel_id, ?5 || '.' || c.id, c.id, 'subscribe', l.id, NULL, 'import', ?6, NULL, NULL, '', ?4 FROM lists l
         JOIN contacts c ON c.panel_id = l.panel_id AND c.pk_value IN (SELECT value FROM json_each(?3))
         WHERE l.panel_id = ?1 AND l.id = ?2 AND l.deleted_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM list_members m WHERE m.list_id = l.id AND m.contact_id = c.id)`,
      )
      .bind(panelId, listId, keysJson, now, uuidV7(now), jobId),
    db
      .prepare(
        `INSERT OR IGNORE INTO list_members (list_id, contact_id, panel_id, added_at, bucket)
         SELECT l.id, c.id, c.panel_id, ?4, c.bucket FROM lists l
         JOIN contacts c ON c.panel_id = l.panel_id AND c.pk_value IN (SELECT value FROM json_each(?3))
         WHERE l.panel_id = ?1 AND l.id = ?2 AND l.deleted_at IS NULL`,
      )
      .bind(panelId, listId, keysJson, now),
  ];
}

/**
 * The statements that commit one chunk in one D1 batch (one transaction): the contacts, their
 * list memberships with a consent record each, the refused rows' report lines and the checkpoint with the counters. The
 * first statement claims the chunk: it moves `seq` on only if the job is still at the chunk the
 * caller read and otherwise sets it to NULL, which the NOT NULL column refuses, so the whole
 * batch rolls back. A chunk delivered twice, or read by two consumers at once, is therefore
 * written and counted once. "created" is counted as the contacts whose id is above the highest
 * id before the batch (ids only grow, and D1 runs one batch at a time); every other imported
 * row, repeats of a key within the file included, is "updated".
 *
 * For a panel whose partitions span shards, `rows` are the home's part only; the other parts
 * were committed before (importPartStatements), and their "created" is handed to `build`.
 * `records` and `refused` are the whole chunk's.
 */
export function importChunkStatements(db: ShardDb, job: Pick<ImportJob, "id" | "panelId">, chunk: ChunkCommit): ChunkStatements {
  const upserts = jsonArrays(chunk.rows, UPSERT_JSON_CHARS);
  const errorLines = jsonArrays(chunk.errorLines.map((line) => [line.row, line.line]));
  // One parameter carries every key of the chunk (a JSON array) instead of 100-key IN lists.
  const listKeys = chunk.listId !== null && chunk.rows.length > 0 ? JSON.stringify(chunk.rows.map((row) => row[0])) : null;
  const build = (each: JsonEach, createdElsewhere = 0): D1PreparedStatement[] => [
    db
      .prepare(
        `UPDATE import_jobs SET seq = CASE WHEN phase = 'rows' AND seq = ?3 THEN ?3 + 1 END,
           contact_mark = (SELECT COALESCE(MAX(id), 0) FROM contacts)
         WHERE panel_id = ?1 AND id = ?2`,
      )
      .bind(job.panelId, job.id, chunk.seq),
    ...upserts.map((part) => importedContactsStatement(db, each, job.panelId, chunk.now, part.json)),
    ...(listKeys !== null ? membershipStatements(db, job.id, job.panelId, chunk.listId!, listKeys, chunk.now) : []),
    ...errorLines.map((part) => db.prepare(errorLinesSql(each)).bind(job.panelId, job.id, chunk.sourceIndex, part.json)),
    db
      .prepare(
        // Every contact above the mark was inserted by this batch (D1 runs one at a time), so
        // they are this panel's: counting the id range needs no look at the rows themselves.
        // ?10: the contacts the chunk's parts on other shards created.
        `UPDATE import_jobs SET source_index = ?3, byte_offset = ?4, row_number = ?5,
           total = total + ?6, failed = failed + ?7,
           created = created + fresh.n + ?10, updated = updated + ?8 - fresh.n - ?10,
           attempts = 0, updated_at = ?9
         FROM (SELECT COUNT(*) AS n FROM contacts
               WHERE id > (SELECT contact_mark FROM import_jobs WHERE panel_id = ?1 AND id = ?2)) AS fresh
         WHERE import_jobs.panel_id = ?1 AND import_jobs.id = ?2`,
      )
      .bind(
        job.panelId,
        job.id,
        chunk.next.sourceIndex,
        chunk.next.byteOffset,
        chunk.next.rowNumber,
        chunk.records,
        chunk.refused,
        chunk.records - chunk.refused,
        chunk.now,
        createdElsewhere,
      ),
  ];
  return { count: 2 + upserts.length + (listKeys !== null ? MEMBERSHIP_STATEMENTS : 0) + errorLines.length, build };
}

/** A chunk's rows whose partition is on a shard other than the panel's home (decision 0038 step 3). */
export interface ChunkPart {
  rows: readonly ImportedRow[];
  listId: number | null;
  now: number;
}

/** A part's D1 batch, as ChunkStatements. */
export interface PartStatements {
  count: number;
  build(each: JsonEach): D1PreparedStatement[];
}

/**
 * The statements that write one part of a chunk on its partition's shard, in one batch: the
 * contacts, their memberships of the list's mirror row there with a consent record each. No
 * claim and no checkpoint: the job's state is on the home, whose batch commits after every part
 * landed. A part written again (its home batch failed, or another consumer holds the chunk)
 * writes nothing twice: the upsert, the membership and its consent record are idempotent.
 * "Created" is counted as the home's chunk counts it: the shard's highest contact id is marked
 * first (import_part_marks, shard migration 0114), and the last statement counts the ids above
 * it (D1 runs one batch at a time, so they are this batch's) as it deletes the mark; a part
 * written again creates none and counts its contacts as updated.
 */
export function importPartStatements(db: ShardDb, job: Pick<ImportJob, "id" | "panelId">, part: ChunkPart): PartStatements {
  const upserts = jsonArrays(part.rows, UPSERT_JSON_CHARS);
  const keysJson = part.listId === null ? null : JSON.stringify([...new Set(part.rows.map((row) => row[0]))]);
  const build = (each: JsonEach): D1PreparedStatement[] => [
    db
      .prepare(
        `INSERT INTO import_part_marks (job_id, mark) VALUES (?1, (SELECT COALESCE(MAX(id), 0) FROM contacts))
         ON CONFLICT (job_id) DO UPDATE SET mark = excluded.mark`,
      )
      .bind(job.id),
    ...upserts.map((array) => importedContactsStatement(db, each, job.panelId, part.now, array.json)),
    ...(keysJson !== null ? membershipStatements(db, job.id, job.panelId, part.listId!, keysJson, part.now) : []),
    db.prepare("DELETE FROM import_part_marks WHERE job_id = ?1 RETURNING (SELECT COUNT(*) FROM contacts WHERE id > import_part_marks.mark) AS n").bind(job.id),
  ];
  return { count: 2 + upserts.length + (part.listId !== null ? MEMBERSHIP_STATEMENTS : 0), build };
}

/** Runs a part's statements (importPartStatements); answers the contacts it created. */
export async function commitImportPart(db: ShardDb, statements: PartStatements): Promise<{ created: number }> {
  const results = await batchWithJsonEach<{ n: number }>(db, statements.build);
  return { created: results.at(-1)!.results[0]?.n ?? 0 };
}

/**
 * Runs a chunk's statements (importChunkStatements): "stale" when another consumer committed
 * that chunk first. `createdElsewhere`: what its parts on other shards created.
 */
export async function commitImportStatements(db: ShardDb, statements: ChunkStatements, createdElsewhere = 0): Promise<"committed" | "stale"> {
  try {
    await batchWithJsonEach(db, (each) => statements.build(each, createdElsewhere));
    return "committed";
  } catch (error) {
    if (error instanceof Error && /NOT NULL constraint failed: import_jobs\.seq/i.test(error.message)) return "stale";
    throw error;
  }
}

/** A page of the error report's lines, in file order. */
export async function readErrorLines(
  db: ShardDb,
  panelId: string,
  jobId: string,
  after: { sourceIndex: number; row: number },
  limit: number,
): Promise<Array<{ sourceIndex: number; row: number; line: string }>> {
  const { results } = await db
    .prepare(
      `SELECT source_index, row_number, line FROM import_errors
       WHERE panel_id = ?1 AND job_id = ?2 AND (source_index, row_number) > (?3, ?4)
       ORDER BY source_index, row_number LIMIT ?5`,
    )
    .bind(panelId, jobId, after.sourceIndex, after.row, limit)
    .all<{ source_index: number; row_number: number; line: string }>();
  return results.map((r) => ({ sourceIndex: r.source_index, row: r.row_number, line: r.line }));
}

export async function deleteErrorLines(db: ShardDb, panelId: string, jobId: string): Promise<void> {
  await db.prepare("DELETE FROM import_errors WHERE panel_id = ? AND job_id = ?").bind(panelId, jobId).run();
}

/** Claims the job's one callback; false when it was already claimed (sent or being sent). */
export async function claimImportCallback(db: ShardDb, panelId: string, jobId: string, now: number): Promise<boolean> {
  const result = await db
    .prepare("UPDATE import_jobs SET callback_state = 'sending', callback_at = ? WHERE panel_id = ? AND id = ? AND callback_state = 'pending'")
    .bind(now, panelId, jobId)
    .run();
  return result.meta.changes > 0;
}

export async function recordImportCallback(
  db: ShardDb,
  panelId: string,
  jobId: string,
  outcome: { state: "sent" | "failed"; status: number | null; error: string | null },
  now: number,
): Promise<void> {
  await db
    .prepare(
      `UPDATE import_jobs SET callback_state = ?, callback_status = ?, callback_error = ?, callback_at = ?
       WHERE panel_id = ? AND id = ?`,
    )
    .bind(outcome.state, outcome.status, outcome.error, now, panelId, jobId)
    .run();
}

/**
 * Unfinished jobs nobody holds (no lease, or one whose holder stopped renewing it) and without
 * activity since `quietSince` (a message lost before it started a step), each marked as
 * re-driven now so the next cron run leaves it alone for a while.
 */
export async function claimStalledImports(db: ShardDb, quietSince: number, now: number, limit: number): Promise<Array<{ id: string; panelId: string }>> {
  const { results } = await db
    .prepare(
      `UPDATE import_jobs SET updated_at = ?1
       WHERE id IN (SELECT id FROM import_jobs
                    WHERE phase <> 'done' AND updated_at < ?2 AND (leased_until IS NULL OR leased_until <= ?1)
                    LIMIT ?3)
       RETURNING id, panel_id`,
    )
    .bind(now, quietSince, limit)
    .all<{ id: string; panel_id: string }>();
  return results.map((r) => ({ id: r.id, panelId: r.panel_id }));
}
