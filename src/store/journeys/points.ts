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

/** A wait or delay; a second insert for the same (instance, step) is ignored. */
export function insertPointStatement(db: D1Database, p: NewPoint, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO journey_points (instance_id, step_id, panel_id, journey_id, contact_id, kind, channel, msgid, events, activity_key, event_id, due_at, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
export async function pendingWaitsFor(db: D1Database, panelId: string, msgids: readonly string[], contactIds: readonly number[]): Promise<JourneyPoint[]> {
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

/** Ends pending waits with the event that came; returns the points this call ended (the others were taken). */
export async function resolveWaitsWithEvents(db: D1Database, matches: ReadonlyArray<{ pointId: number; eventId: number }>, now: number): Promise<JourneyPoint[]> {
  if (matches.length === 0) return [];
  const results = await db.batch<PointRow>(
    matches.map((m) =>
      db
        .prepare(`UPDATE journey_points SET outcome = 'event', matched_event_id = ?, resolved_at = ? WHERE id = ? AND outcome IS NULL RETURNING ${POINT_COLUMNS}`)
        .bind(m.eventId, now, m.pointId),
    ),
  );
  return results.flatMap((r) => r.results.map(pointFromRow));
}

/**
 * Fires due waits (timeout) and delays (elapsed) of running journeys; each point is ended
 * once, by whichever run's UPDATE gets it. Returns the points this call ended.
 */
export async function fireDuePoints(db: D1Database, now: number, limit: number): Promise<JourneyPoint[]> {
  const { results } = await db
    .prepare(
      `UPDATE journey_points SET outcome = CASE kind WHEN 'delay' THEN 'elapsed' ELSE 'timeout' END, resolved_at = ?1
       WHERE id IN (
         SELECT p.id FROM journey_points p JOIN journeys j ON j.id = p.journey_id
         WHERE p.outcome IS NULL AND p.due_at IS NOT NULL AND p.due_at <= ?1 AND j.status = 'running'
         ORDER BY p.due_at LIMIT ?2)
       AND outcome IS NULL
       RETURNING ${POINT_COLUMNS}`,
    )
    .bind(now, limit)
    .all<PointRow>();
  return results.map(pointFromRow);
}

/** Ended points not yet continued since before `before`, in running journeys (held by a pause, or a crash). */
export async function pointsLeftBehind(db: D1Database, before: number, limit: number, journeyId?: string): Promise<JourneyPoint[]> {
  const { results } = await db
    .prepare(
      `SELECT ${POINT_COLUMNS.split(", ").map((c) => `p.${c}`).join(", ")} FROM journey_points p JOIN journeys j ON j.id = p.journey_id
       WHERE p.outcome IS NOT NULL AND p.continued_at IS NULL AND p.resolved_at <= ? AND j.status = 'running' AND (? IS NULL OR p.journey_id = ?)
       ORDER BY p.resolved_at LIMIT ?`,
    )
    .bind(before, journeyId ?? null, journeyId ?? null, limit)
    .all<PointRow>();
  return results.map(pointFromRow);
}

/**
 * Marks a point continued and completes its instance when nothing of it is pending or left to
 * continue any more.
 */
export function finishPointStatements(db: D1Database, point: JourneyPoint, now: number): D1PreparedStatement[] {
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
