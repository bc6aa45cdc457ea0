import type { ShardDb } from "../shards";

/**
 * Journey simulations on history (shard migration 0098, services/simulations/simulate.ts): which
 * version over which range, how far the steps got (the cursor: the last event simulated, in
 * (occurred_at, id) order) and, once done, the result.
 */

export type SimulationRunState = "running" | "done" | "failed";

export interface SimulationCursor {
  occurredAt: number;
  id: number;
}

export interface JourneySimulation {
  panelId: string;
  id: string;
  journeyId: string;
  version: number;
  days: number;
  from: number;
  to: number;
  state: SimulationRunState;
  eventsRead: number;
  cursor: SimulationCursor | null;
  result: unknown;
  error: string | null;
  createdBy: string | null;
  createdAt: number;
  stepAt: number;
  finishedAt: number | null;
}

interface SimulationRow {
  panel_id: string;
  id: string;
  journey_id: string;
  version: number;
  days: number;
  from_at: number;
  to_at: number;
  state: SimulationRunState;
  events_read: number;
  cursor_at: number | null;
  cursor_id: number | null;
  result: string | null;
  error: string | null;
  created_by: string | null;
  created_at: number;
  step_at: number;
  finished_at: number | null;
}

function fromRow(row: SimulationRow): JourneySimulation {
  return {
    panelId: row.panel_id,
    id: row.id,
    journeyId: row.journey_id,
    version: row.version,
    days: row.days,
    from: row.from_at,
    to: row.to_at,
    state: row.state,
    eventsRead: row.events_read,
    cursor: row.cursor_at === null || row.cursor_id === null ? null : { occurredAt: row.cursor_at, id: row.cursor_id },
    result: row.result === null ? null : JSON.parse(row.result),
    error: row.error,
    createdBy: row.created_by,
    createdAt: row.created_at,
    stepAt: row.step_at,
    finishedAt: row.finished_at,
  };
}

export async function insertSimulation(
  db: ShardDb,
  s: Pick<JourneySimulation, "panelId" | "id" | "journeyId" | "version" | "days" | "from" | "to" | "createdBy" | "createdAt">,
): Promise<JourneySimulation> {
  const row = await db
    .prepare(
      `INSERT INTO journey_simulations (panel_id, id, journey_id, version, days, from_at, to_at, state, created_by, created_at, step_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8, ?9, ?9) RETURNING *`,
    )
    .bind(s.panelId, s.id, s.journeyId, s.version, s.days, s.from, s.to, s.createdBy, s.createdAt)
    .first<SimulationRow>();
  return fromRow(row!);
}

export async function getSimulation(db: ShardDb, panelId: string, id: string): Promise<JourneySimulation | null> {
  const row = await db.prepare("SELECT * FROM journey_simulations WHERE panel_id = ? AND id = ?").bind(panelId, id).first<SimulationRow>();
  return row ? fromRow(row) : null;
}

/** A journey's simulations, newest first; of one version when given. */
export async function listSimulations(db: ShardDb, panelId: string, journeyId: string, version: number | null, limit: number): Promise<JourneySimulation[]> {
  const { results } = await db
    .prepare("SELECT * FROM journey_simulations WHERE panel_id = ?1 AND journey_id = ?2 AND (?3 IS NULL OR version = ?3) ORDER BY created_at DESC, id DESC LIMIT ?4")
    .bind(panelId, journeyId, version, limit)
    .all<SimulationRow>();
  return results.map(fromRow);
}

/**
 * Moves a running simulation on from the cursor its step read from to `to`, counting `read`
 * events; `result` ends it. False (nothing changed) when another step moved it meanwhile.
 */
export async function advanceSimulation(
  db: ShardDb,
  panelId: string,
  id: string,
  step: { from: SimulationCursor | null; to: SimulationCursor | null; read: number; result: unknown },
  now: number,
): Promise<boolean> {
  const done = step.result !== undefined;
  const outcome = await db
    .prepare(
      `UPDATE journey_simulations SET cursor_at = ?3, cursor_id = ?4, events_read = events_read + ?5, step_at = ?6,
         state = CASE WHEN ?7 THEN 'done' ELSE state END, finished_at = CASE WHEN ?7 THEN ?6 ELSE finished_at END, result = ?8
       WHERE panel_id = ?1 AND id = ?2 AND state = 'running' AND cursor_at IS ?9 AND cursor_id IS ?10`,
    )
    .bind(panelId, id, step.to?.occurredAt ?? null, step.to?.id ?? null, step.read, now, done ? 1 : 0, done ? JSON.stringify(step.result) : null, step.from?.occurredAt ?? null, step.from?.id ?? null)
    .run();
  return (outcome.meta.changes ?? 0) > 0;
}

export async function failSimulation(db: ShardDb, panelId: string, id: string, error: string, now: number): Promise<void> {
  await db
    .prepare("UPDATE journey_simulations SET state = 'failed', error = ?3, finished_at = ?4, step_at = ?4 WHERE panel_id = ?1 AND id = ?2 AND state = 'running'")
    .bind(panelId, id, error, now)
    .run();
}

/** Running simulations whose last step is older than `before`, marked as looked at now (the re-drive nudges them). */
export async function stalledSimulations(db: ShardDb, before: number, now: number, limit: number): Promise<Array<{ panelId: string; simulationId: string }>> {
  const { results } = await db
    .prepare(
      `UPDATE journey_simulations SET step_at = ?1
       WHERE (panel_id, id) IN (SELECT panel_id, id FROM journey_simulations WHERE state = 'running' AND step_at < ?2 LIMIT ?3)
       RETURNING panel_id, id`,
    )
    .bind(now, before, limit)
    .all<{ panel_id: string; id: string }>();
  return results.map((row) => ({ panelId: row.panel_id, simulationId: row.id }));
}

/**
 * The statement that drops from the panel's simulation results the samples naming the contact
 * (its rendered messages and webhook payloads), for its erasure's batch. Only results whose text
 * names it are rewritten (a plain substring test first: JSON.stringify writes `"contact_id":"7"`).
 * The id is cast to an integer first: a bound JS number may arrive as a real ("7.0").
 */
export function scrubSamplesStatement(db: ShardDb, panelId: string, contactId: number): D1PreparedStatement {
  const without = (path: string) => `(SELECT json_group_array(json(value)) FROM json_each(result, '${path}') WHERE value ->> 'contact_id' IS NOT CAST(CAST(?2 AS INTEGER) AS TEXT))`;
  return db
    .prepare(
      `UPDATE journey_simulations SET result = json_set(result, '$.samples.messages', ${without("$.samples.messages")}, '$.samples.webhooks', ${without("$.samples.webhooks")})
       WHERE panel_id = ?1 AND result IS NOT NULL AND instr(result, '"contact_id":"' || CAST(CAST(?2 AS INTEGER) AS TEXT) || '"') > 0`,
    )
    .bind(panelId, contactId);
}
