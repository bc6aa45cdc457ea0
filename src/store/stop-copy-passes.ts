import type { ControlDb } from "./shards";

/**
 * The passes copying a panel's home stops onto its other shards (control migration 0077,
 * decision 0061): one row a panel with a pass due or under way, its cursor JSON the pass's own.
 */

export interface StopCopyPass {
  panelId: string;
  /** Where the pass stands (JSON); null: at its beginning. */
  cursor: string | null;
}

/**
 * The panel homed on `shard` whose pass is due first, if one is due by `now`: one read, an
 * index walk over due rows only (each checked against its panel's home).
 */
export async function dueStopCopyPass(db: ControlDb, shard: number, now: number): Promise<StopCopyPass | null> {
  return await db
    .prepare(
      `SELECT s.panel_id AS panelId, s.cursor FROM stop_copy_passes s JOIN panels p ON p.id = s.panel_id
       WHERE s.due_at <= ?2 AND p.shard = ?1 ORDER BY s.due_at LIMIT 1`,
    )
    .bind(shard, now)
    .first<StopCopyPass>();
}

/** Records where the panel's pass stands and when it is due next. */
export async function saveStopCopyPass(db: ControlDb, panelId: string, cursor: string | null, dueAt: number, now: number): Promise<void> {
  await db.prepare("UPDATE stop_copy_passes SET cursor = ?2, due_at = ?3, updated_at = ?4 WHERE panel_id = ?1").bind(panelId, cursor, dueAt, now).run();
}

/** The panel's pass, where it stands, due again at `dueAt` instead (a run of it failed). */
export async function postponeStopCopyPass(db: ControlDb, panelId: string, dueAt: number, now: number): Promise<void> {
  await db.prepare("UPDATE stop_copy_passes SET due_at = ?2, updated_at = ?3 WHERE panel_id = ?1").bind(panelId, dueAt, now).run();
}

/** A pass from the beginning due at `dueAt`, whether or not one was due or under way (a new map changes what it copies). */
export async function startStopCopyPass(db: ControlDb, panelId: string, dueAt: number, now: number): Promise<void> {
  await db
    .prepare(
      `INSERT INTO stop_copy_passes (panel_id, due_at, cursor, updated_at) VALUES (?1, ?2, NULL, ?3)
       ON CONFLICT (panel_id) DO UPDATE SET due_at = excluded.due_at, cursor = NULL, updated_at = excluded.updated_at`,
    )
    .bind(panelId, dueAt, now)
    .run();
}

/** The panel needs no pass any more (no partition off its home). */
export async function dropStopCopyPass(db: ControlDb, panelId: string): Promise<void> {
  await db.prepare("DELETE FROM stop_copy_passes WHERE panel_id = ?").bind(panelId).run();
}
