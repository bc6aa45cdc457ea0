import type { ShardDb } from "./shards";

/**
 * Exports of a saved segment's members (CSV in R2, parts written step by step). Every write
 * of a step is conditional on the step's lease and on the cursor it started from, so a
 * redelivered nudge, a step whose lease ran out or two consumers at once never write a member
 * twice or skip one.
 */

export type ExportStatus = "queued" | "running" | "completed" | "failed";

export interface ExportPart {
  key: string;
  size: number;
}

export interface SegmentExport {
  id: string;
  panelId: string;
  segmentId: string;
  columns: string[];
  status: ExportStatus;
  reason: string | null;
  total: number | null;
  rows: number;
  cursor: number;
  parts: ExportPart[];
  attempts: number;
  createdAt: number;
  updatedAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

interface ExportRow {
  id: string;
  panel_id: string;
  segment_id: string;
  columns: string;
  status: ExportStatus;
  reason: string | null;
  total: number | null;
  rows_written: number;
  cursor: number;
  parts: string;
  attempts: number;
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
}

const COLUMNS = "id, panel_id, segment_id, columns, status, reason, total, rows_written, cursor, parts, attempts, created_at, updated_at, started_at, finished_at";

function fromRow(row: ExportRow): SegmentExport {
  return {
    id: row.id,
    panelId: row.panel_id,
    segmentId: row.segment_id,
    columns: JSON.parse(row.columns) as string[],
    status: row.status,
    reason: row.reason,
    total: row.total,
    rows: row.rows_written,
    cursor: row.cursor,
    parts: JSON.parse(row.parts) as ExportPart[],
    attempts: row.attempts,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}

export interface ExportRef {
  panelId: string;
  exportId: string;
}

export async function insertSegmentExport(db: ShardDb, job: { id: string; panelId: string; segmentId: string; columns: readonly string[] }, now: number): Promise<SegmentExport> {
  const row = await db
    .prepare(`INSERT INTO segment_exports (id, panel_id, segment_id, columns, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING ${COLUMNS}`)
    .bind(job.id, job.panelId, job.segmentId, JSON.stringify(job.columns), now, now)
    .first<ExportRow>();
  return fromRow(row!);
}

export async function getSegmentExport(db: ShardDb, panelId: string, id: string): Promise<SegmentExport | null> {
  const row = await db.prepare(`SELECT ${COLUMNS} FROM segment_exports WHERE panel_id = ? AND id = ?`).bind(panelId, id).first<ExportRow>();
  return row ? fromRow(row) : null;
}

/**
 * Takes the export for a step: the job as it is, "held" while another step's lease runs, null
 * when it is finished (or unknown).
 */
export async function leaseSegmentExport(db: ShardDb, ref: ExportRef, lease: string, now: number, until: number): Promise<SegmentExport | "held" | null> {
  const row = await db
    .prepare(
      `UPDATE segment_exports SET lease = ?3, leased_until = ?4, status = 'running', started_at = COALESCE(started_at, ?5), updated_at = ?5
       WHERE panel_id = ?1 AND id = ?2 AND status IN ('queued', 'running') AND (leased_until IS NULL OR leased_until <= ?5)
       RETURNING ${COLUMNS}`,
    )
    .bind(ref.panelId, ref.exportId, lease, until, now)
    .first<ExportRow>();
  if (row) return fromRow(row);
  const open = await db
    .prepare("SELECT 1 AS open FROM segment_exports WHERE panel_id = ? AND id = ? AND status IN ('queued', 'running')")
    .bind(ref.panelId, ref.exportId)
    .first<{ open: number }>();
  return open ? "held" : null;
}

export async function renewExportLease(db: ShardDb, ref: ExportRef, lease: string, until: number): Promise<void> {
  await db.prepare("UPDATE segment_exports SET leased_until = ? WHERE panel_id = ? AND id = ? AND lease = ?").bind(until, ref.panelId, ref.exportId, lease).run();
}

/** Ends a step's hold; the time counts as activity, so the re-drive waits for the step's next nudge. */
export async function releaseExportLease(db: ShardDb, ref: ExportRef, lease: string, now: number): Promise<void> {
  await db
    .prepare("UPDATE segment_exports SET lease = NULL, leased_until = NULL, updated_at = MAX(updated_at, ?) WHERE panel_id = ? AND id = ? AND lease = ?")
    .bind(now, ref.panelId, ref.exportId, lease)
    .run();
}

/** The members' count when writing begins (progress); once. */
export async function setExportTotal(db: ShardDb, ref: ExportRef, lease: string, total: number): Promise<void> {
  await db.prepare("UPDATE segment_exports SET total = ? WHERE panel_id = ? AND id = ? AND lease = ? AND total IS NULL").bind(total, ref.panelId, ref.exportId, lease).run();
}

/**
 * Records a written part and moves the cursor from `from` to `to`; with `finished`, completes
 * the export. False (nothing recorded) when the step no longer holds the job or another step
 * moved it: the part is then not the file's.
 */
export async function commitExportPart(
  db: ShardDb,
  ref: ExportRef,
  step: { lease: string; from: number; to: number; rows: number; part: ExportPart | null; finished: boolean },
  now: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE segment_exports SET cursor = ?5, rows_written = rows_written + ?6,
         parts = CASE WHEN ?7 IS NULL THEN parts ELSE json_insert(parts, '$[#]', json(?7)) END,
         status = CASE WHEN ?8 THEN 'completed' ELSE status END, finished_at = CASE WHEN ?8 THEN ?9 ELSE finished_at END,
         attempts = 0, updated_at = ?9
       WHERE panel_id = ?1 AND id = ?2 AND lease = ?3 AND cursor = ?4 AND status = 'running'`,
    )
    .bind(ref.panelId, ref.exportId, step.lease, step.from, step.to, step.rows, step.part ? JSON.stringify(step.part) : null, step.finished ? 1 : 0, now)
    .run();
  return result.meta.changes > 0;
}

/** Ends an unfinished export as failed, with the reason shown to the person who asked for it. */
export async function failSegmentExport(db: ShardDb, ref: ExportRef, reason: string, now: number): Promise<void> {
  await db
    .prepare(
      `UPDATE segment_exports SET status = 'failed', reason = ?, finished_at = ?, lease = NULL, leased_until = NULL, updated_at = ?
       WHERE panel_id = ? AND id = ? AND status IN ('queued', 'running')`,
    )
    .bind(reason, now, now, ref.panelId, ref.exportId)
    .run();
}

/** Counts a failed step and answers how many came in a row (a committed part resets the count). */
export async function recordExportAttempt(db: ShardDb, ref: ExportRef, error: string, now: number): Promise<number> {
  const row = await db
    .prepare(
      `UPDATE segment_exports SET attempts = attempts + 1, last_error = ?, updated_at = ?
       WHERE panel_id = ? AND id = ? AND status IN ('queued', 'running') RETURNING attempts`,
    )
    .bind(error.slice(0, 1000), now, ref.panelId, ref.exportId)
    .first<{ attempts: number }>();
  return row?.attempts ?? 0;
}

/**
 * Unfinished exports of the shard that nobody holds and that saw no activity since
 * `quietSince` (a lost nudge, a consumer that died): touched now, so the next sweep waits
 * again, and returned for a nudge.
 */
export async function claimStalledExports(db: ShardDb, quietSince: number, now: number, limit: number): Promise<ExportRef[]> {
  const { results } = await db
    .prepare(
      `UPDATE segment_exports SET updated_at = ?1
       WHERE id IN (SELECT id FROM segment_exports INDEXED BY segment_exports_open
                    WHERE status IN ('queued', 'running') AND updated_at < ?2 AND (leased_until IS NULL OR leased_until <= ?1)
                    LIMIT ?3)
       RETURNING id, panel_id`,
    )
    .bind(now, quietSince, limit)
    .all<{ id: string; panel_id: string }>();
  return results.map((r) => ({ panelId: r.panel_id, exportId: r.id }));
}

/**
 * Withdraws the panel's exports requested by `createdBy`, completed or under way (a contact they
 * list or may list was erased): each is marked failed with `reason` and its parts forgotten; a
 * step still running then records nothing (its update asks for status running). Returns the R2
 * keys of their files, to delete.
 */
export async function withdrawExports(db: ShardDb, panelId: string, reason: string, createdBy: number, now: number): Promise<string[]> {
  const [withdrawn] = await db.batch<{ parts: string }>([
    db.prepare("SELECT parts FROM segment_exports WHERE panel_id = ?1 AND status IN ('completed', 'queued', 'running') AND created_at <= ?2").bind(panelId, createdBy),
    db
      .prepare(
        `UPDATE segment_exports SET status = 'failed', reason = ?2, parts = '[]', lease = NULL, leased_until = NULL, finished_at = COALESCE(finished_at, ?3), updated_at = ?3
         WHERE panel_id = ?1 AND status IN ('completed', 'queued', 'running') AND created_at <= ?4`,
      )
      .bind(panelId, reason, now, createdBy),
  ]);
  return withdrawn!.results.flatMap((row) => (JSON.parse(row.parts) as ExportPart[]).map((part) => part.key));
}
