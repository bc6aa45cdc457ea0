import { notMovingHere } from "../panel-move/triggers";
import type { ShardDb } from "../shards";
// Journey points: where an instance started, waits for an event or sits out a delay; how each
// ended, and whether the instance went on from it.

export type PointKind = "start" | "wait" | "delay";
export type PointOutcome = "start" | "event" | "timeout" | "elapsed" | "cancelled";

export interface JourneyPoint {
  id: number;
  instanceId: string;
  stepId: string;
  panelId: string;
  journeyId: string;
  contactId: number;
  kind: PointKind;
  channel: string | null;
  msgid: string | null;
  events: string[] | null;
  activityKey: string | null;
  eventId: number | null;
  dueAt: number | null;
  outcome: PointOutcome | null;
  matchedEventId: number | null;
  createdAt: number;
}

interface PointRow {
  id: number;
  instance_id: string;
  step_id: string;
  panel_id: string;
  journey_id: string;
  contact_id: number;
  kind: PointKind;
  channel: string | null;
  msgid: string | null;
  events: string | null;
  activity_key: string | null;
  event_id: number | null;
  due_at: number | null;
  outcome: PointOutcome | null;
  matched_event_id: number | null;
  created_at: number;
}

const POINT_COLUMNS = "id, instance_id, step_id, panel_id, journey_id, contact_id, kind, channel, msgid, events, activity_key, event_id, due_at, outcome, matched_event_id, created_at";

function pointFromRow(row: PointRow): JourneyPoint {
  return {
    id: row.id,
    instanceId: row.instance_id,
    stepId: row.step_id,
    panelId: row.panel_id,
    journeyId: row.journey_id,
    contactId: row.contact_id,
    kind: row.kind,
    channel: row.channel,
    msgid: row.msgid,
    events: row.events === null ? null : (JSON.parse(row.events) as string[]),
    activityKey: row.activity_key,
    eventId: row.event_id,
    dueAt: row.due_at,
    outcome: row.outcome,
    matchedEventId: row.matched_event_id,
    createdAt: row.created_at,
  };
}

export interface NewPoint {
  instanceId: string;
  stepId: string;
  panelId: string;
  journeyId: string;
  contactId: number;
  kind: "wait" | "delay";
  channel?: string;
  msgid?: string;
  events?: string[];
  activityKey?: string;
  eventId: number | null;
  dueAt: number;
}

/**
 * A wait or delay; a second insert for the same (instance, step) is ignored. It takes its
 * instance's bucket (decision 0038). Only while the instance is active: a goal reached or a
 * stop ends it while a step of it runs, and a point written after that would wait (and mail)
 * for an instance that left.
 */
export function insertPointStatement(db: ShardDb, p: NewPoint, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO journey_points (instance_id, step_id, panel_id, journey_id, contact_id, kind, channel, msgid, events, activity_key, event_id, due_at, created_at, bucket)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, bucket FROM journey_instances WHERE id = ?1 AND status = 'active'`,
    )
    .bind(
      p.instanceId,
      p.stepId,
      p.panelId,
      p.journeyId,
      p.contactId,
      p.kind,
      p.channel ?? null,
      p.msgid ?? null,
      p.events ? JSON.stringify(p.events) : null,
      p.activityKey ?? null,
      p.eventId,
      p.dueAt,
      now,
    );
}

/** Pending waits of the panel that one of these messages or contacts' activities could end. */
export async function pendingWaitsFor(db: ShardDb, panelId: string, msgids: readonly string[], contactIds: readonly number[]): Promise<JourneyPoint[]> {
  if (msgids.length === 0 && contactIds.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT ${POINT_COLUMNS} FROM journey_points WHERE panel_id = ?1 AND outcome IS NULL AND msgid IN (SELECT value FROM json_each(?2))
       UNION ALL
       SELECT ${POINT_COLUMNS} FROM journey_points WHERE panel_id = ?1 AND outcome IS NULL AND activity_key IS NOT NULL
         AND contact_id IN (SELECT value FROM json_each(?3))`,
    )
    .bind(panelId, JSON.stringify(msgids), JSON.stringify(contactIds))
    .all<PointRow>();
  return results.map(pointFromRow);
}

/**
 * Ends pending waits with the event that came, leased to the caller until `until`; returns the
 * points this call ended (the others were taken).
 */
