import type { ShardDb } from "./shards";
import { activityNameKey, type ActivityDefinition, type ActivityParamType } from "../domain/activity";
import type { AttributeType } from "../domain/attributes";
import type { Panel } from "./panels";
import { isUniqueViolation } from "./sql";

interface ActivityRow {
  id: number;
  name: string;
  params: string;
  created_at: number;
}

const ACTIVITY_COLUMNS = "id, name, params, created_at";

function activityFromRow(row: ActivityRow): ActivityDefinition {
  return { id: row.id, name: row.name, params: JSON.parse(row.params) as Record<string, ActivityParamType>, createdAt: row.created_at };
}

/**
 * Returns the new definition, or null when the panel already has an activity of that name.
 * Ids are numbered within the panel: the next after its highest (one writer at a time in D1).
 */
export async function insertActivity(
  db: ShardDb,
  panelId: string,
  name: string,
  params: Record<string, ActivityParamType>,
  now: number,
): Promise<ActivityDefinition | null> {
  try {
    const row = await db
      .prepare(
        `INSERT INTO activities (panel_id, id, name, name_key, params, created_at)
         SELECT ?1, COALESCE(MAX(id), 0) + 1, ?2, ?3, ?4, ?5 FROM activities WHERE panel_id = ?1
         RETURNING ${ACTIVITY_COLUMNS}`,
      )
      .bind(panelId, name, activityNameKey(name), JSON.stringify(params), now)
      .first<ActivityRow>();
    return activityFromRow(row!);
  } catch (error) {
    if (isUniqueViolation(error)) return null;
    throw error;
  }
}

export async function listActivities(db: ShardDb, panelId: string): Promise<ActivityDefinition[]> {
  const { results } = await db
    .prepare(`SELECT ${ACTIVITY_COLUMNS} FROM activities WHERE panel_id = ? ORDER BY id`)
    .bind(panelId)
    .all<ActivityRow>();
  return results.map(activityFromRow);
}

export async function getActivity(db: ShardDb, panelId: string, id: number): Promise<ActivityDefinition | null> {
  const row = await db.prepare(`SELECT ${ACTIVITY_COLUMNS} FROM activities WHERE panel_id = ? AND id = ?`).bind(panelId, id).first<ActivityRow>();
  return row ? activityFromRow(row) : null;
}

/** The activity of that name (case-insensitive), e.g. for a journey's activity trigger. */
export async function findActivityByName(db: ShardDb, panelId: string, name: string): Promise<ActivityDefinition | null> {
  const row = await db
    .prepare(`SELECT ${ACTIVITY_COLUMNS} FROM activities WHERE panel_id = ? AND name_key = ?`)
    .bind(panelId, activityNameKey(name))
    .first<ActivityRow>();
  return row ? activityFromRow(row) : null;
}

/** Everything ingest needs of the panel a client id names, read in one round trip. */
export interface ActivityCatalog {
  panel: Panel;
  primaryKeyType: AttributeType;
  activities: ReadonlyMap<number, ActivityDefinition>;
  /** The same definitions by name key (activityNameKey): Activity API v2 names activities. */
  byName: ReadonlyMap<string, ActivityDefinition>;
}

/** The catalog of a panel whose directory entry was read (getPanelByClientId) from its shard. */
export async function loadActivityCatalog(db: ShardDb, panel: Panel): Promise<ActivityCatalog> {
  const [keyTypes, activities] = await db.batch([
    db.prepare("SELECT type FROM attributes WHERE panel_id = ? AND name = ?").bind(panel.id, panel.primaryKey),
    db.prepare(`SELECT ${ACTIVITY_COLUMNS} FROM activities WHERE panel_id = ?`).bind(panel.id),
  ]);
  const keyType = (keyTypes!.results[0] as { type: AttributeType } | undefined)?.type ?? "string";
  const definitions = (activities!.results as unknown as ActivityRow[]).map(activityFromRow);
  return {
    panel,
    primaryKeyType: keyType,
    activities: new Map(definitions.map((definition) => [definition.id, definition])),
    byName: new Map(definitions.map((definition) => [activityNameKey(definition.name), definition])),
  };
}
