import { LAST_MOVE_RANGE } from "./id-ranges";
import type { ControlDb } from "./shards";
import type { BucketRange } from "./panel-move/tables";

/**
 * Moves of panels between shards (control database, migration 0035). A step of a move holds it
 * by a lease; every save of its progress is conditional on the lease, so a redelivered nudge or
 * a step whose lease ran out never writes over the step that holds it.
 */

export type MoveState = "copying" | "catching_up" | "cleaning" | "done" | "failed";

export interface PanelMove {
  id: string;
  panelId: string;
  fromShard: number;
  toShard: number;
  /** A partition move (decision 0047): the buckets that move; null when the whole panel moves. */
  buckets: BucketRange | null;
  state: MoveState;
  tableIndex: number;
  cursor: unknown[] | null;
  changeSeq: number;
  rowsCopied: number;
  changesApplied: number;
  rowsDeleted: number;
  pauseMs: number | null;
  attempts: number;
  error: string | null;
  createdAt: number;
  updatedAt: number;
  switchedAt: number | null;
  finishedAt: number | null;
}

interface MoveRow {
  id: string;
  panel_id: string;
  from_shard: number;
  to_shard: number;
  first_bucket: number | null;
  last_bucket: number | null;
  state: MoveState;
  table_index: number;
  cursor: string | null;
  change_seq: number;
  rows_copied: number;
  changes_applied: number;
  rows_deleted: number;
  pause_ms: number | null;
  attempts: number;
  error: string | null;
  created_at: number;
  updated_at: number;
  switched_at: number | null;
  finished_at: number | null;
}

function fromRow(r: MoveRow): PanelMove {
  return {
    id: r.id,
    panelId: r.panel_id,
    fromShard: r.from_shard,
    toShard: r.to_shard,
    buckets: r.first_bucket === null || r.last_bucket === null ? null : { first: r.first_bucket, last: r.last_bucket },
    state: r.state,
    tableIndex: r.table_index,
    cursor: r.cursor === null ? null : (JSON.parse(r.cursor) as unknown[]),
    changeSeq: r.change_seq,
    rowsCopied: r.rows_copied,
    changesApplied: r.changes_applied,
    rowsDeleted: r.rows_deleted,
    pauseMs: r.pause_ms,
    attempts: r.attempts,
    error: r.error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    switchedAt: r.switched_at,
    finishedAt: r.finished_at,
  };
}