export async function resolveWaitsWithEvents(db: ShardDb, matches: ReadonlyArray<{ pointId: number; eventId: number }>, now: number, until: number): Promise<JourneyPoint[]> {
  if (matches.length === 0) return [];
  const results = await db.batch<PointRow>(
    matches.map((m) =>
      db
        .prepare(`UPDATE journey_points SET outcome = 'event', matched_event_id = ?, resolved_at = ?, leased_until = ? WHERE id = ? AND outcome IS NULL RETURNING ${POINT_COLUMNS}`)
        .bind(m.eventId, now, until, m.pointId),
    ),
  );
  return results.flatMap((r) => r.results.map(pointFromRow));
}

/**
 * Fires due waits (timeout) and delays (elapsed) of running journeys, leased until `until` (a
 * time already past hands them to whoever takes free points); each point is ended once, by
 * whichever run's UPDATE gets it. Returns the points this call ended. Not those a move holds
 * here (notMovingHere): a copy's fire on its source until the switch, a fenced one on the
 * target from the switch (decisions 0031, 0047).
 */
export async function fireDuePoints(db: ShardDb, now: number, limit: number, until: number): Promise<JourneyPoint[]> {
  const { results } = await db
    .prepare(
      `UPDATE journey_points SET outcome = CASE kind WHEN 'delay' THEN 'elapsed' ELSE 'timeout' END, resolved_at = ?1, leased_until = ?3
       WHERE id IN (
         SELECT p.id FROM journey_points p JOIN journeys j ON j.id = p.journey_id
         WHERE p.outcome IS NULL AND p.due_at IS NOT NULL AND p.due_at <= ?1 AND j.status = 'running' AND ${notMovingHere("p")}
         ORDER BY p.due_at LIMIT ?2)
       AND outcome IS NULL
       RETURNING ${POINT_COLUMNS}`,
    )
    .bind(now, limit, until)
    .all<PointRow>();
  return results.map(pointFromRow);
}

// Ended points not yet continued; free when no lease holds them (the one who ended or took
// them died, or handed them on). Points of journeys not running stay held until they run.
const FREE_POINT = "p.outcome IS NOT NULL AND p.continued_at IS NULL AND p.leased_until <= ?1";

/**
 * Leases up to `limit` free points of running journeys, of one panel or journey or of all,
 * until `until`; the caller continues them. A lease whose holder died runs out and the points
 * are free again; continuing twice acts once (services/journeys/engine.ts). Not those a move
 * holds here (notMovingHere, as fireDuePoints).
 */
export async function takeFreePoints(
  db: ShardDb,
  scope: { panelId?: string; journeyId?: string },
  now: number,
  until: number,
  limit: number,
): Promise<JourneyPoint[]> {
  const { results } = await db
    .prepare(
      `UPDATE journey_points SET leased_until = ?2
       WHERE id IN (
         SELECT p.id FROM journeys j CROSS JOIN journey_points p ON p.journey_id = j.id
         WHERE j.status = 'running' AND (?4 IS NULL OR j.panel_id = ?4) AND (?5 IS NULL OR j.id = ?5) AND ${FREE_POINT} AND ${notMovingHere("p")}
         LIMIT ?3)
       AND leased_until <= ?1
       RETURNING ${POINT_COLUMNS}`,
    )
    .bind(now, until, limit, scope.panelId ?? null, scope.journeyId ?? null)
    .all<PointRow>();
  return results.map(pointFromRow);
}

/** Frees points leased by the caller without continuing them (found by instance and step: a fresh start has no id yet). */
export async function releasePoints(db: ShardDb, points: ReadonlyArray<Pick<JourneyPoint, "instanceId" | "stepId">>): Promise<void> {
  if (points.length === 0) return;
  await db
    .prepare(
      `UPDATE journey_points SET leased_until = 0
       WHERE instance_id IN (SELECT value->>0 FROM json_each(?1))
         AND EXISTS (SELECT 1 FROM json_each(?1) k WHERE k.value->>0 = journey_points.instance_id AND k.value->>1 = journey_points.step_id)`,
    )
    .bind(JSON.stringify(points.map((p) => [p.instanceId, p.stepId])))
    .run();
}

/**
 * Leases the free start points of instances these entries already made (an earlier attempt
 * entered them and died before continuing), so entering again finishes what it began.
 */
