import type { ShardDb } from "../shards";
import { activityNameKey } from "../../domain/activity";
import type { JourneyDefinition } from "../../domain/journey";
import type { JourneyLayout } from "../../domain/journey-layout";
import { insertVersionStatement } from "./versions";
import { jsonArrays } from "../json-arrays";
import { fencedCopyHere } from "../panel-move/triggers";
import type { BucketRanges } from "../../domain/partitions";

// The journeys table: the current definition and version, their trigger lookup keys and the
// status a journey is in. Every version's definition is kept in journey_versions (versions.ts).

export const JOURNEY_STATUSES = ["draft", "running", "paused", "stopped"] as const;
export type JourneyStatus = (typeof JOURNEY_STATUSES)[number];

export interface Journey {
  id: string;
  panelId: string;
  name: string;
  /** The current definition: that of `version`, which new entries take. */
  definition: JourneyDefinition;
  version: number;
  status: JourneyStatus;
  scanCursor: number | null;
  /** Where the panel's canvas draws it; null: laid out by the canvas. Not versioned. */
  layout: JourneyLayout | null;
  createdAt: number;
  updatedAt: number;
}

export interface JourneyRow {
  id: string;
  panel_id: string;
  name: string;
  definition: string;
  version: number;
  status: JourneyStatus;
  scan_cursor: number | null;
  layout: string | null;
  created_at: number;
  updated_at: number;
}

export const JOURNEY_COLUMNS = "id, panel_id, name, definition, version, status, scan_cursor, layout, created_at, updated_at";

