import type { ShardDb } from "../shards";
import type { JourneyDefinition } from "../../domain/journey";

// Journey versions (migration 0052): each version's definition, and which version each
// instance walks. A draft has version 1, replaced in place; each edit of a running or paused
// journey adds the next (definitions.ts).

export interface JourneyVersion {
  version: number;
  definition: JourneyDefinition;
  createdAt: number;
  createdBy: string | null;
  /** Instances that entered on it, and those of them still active. */
  entered: number;
  active: number;
}

/** Stores a version's definition; a version that exists is kept as it is. */
export function insertVersionStatement(
  db: ShardDb,
  panelId: string,
  journeyId: string,
  version: number,
  definition: string,
  now: number,
  createdBy: string | null,
): D1PreparedStatement {
  return db
    .prepare("INSERT OR IGNORE INTO journey_versions (journey_id, version, panel_id, definition, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)")
    .bind(journeyId, version, panelId, definition, now, createdBy);
}

/** A journey's versions, newest first, with their entry counts (pruned instances included). */
export async function listVersions(db: ShardDb, panelId: string, journeyId: string): Promise<JourneyVersion[]> {
  const { results } = await db
    .prepare(
      `SELECT v.version, v.definition, v.created_at, v.created_by,
         (SELECT COUNT(*) FROM journey_instances i WHERE i.journey_id = v.journey_id AND i.version = v.version)
           + COALESCE((SELECT p.completed + p.exited FROM journey_pruned p WHERE p.journey_id = v.journey_id AND p.version = v.version), 0) AS entered,
         (SELECT COUNT(*) FROM journey_instances i WHERE i.journey_id = v.journey_id AND i.version = v.version AND i.status = 'active') AS active
       FROM journey_versions v WHERE v.panel_id = ? AND v.journey_id = ? ORDER BY v.version DESC`,
    )
    .bind(panelId, journeyId)
    .all<{ version: number; definition: string; created_at: number; created_by: string | null; entered: number; active: number }>();
  return results.map((row) => ({
    version: row.version,
    definition: JSON.parse(row.definition) as JourneyDefinition,
    createdAt: row.created_at,
    createdBy: row.created_by,
    entered: row.entered,
    active: row.active,
  }));
}

/**
 * The definition each of these instances walks: that of the version it entered on. An
 * instance missing here (none should be) walks the journey's current definition.
 */
export async function definitionsOfInstances(db: ShardDb, instanceIds: readonly string[]): Promise<Map<string, JourneyDefinition>> {
  if (instanceIds.length === 0) return new Map();
  const ids = JSON.stringify([...new Set(instanceIds)]);
  const [instances, versions] = await db.batch<Record<string, unknown>>([
    db.prepare("SELECT id, journey_id, version FROM journey_instances WHERE id IN (SELECT value FROM json_each(?))").bind(ids),
    // Each version once, however many of its instances go on now.
    db
      .prepare(
        `SELECT journey_id, version, definition FROM journey_versions
         WHERE (journey_id, version) IN (SELECT journey_id, version FROM journey_instances WHERE id IN (SELECT value FROM json_each(?)))`,
      )
      .bind(ids),
  ]);
  const parsed = new Map<string, JourneyDefinition>();
  for (const row of versions!.results as Array<{ journey_id: string; version: number; definition: string }>) {
    parsed.set(`${row.journey_id}#${row.version}`, JSON.parse(row.definition) as JourneyDefinition);
  }
  const byInstance = new Map<string, JourneyDefinition>();
  for (const row of instances!.results as Array<{ id: string; journey_id: string; version: number }>) {
    const definition = parsed.get(`${row.journey_id}#${row.version}`);
    if (definition) byInstance.set(row.id, definition);
  }
  return byInstance;
}