export async function takeStartPoints(db: ShardDb, entries: ReadonlyArray<{ journeyId: string; entryKey: string }>, now: number, until: number): Promise<JourneyPoint[]> {
  if (entries.length === 0) return [];
  const { results } = await db
    .prepare(
      `UPDATE journey_points SET leased_until = ?2
       WHERE id IN (
         SELECT p.id FROM json_each(?3) k
           JOIN journey_instances i ON i.journey_id = k.value->>0 AND i.entry_key = k.value->>1
           JOIN journey_points p ON p.instance_id = i.id AND p.step_id = ''
         WHERE ${FREE_POINT})
       AND leased_until <= ?1
       RETURNING ${POINT_COLUMNS}`,
    )
    .bind(now, until, JSON.stringify(entries.map((e) => [e.journeyId, e.entryKey])))
    .all<PointRow>();
  return results.map(pointFromRow);
}

/**
 * Panels with free points of running journeys, each with how many (counted up to `cap` per
 * journey), for the cron's re-drive. Reads across panels, but only to name panels; not the
 * points takeFreePoints leaves alone (notMovingHere), so no message is sent for them.
 */
export async function panelsWithFreePoints(db: ShardDb, now: number, cap: number, limit: number): Promise<Array<{ panelId: string; free: number }>> {
  const { results } = await db
    .prepare(
      `SELECT panel_id, SUM(n) AS free FROM (
         SELECT j.panel_id, (SELECT COUNT(*) FROM (SELECT 1 FROM journey_points p WHERE p.journey_id = j.id AND ${FREE_POINT} AND ${notMovingHere("p")} LIMIT ?2)) AS n
         FROM journeys j WHERE j.status = 'running')
       WHERE n > 0 GROUP BY panel_id LIMIT ?3`,
    )
    .bind(now, cap, limit)
    .all<{ panel_id: string; free: number }>();
  return results.map((r) => ({ panelId: r.panel_id, free: r.free }));
}

/**
 * Marks a point continued and completes its instance when nothing of it is pending or left to
 * continue any more.
 */
export function finishPointStatements(db: ShardDb, point: JourneyPoint, now: number): D1PreparedStatement[] {
  return [
    db
      .prepare("UPDATE journey_points SET continued_at = ? WHERE panel_id = ? AND instance_id = ? AND step_id = ? AND continued_at IS NULL")
      .bind(now, point.panelId, point.instanceId, point.stepId),
    db
      .prepare(
        `UPDATE journey_instances SET status = 'completed', ended_at = ?1
         WHERE panel_id = ?3 AND id = ?2 AND status = 'active' AND NOT EXISTS (SELECT 1 FROM journey_points WHERE instance_id = ?2 AND continued_at IS NULL)`,
      )
      .bind(now, point.instanceId, point.panelId),
  ];
}

/**
 * Sets the panel's waiting gauges on `db` (journey_step_waiting) to the unresolved waits and
 * delays `db` holds, or with `leaving` to those outside those buckets. Without it: for a shard
 * that took a partition's points in transit (a split, decision 0047), whose triggers counted none
 * of them, so that their ending there would take the gauge below zero. With it: for the shard the
 * split's partition left, from its switch, while it still holds its copies of the moved waits
 * until cleaning; their deletes then count nothing (shard migration 0118), so a journey's report
 * summed over the shards counts each wait once throughout. One batch (a transaction), exact
 * whenever it runs once the shard's triggers count.
 */
export function recountWaitingStatements(db: ShardDb, panelId: string, leaving?: { first: number; last: number }): D1PreparedStatement[] {
  return [
    db.prepare("UPDATE journey_step_waiting SET waiting = 0 WHERE panel_id = ?1").bind(panelId),
    db
      .prepare(
        `INSERT INTO journey_step_waiting (journey_id, step_id, panel_id, waiting)
         SELECT journey_id, step_id, panel_id, COUNT(*) FROM journey_points
         WHERE panel_id = ?1 AND kind <> 'start' AND outcome IS NULL AND (?2 IS NULL OR bucket NOT BETWEEN ?2 AND ?3) GROUP BY journey_id, step_id
         ON CONFLICT (journey_id, step_id) DO UPDATE SET waiting = excluded.waiting`,
      )
      .bind(panelId, leaving?.first ?? null, leaving?.last ?? null),
  ];
}