export function journeyFromRow(row: JourneyRow): Journey {
  return {
    id: row.id,
    panelId: row.panel_id,
    name: row.name,
    definition: JSON.parse(row.definition) as JourneyDefinition,
    version: row.version,
    status: row.status,
    scanCursor: row.scan_cursor,
    layout: row.layout === null ? null : (JSON.parse(row.layout) as JourneyLayout),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The trigger's lookup key: an activity name (lower case), a list id or a saved segment's id. */
function triggerKey(definition: JourneyDefinition): string | null {
  const { trigger } = definition;
  if (trigger.type === "activity") return activityNameKey(trigger.activity);
  if (trigger.type === "list") return String(trigger.listid);
  return trigger.segment ?? null;
}

const layoutText = (layout: JourneyLayout | null) => (layout === null ? null : JSON.stringify(layout));

/** Stores a new journey and its first version, in one batch. */
export async function insertJourney(db: ShardDb, journey: Journey, createdBy: string | null = null): Promise<void> {
  const definition = JSON.stringify(journey.definition);
  await db.batch([
    db
      .prepare(
        `INSERT INTO journeys (id, panel_id, name, definition, version, trigger_type, trigger_key, status, layout, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .bind(
        journey.id,
        journey.panelId,
        journey.name,
        definition,
        journey.version,
        journey.definition.trigger.type,
        triggerKey(journey.definition),
        journey.status,
        layoutText(journey.layout),
        journey.createdAt,
        journey.updatedAt,
      ),
    insertVersionStatement(db, journey.panelId, journey.id, journey.version, definition, journey.createdAt, createdBy),
  ]);
}

export async function getJourney(db: ShardDb, panelId: string, id: string): Promise<Journey | null> {
  const row = await db.prepare(`SELECT ${JOURNEY_COLUMNS} FROM journeys WHERE panel_id = ? AND id = ?`).bind(panelId, id).first<JourneyRow>();
  return row ? journeyFromRow(row) : null;
}

export async function listJourneys(db: ShardDb, panelId: string): Promise<Journey[]> {
  const { results } = await db.prepare(`SELECT ${JOURNEY_COLUMNS} FROM journeys WHERE panel_id = ? ORDER BY created_at, id`).bind(panelId).all<JourneyRow>();
  return results.map(journeyFromRow);
}

/** Replaces a draft's definition (and that of its version) and layout; null when there is no such journey or it is not a draft. */
export async function updateDraftJourney(
  db: ShardDb,
  panelId: string,
  id: string,
  definition: JourneyDefinition,
  layout: JourneyLayout | null,
  now: number,
): Promise<Journey | null> {
  const text = JSON.stringify(definition);
  const [updated] = await db.batch<JourneyRow>([
    db
      .prepare(
        `UPDATE journeys SET name = ?, definition = ?, trigger_type = ?, trigger_key = ?, layout = ?, updated_at = ?
         WHERE panel_id = ? AND id = ? AND status = 'draft' RETURNING ${JOURNEY_COLUMNS}`,
      )
      .bind(definition.name, text, definition.trigger.type, triggerKey(definition), layoutText(layout), now, panelId, id),
    // The same text as the row just written: unchanged when the journey was no draft.
    db
      .prepare(
        `UPDATE journey_versions SET definition = ?1, created_at = ?2
         WHERE journey_id = ?3 AND version = (SELECT version FROM journeys WHERE panel_id = ?4 AND id = ?3 AND status = 'draft' AND definition = ?1)`,
      )
      .bind(text, now, id, panelId),
  ]);
  const row = updated!.results[0];
  return row ? journeyFromRow(row) : null;
}

/**
 * Makes `definition` the next version of a running or paused journey still at version
 * `current`; its status stays, its instances keep the version they entered on, new entries
 * take this one. The trigger lookup follows the new trigger; a segment trigger scans every
 * contact again (entries stay once per contact). Null when the journey is not running or
 * paused at `current` any more (stopped, or edited meanwhile).
 */
export async function addJourneyVersion(
  db: ShardDb,
  panelId: string,
  id: string,
  current: number,
  definition: JourneyDefinition,
  layout: JourneyLayout | null,
  now: number,
  createdBy: string | null,
): Promise<Journey | null> {
  const text = JSON.stringify(definition);
  const [updated] = await db.batch<JourneyRow>([
    db
      .prepare(
        `UPDATE journeys SET name = ?1, definition = ?2, trigger_type = ?3, trigger_key = ?4, updated_at = ?5, version = version + 1,
           scan_cursor = CASE WHEN ?3 = 'segment' THEN 0 ELSE NULL END, rescan_due = 0, rescan_upto = NULL, layout = ?9
         WHERE panel_id = ?6 AND id = ?7 AND status IN ('running', 'paused') AND version = ?8 RETURNING ${JOURNEY_COLUMNS}`,
      )
      .bind(definition.name, text, definition.trigger.type, triggerKey(definition), now, panelId, id, current, layoutText(layout)),
    // Only when the update above moved it on (another edit at the same version writes nothing).
    db
      .prepare(
        `INSERT OR IGNORE INTO journey_versions (journey_id, version, panel_id, definition, created_at, created_by)
         SELECT id, version, panel_id, definition, ?1, ?2 FROM journeys WHERE panel_id = ?3 AND id = ?4 AND version = ?5 AND definition = ?6 AND updated_at = ?1`,
      )
      .bind(now, createdBy, panelId, id, current + 1, text),
  ]);
  const row = updated!.results[0];
  return row ? journeyFromRow(row) : null;
}

/**
 * Sets the layout of `journey` if it is not stopped and still at its version and definition
 * (those the layout was checked against); definition, version and status stay. Null when it
 * is stopped or was edited meanwhile.
 */
export async function updateJourneyLayout(db: ShardDb, journey: Journey, layout: JourneyLayout | null, now: number): Promise<Journey | null> {
  const row = await db
    .prepare(
      `UPDATE journeys SET layout = ?, updated_at = ?
       WHERE panel_id = ? AND id = ? AND status != 'stopped' AND version = ? AND definition = ? RETURNING ${JOURNEY_COLUMNS}`,
    )
    .bind(layoutText(layout), now, journey.panelId, journey.id, journey.version, JSON.stringify(journey.definition))
    .first<JourneyRow>();
  return row ? journeyFromRow(row) : null;
}

/**
 * Moves a journey from one of `from` to `to`; null when it was in none of them. Stopping ends
 * every active instance (exited) and cancels its pending waits and delays in the same batch
 * (within `buckets`, stopInstancesStatements). Starting a segment journey sets its entry scan going.
 */
export async function changeJourneyStatus(
  db: ShardDb,
  panelId: string,
  id: string,
  from: readonly JourneyStatus[],
  to: JourneyStatus,
  now: number,
  buckets: BucketRanges | null = null,
): Promise<Journey | null> {
  const update = db
    .prepare(
      `UPDATE journeys SET status = ?1, updated_at = ?2,
         scan_cursor = CASE WHEN ?1 = 'running' AND status = 'draft' AND trigger_type = 'segment' THEN 0
                            WHEN ?1 = 'stopped' THEN NULL ELSE scan_cursor END
       WHERE panel_id = ?3 AND id = ?4 AND status IN (SELECT value FROM json_each(?5)) RETURNING ${JOURNEY_COLUMNS}`,
    )
    .bind(to, now, panelId, id, JSON.stringify(from));
  if (to !== "stopped") {
    const row = await update.first<JourneyRow>();
    return row ? journeyFromRow(row) : null;
  }
  const [updated] = await db.batch<JourneyRow>([update, ...stopInstancesStatements(db, panelId, id, now, buckets)]);
  const row = updated!.results[0];
  return row ? journeyFromRow(row) : null;
}

/**
 * The stop of a journey on `db` (its row there already stopped): every active instance ends
 * (exited) and its pending waits and delays are cancelled. Run in the stop's batch on the home,
 * and on each mirror once its copy of the row says stopped (mirror.ts). With `buckets` (the
 * shard's in the panel's map) a split's source's fenced copies of moved instances and points are
 * left as they are until cleaning deletes them (fencedCopyHere, decision 0047): the target's rows
 * are the ones that count, and writing the copies met the fence and refused the stop (503).
 */
export function stopInstancesStatements(db: ShardDb, panelId: string, id: string, now: number, buckets: BucketRanges | null = null): D1PreparedStatement[] {
  const ranges = buckets && JSON.stringify(buckets);
  return [
    db
      .prepare(
        `UPDATE journey_points SET outcome = 'cancelled', resolved_at = ?1, continued_at = ?1
         WHERE journey_id = ?2 AND panel_id = ?3 AND (outcome IS NULL OR continued_at IS NULL)
           AND EXISTS (SELECT 1 FROM journeys WHERE id = ?2 AND status = 'stopped') AND NOT ${fencedCopyHere("journey_points", "?4")}`,
      )
      .bind(now, id, panelId, ranges),
    db
      .prepare(
        `UPDATE journey_instances SET status = 'exited', ended_at = ?1
         WHERE journey_id = ?2 AND panel_id = ?3 AND status = 'active' AND EXISTS (SELECT 1 FROM journeys WHERE id = ?2 AND status = 'stopped')
           AND NOT ${fencedCopyHere("journey_instances", "?4")}`,
      )
      .bind(now, id, panelId, ranges),
  ];
}

/** The journeys of a panel that are running or paused: those whose triggers fire or whose waits can end. */
export async function liveJourneysOfPanel(db: ShardDb, panelId: string): Promise<Journey[]> {
  const { results } = await db
    .prepare(`SELECT ${JOURNEY_COLUMNS} FROM journeys WHERE panel_id = ? AND status IN ('running', 'paused')`)
    .bind(panelId)
    .all<JourneyRow>();
  return results.map(journeyFromRow);
}

/** Journeys by (panel, id): the points of the cron come from every panel. */
export async function getJourneysByIds(db: ShardDb, refs: ReadonlyArray<{ panelId: string; journeyId: string }>): Promise<Map<string, Journey>> {
  if (refs.length === 0) return new Map();
  const keys = [...new Map(refs.map((r) => [r.journeyId, [r.panelId, r.journeyId]])).values()];
  const { results } = await db
    .prepare(
      `SELECT ${JOURNEY_COLUMNS.split(", ").map((c) => `j.${c}`).join(", ")} FROM json_each(?) k
       JOIN journeys j ON j.panel_id = json_extract(k.value, '$[0]') AND j.id = json_extract(k.value, '$[1]')`,
    )
    .bind(JSON.stringify(keys))
    .all<JourneyRow>();
  return new Map(results.map((row) => [row.id, journeyFromRow(row)]));
}

/**
 * A panel's journey definitions as a mirror shard keeps them (decision 0041, for 0038's
 * partitions): each journey's row and versions, as JSON arrays of rows cut below D1's bound on
 * a value (jsonArrays), for mirrorJourneysStatements. `ids`: those journeys and only their
 * current version (each version was mirrored when it became current, so an instance on a mirror
 * never walks one the mirror lacks); absent: all of the panel's journeys and every version
 * (a new mirror, or a split's, whose moved instances may walk older ones).
 */
export interface MirroredJourneys {
  journeys: string[];
  versions: string[];
}

/** The columns copied, in the order mirrorJourneysStatements reads them from each row's array. */
const MIRRORED_JOURNEY = ["id", "name", "definition", "version", "trigger_type", "trigger_key", "status", "layout", "created_at", "updated_at"] as const;
const MIRRORED_VERSION = ["journey_id", "version", "definition", "created_at", "created_by"] as const;

export async function journeysToMirror(db: ShardDb, panelId: string, ids?: readonly string[]): Promise<MirroredJourneys> {
  const named = ids === undefined ? [] : [JSON.stringify(ids)];
  const [journeys, versions] = await db.batch<Record<string, unknown>>([
    db
      .prepare(`SELECT ${MIRRORED_JOURNEY.join(", ")} FROM journeys WHERE panel_id = ?1${ids === undefined ? "" : " AND id IN (SELECT value FROM json_each(?2))"}`)
      .bind(panelId, ...named),
    db
      .prepare(
        ids === undefined
          ? `SELECT ${MIRRORED_VERSION.join(", ")} FROM journey_versions WHERE panel_id = ?1`
          : `SELECT ${MIRRORED_VERSION.map((c) => `v.${c}`).join(", ")} FROM journeys j
             JOIN journey_versions v ON v.journey_id = j.id AND v.version = j.version
             WHERE j.panel_id = ?1 AND j.id IN (SELECT value FROM json_each(?2))`,
      )
      .bind(panelId, ...named),
  ]);
  const arrays = (rows: Record<string, unknown>[], columns: readonly string[]) => jsonArrays(rows.map((r) => columns.map((c) => r[c]))).map((part) => part.json);
  return { journeys: arrays(journeys!.results, MIRRORED_JOURNEY), versions: arrays(versions!.results, MIRRORED_VERSION) };
}

/**
 * Writes journeys as the home has them into the mirror on `db`: one statement per array of rows.
 * A row the mirror holds from a later write (two status changes landing out of order) is not
 * taken back.
 * A segment journey's entry scan is the mirror's own (its contacts, its cursor): it starts from
 * the first contact when the copy first arrives live, when a draft starts running and on a new
 * version (as changeJourneyStatus and addJourneyVersion start the home's), ends when the copy
 * stops or leaves the segment trigger, and otherwise goes on where that shard's scan is.
 */
export function mirrorJourneysStatements(db: ShardDb, panelId: string, mirrored: MirroredJourneys): D1PreparedStatement[] {
  return [
    ...mirrored.journeys.map((rows) =>
      db
        .prepare(
          `INSERT INTO journeys (panel_id, id, name, definition, version, trigger_type, trigger_key, status, layout, created_at, updated_at, scan_cursor)
           SELECT ?1, r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4, r.value ->> 5, r.value ->> 6, r.value ->> 7, r.value ->> 8, r.value ->> 9,
             CASE WHEN r.value ->> 4 = 'segment' AND r.value ->> 6 IN ('running', 'paused') THEN 0 END
           FROM json_each(?2) r WHERE true
           ON CONFLICT (id) DO UPDATE SET name = excluded.name, definition = excluded.definition, version = excluded.version, trigger_type = excluded.trigger_type,
             trigger_key = excluded.trigger_key, status = excluded.status, layout = excluded.layout, updated_at = excluded.updated_at,
             scan_cursor = CASE WHEN excluded.scan_cursor IS NULL THEN NULL
                                WHEN journeys.version != excluded.version OR journeys.status NOT IN ('running', 'paused') THEN 0 ELSE journeys.scan_cursor END,
             rescan_due = CASE WHEN excluded.scan_cursor IS NOT NULL AND journeys.version = excluded.version AND journeys.status IN ('running', 'paused') THEN journeys.rescan_due ELSE 0 END,
             rescan_upto = CASE WHEN excluded.scan_cursor IS NOT NULL AND journeys.version = excluded.version AND journeys.status IN ('running', 'paused') THEN journeys.rescan_upto END
           WHERE journeys.panel_id = excluded.panel_id AND journeys.updated_at <= excluded.updated_at`,
        )
        .bind(panelId, rows),
    ),
    // A draft's version 1 is rewritten in place: the mirror takes its text again.
    ...mirrored.versions.map((rows) =>
      db
        .prepare(
          `INSERT INTO journey_versions (panel_id, journey_id, version, definition, created_at, created_by)
           SELECT ?1, r.value ->> 0, r.value ->> 1, r.value ->> 2, r.value ->> 3, r.value ->> 4 FROM json_each(?2) r WHERE true
           ON CONFLICT (journey_id, version) DO UPDATE SET definition = excluded.definition, created_at = excluded.created_at`,
        )
        .bind(panelId, rows),
    ),
  ];
}

/** A journey's row as a mirror's resync compares it with the home's. */
export interface JourneyStamp {
  id: string;
  version: number;
  status: JourneyStatus;
  updatedAt: number;
}

/** The panel's journeys on `db`, each by its version, status and last change. */
export async function journeyStamps(db: ShardDb, panelId: string): Promise<JourneyStamp[]> {
  const { results } = await db.prepare("SELECT id, version, status, updated_at AS updatedAt FROM journeys WHERE panel_id = ?").bind(panelId).all<JourneyStamp>();
  return results;
}

/**
 * Drops the panel's journeys from a shard that is not its home (a mirror the map no longer
 * uses), those no instance there names (none, for a shard without the panel's contacts).
 */
export function dropMirroredJourneysStatements(db: ShardDb, panelId: string): D1PreparedStatement[] {
  const unused = "panel_id = ?1 AND NOT EXISTS (SELECT 1 FROM journey_instances i WHERE i.journey_id = journeys.id)";
  return [
    db.prepare(`DELETE FROM journey_versions WHERE panel_id = ?1 AND journey_id IN (SELECT id FROM journeys WHERE ${unused})`).bind(panelId),
    db.prepare(`DELETE FROM journeys WHERE ${unused}`).bind(panelId),
  ];
}