/** Records a new move; false when the panel already has one under way. */
export async function insertPanelMove(
  db: ControlDb,
  move: Pick<PanelMove, "id" | "panelId" | "fromShard" | "toShard" | "createdAt"> & Partial<Pick<PanelMove, "buckets">>,
): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO panel_moves (id, panel_id, from_shard, to_shard, state, created_at, updated_at, first_bucket, last_bucket)
       VALUES (?, ?, ?, ?, 'copying', ?5, ?5, ?6, ?7) ON CONFLICT DO NOTHING`,
    )
    .bind(move.id, move.panelId, move.fromShard, move.toShard, move.createdAt, move.buckets?.first ?? null, move.buckets?.last ?? null)
    .run();
  return (result.meta.changes ?? 0) > 0;
}

export async function getPanelMove(db: ControlDb, panelId: string, moveId: string): Promise<PanelMove | null> {
  const row = await db.prepare("SELECT * FROM panel_moves WHERE panel_id = ? AND id = ?").bind(panelId, moveId).first<MoveRow>();
  return row ? fromRow(row) : null;
}

/** The panel's moves, newest first. */
export async function panelMoves(db: ControlDb, panelId: string): Promise<PanelMove[]> {
  const { results } = await db.prepare("SELECT * FROM panel_moves WHERE panel_id = ? ORDER BY created_at DESC, id DESC LIMIT 50").bind(panelId).all<MoveRow>();
  return results.map(fromRow);
}

/** Takes the move for a step: the move as it is; "held" while another step's lease runs; null once it ended. */
export async function leasePanelMove(db: ControlDb, moveId: string, lease: string, now: number, until: number): Promise<PanelMove | "held" | null> {
  const row = await db
    .prepare(
      `UPDATE panel_moves SET lease_token = ?2, lease_until = ?3, updated_at = ?4
       WHERE id = ?1 AND state NOT IN ('done', 'failed') AND (lease_until IS NULL OR lease_until <= ?4) RETURNING *`,
    )
    .bind(moveId, lease, until, now)
    .first<MoveRow>();
  if (row) return fromRow(row);
  const exists = await db.prepare("SELECT state FROM panel_moves WHERE id = ?").bind(moveId).first<{ state: MoveState }>();
  return exists && exists.state !== "done" && exists.state !== "failed" ? "held" : null;
}

export type MoveProgress = Partial<
  Pick<PanelMove, "state" | "tableIndex" | "cursor" | "changeSeq" | "rowsCopied" | "changesApplied" | "rowsDeleted" | "pauseMs" | "attempts" | "error" | "switchedAt" | "finishedAt">
>;

const COLUMNS: Record<keyof MoveProgress, string> = {
  state: "state",
  tableIndex: "table_index",
  cursor: "cursor",
  changeSeq: "change_seq",
  rowsCopied: "rows_copied",
  changesApplied: "changes_applied",
  rowsDeleted: "rows_deleted",
  pauseMs: "pause_ms",
  attempts: "attempts",
  error: "error",
  switchedAt: "switched_at",
  finishedAt: "finished_at",
};

/** Saves a step's progress while it holds the lease (and renews it to `until`); false when the lease was lost. */
export async function saveMoveProgress(db: ControlDb, moveId: string, lease: string, now: number, until: number, progress: MoveProgress): Promise<boolean> {
  const entries = Object.entries(progress) as Array<[keyof MoveProgress, unknown]>;
  const sets = entries.map(([field], i) => `${COLUMNS[field]} = ?${i + 5}`);
  const values = entries.map(([field, value]) => (field === "cursor" ? (value === null ? null : JSON.stringify(value)) : (value ?? null)));
  const result = await db
    .prepare(`UPDATE panel_moves SET ${[...sets, "updated_at = ?3", "lease_until = ?4"].join(", ")} WHERE id = ?1 AND lease_token = ?2`)
    .bind(moveId, lease, now, until, ...values)
    .run();
  return (result.meta.changes ?? 0) > 0;
}

/** Lets the next step take the move at once. */
export async function releasePanelMove(db: ControlDb, moveId: string, lease: string): Promise<void> {
  await db.prepare("UPDATE panel_moves SET lease_until = NULL WHERE id = ? AND lease_token = ?").bind(moveId, lease).run();
}

/** Unfinished moves no step held for `stallMs`: their nudge was lost. */
export async function stalledPanelMoves(db: ControlDb, now: number, stallMs: number): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT id FROM panel_moves WHERE state NOT IN ('done', 'failed') AND (lease_until IS NULL OR lease_until <= ?1) AND updated_at <= ?2 LIMIT 100")
    .bind(now, now - stallMs)
    .all<{ id: string }>();
  return results.map((r) => r.id);
}

/** Unfinished moves with no progress since `before`, oldest first (the operations view's stuck work). */
export async function stuckPanelMoves(db: ControlDb, before: number, limit: number): Promise<PanelMove[]> {
  const { results } = await db
    .prepare("SELECT * FROM panel_moves WHERE state NOT IN ('done', 'failed') AND updated_at <= ? ORDER BY updated_at LIMIT ?")
    .bind(before, limit)
    .all<MoveRow>();
  return results.map(fromRow);
}

/** Points the directory at the panel's new shard, if it still names the old one. */
export async function switchPanelShard(db: ControlDb, panelId: string, from: number, to: number, now: number): Promise<boolean> {
  const result = await db.prepare("UPDATE panels SET shard = ?3, updated_at = ?4 WHERE id = ?1 AND shard = ?2").bind(panelId, from, to, now).run();
  return (result.meta.changes ?? 0) > 0;
}

/**
 * A fresh id range (decisions 0031, 0037): one no shard has used, never handed out twice, at
 * most LAST_MOVE_RANGE; null once the pool is used up.
 */
export async function takeIdRange(db: ControlDb): Promise<number | null> {
  const row = await db.prepare("UPDATE id_ranges SET next = next + 1 WHERE id = 1 AND next <= ? RETURNING next - 1 AS range").bind(LAST_MOVE_RANGE).first<{ range: number }>();
  if (row) return row.range;
  if ((await idRangesLeft(db)) > 0) throw new Error("the control database's id range pool changed while a range was taken");
  return null;
}

/** How many ranges the pool has left to hand out. */
export async function idRangesLeft(db: ControlDb): Promise<number> {
  const row = await db.prepare("SELECT next FROM id_ranges WHERE id = 1").first<{ next: number }>();
  if (!row) throw new Error("the control database has no id_ranges row (migration 0035)");
  return Math.max(0, LAST_MOVE_RANGE + 1 - row.next);
}
