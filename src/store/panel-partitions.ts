import type { ControlDb } from "./shards";
import { LAST_BUCKET, type Partition, type PartitionState } from "../domain/partitions";

export type { Partition };

/**
 * The partition map of panels (decision 0038 step 2, control migration 0064), beside the
 * directory (`panels.shard`): a panel with no rows is one partition on its home shard. And how
 * far the back-fill of contact buckets got on each shard (step 1).
 */

interface PartitionRow {
  first_bucket: number;
  last_bucket: number;
  shard: number;
  state: PartitionState;
}

function partitionFromRow(row: PartitionRow): Partition {
  return { firstBucket: row.first_bucket, lastBucket: row.last_bucket, shard: row.shard, state: row.state };
}

/**
 * A column of a panel read (`{panel}` the panels row's alias) holding its partitions as JSON,
 * so the directory entry and its map come in one statement (decision 0006's caches keep both).
 */
export function partitionsColumn(panel: string): string {
  return `(SELECT json_group_array(json_array(pp.first_bucket, pp.last_bucket, pp.shard, pp.state))
    FROM (SELECT * FROM panel_partitions WHERE panel_id = ${panel}.id ORDER BY first_bucket) pp) AS partitions`;
}

/** The partitions a partitionsColumn read. */
export function partitionsFromColumn(json: string | null | undefined): Partition[] {
  if (!json) return [];
  return (JSON.parse(json) as Array<[number, number, number, PartitionState]>).map(([first, last, shard, state]) =>
    partitionFromRow({ first_bucket: first, last_bucket: last, shard, state }),
  );
}

/**
 * Replaces the panel's map with `partitions` in one batch (the caller has checked it with
 * partitionMapProblem). An empty array returns the panel to one partition on its home shard.
 */
export async function setPanelPartitions(db: ControlDb, panelId: string, partitions: readonly Partition[]): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM panel_partitions WHERE panel_id = ?").bind(panelId),
    ...partitions.map((p) =>
      db
        .prepare("INSERT INTO panel_partitions (panel_id, first_bucket, last_bucket, shard, state) VALUES (?, ?, ?, ?, ?)")
        .bind(panelId, p.firstBucket, p.lastBucket, p.shard, p.state),
    ),
  ]);
}

/**
 * The condition on `panels` of a panel whose contacts shard `?1` holds, all or some: it is the
 * panel's home or holds one of its partitions (decision 0038). Those panels' rows on the shard
 * (stored counts, events, guids, day counts) are kept there, and readers sum over the shards.
 */
export const HOLDS_CONTACTS_ON = "(shard = ?1 OR id IN (SELECT panel_id FROM panel_partitions WHERE shard = ?1))";

/** The panels whose contacts `shard` holds, all or some (HOLDS_CONTACTS_ON). */
export async function panelsHoldingContactsOn(db: ControlDb, shard: number): Promise<string[]> {
  const { results } = await db.prepare(`SELECT id FROM panels WHERE ${HOLDS_CONTACTS_ON} ORDER BY id`).bind(shard).all<{ id: string }>();
  return results.map((r) => r.id);
}

/**
 * The `nth` (from 0, in id order, wrapping) of the panels homed on `shard` with a partition on
 * another shard, whose configuration is mirrored (decision 0041); null when there is none. Two
 * bounded reads whatever the number of panels: a rotation for housekeeping's mirror resync.
 */
export async function nthMirroredPanelHomedOn(db: ControlDb, shard: number, nth: number): Promise<string | null> {
  const mirrored = "FROM panels WHERE shard = ?1 AND id IN (SELECT panel_id FROM panel_partitions WHERE shard <> ?1)";
  const count = (await db.prepare(`SELECT COUNT(*) AS n ${mirrored}`).bind(shard).first<{ n: number }>())?.n ?? 0;
  if (count === 0) return null;
  const row = await db.prepare(`SELECT id ${mirrored} ORDER BY id LIMIT 1 OFFSET ?2`).bind(shard, nth % count).first<{ id: string }>();
  return row?.id ?? null;
}

export type BucketFillPhase = "contacts" | "anonymous" | "profiles" | "done";

export interface BucketFill {
  phase: BucketFillPhase;
  /** The last key the phase handled, as JSON; null at the phase's start. */
  cursor: string | null;
}

/** How far the back-fill got on shard `shard`: at its start when it never ran there. */
export async function bucketFill(db: ControlDb, shard: number): Promise<BucketFill> {
  const row = await db.prepare("SELECT phase, cursor FROM bucket_fills WHERE shard = ?").bind(shard).first<BucketFill>();
  return row ?? { phase: "contacts", cursor: null };
}

/** Saves the back-fill's progress on shard `shard`. */
export async function saveBucketFill(db: ControlDb, shard: number, fill: BucketFill, now: number): Promise<void> {
  await db
    .prepare(
      `INSERT INTO bucket_fills (shard, phase, cursor, updated_at) VALUES (?1, ?2, ?3, ?4)
       ON CONFLICT (shard) DO UPDATE SET phase = excluded.phase, cursor = excluded.cursor, updated_at = excluded.updated_at`,
    )
    .bind(shard, fill.phase, fill.cursor, now)
    .run();
}

/**
 * The switch of a partition split (decision 0047): buckets `at`..`last` of the partition
 * `first`..`last` on shard `from` now live on shard `to`, and the partition keeps
 * `first`..`at`−1. Conditional, as the directory's switch is: only if the map still holds that
 * partition, or (a panel without a map) the panel is still one partition on its home `from`.
 * One batch (a transaction); false when the map changed meanwhile, and nothing is written.
 */
export async function splitPanelPartition(db: ControlDb, panelId: string, from: number, first: number, last: number, at: number, to: number): Promise<boolean> {
  const results = await db.batch([
    // A panel without a map: its one partition written out first, so the split below finds it.
    db
      .prepare(
        `INSERT INTO panel_partitions (panel_id, first_bucket, last_bucket, shard, state)
         SELECT ?1, ?2, ?3, ?4, 'active'
         WHERE NOT EXISTS (SELECT 1 FROM panel_partitions WHERE panel_id = ?1) AND EXISTS (SELECT 1 FROM panels WHERE id = ?1 AND shard = ?4) AND ?2 = 0 AND ?3 = ?5`,
      )
      .bind(panelId, first, last, from, LAST_BUCKET),
    db.prepare("UPDATE panel_partitions SET last_bucket = ?4 - 1, state = 'active' WHERE panel_id = ?1 AND first_bucket = ?2 AND last_bucket = ?3 AND shard = ?5").bind(panelId, first, last, at, from),
    db
      .prepare(
        `INSERT INTO panel_partitions (panel_id, first_bucket, last_bucket, shard, state)
         SELECT ?1, ?2, ?3, ?4, 'active' WHERE changes() = 1`,
      )
      .bind(panelId, at, last, to),
  ]);
  return (results[2]!.meta.changes ?? 0) > 0;
}
