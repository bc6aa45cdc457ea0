import type { ShardDb } from "./shards";
import type { JourneyChannelFigures, JourneyStepFigures } from "../domain/journey-report";
import { utcHourOf } from "../domain/time";

/**
 * A journey's report from its aggregates (migration 0053, decision 0028): sums over the hours of
 * the period in journey_stats, journey_step_stats and journey_channel_stats, and the current
 * journey_step_waiting, each read on its primary key (journey first), so a few rows per journey,
 * step or channel and hour whatever the journey's size.
 */

export interface JourneyTotals {
  entered: number;
  completed: number;
  exited: number;
}

/** A step's sums over the period (its type comes from the definition, waiting from journey_step_waiting). */
export type StepSums = Omit<JourneyStepFigures, "type" | "waiting"> & { step_id: string };

export type ChannelSums = JourneyChannelFigures & { channel: string };

export interface JourneyFigures {
  totals: JourneyTotals;
  steps: StepSums[];
  waiting: Array<{ step_id: string; waiting: number }>;
  channels: ChannelSums[];
}

/** A message step held by quiet hours or a cap waits at `<step>#<n>` (services/journeys/engine.ts heldStepOf): its figures are its step's. */
const HELD_AT_STEP = "CASE WHEN instr(step_id, '#') > 0 THEN substr(step_id, 1, instr(step_id, '#') - 1) ELSE step_id END";
const sum = (column: string) => `COALESCE(SUM(${column}), 0) AS ${column}`;

/** The journey's figures over the hours starting in [from, to) (from rounded down to its hour), and what waits now. */
export async function journeyFigures(db: ShardDb, panelId: string, journeyId: string, from: number, to: number): Promise<JourneyFigures> {
  const hourFrom = utcHourOf(from);
  const [totals, steps, waiting, channels] = await db.batch<Record<string, unknown>>([
    db
      .prepare(`SELECT ${["entered", "completed", "exited"].map(sum).join(", ")} FROM journey_stats WHERE journey_id = ?2 AND hour >= ?3 AND hour < ?4 AND panel_id = ?1`)
      .bind(panelId, journeyId, hourFrom, to),
    db
      .prepare(
        `SELECT ${HELD_AT_STEP} AS step_id, ${["entered", "passed", "failed", "timed_out"].map(sum).join(", ")} FROM journey_step_stats
         WHERE journey_id = ?2 AND hour >= ?3 AND hour < ?4 AND panel_id = ?1 GROUP BY 1`,
      )
      .bind(panelId, journeyId, hourFrom, to),
    db
      .prepare(
        `SELECT ${HELD_AT_STEP} AS step_id, SUM(waiting) AS waiting
         FROM journey_step_waiting WHERE journey_id = ?2 AND panel_id = ?1 GROUP BY 1`,
      )
      .bind(panelId, journeyId),
    db
      .prepare(
        `SELECT channel, ${["sent", "failed", "skipped", "delivered", "opens", "opened", "clicks", "clicked", "bounced"].map(sum).join(", ")} FROM journey_channel_stats
         WHERE journey_id = ?2 AND hour >= ?3 AND hour < ?4 AND panel_id = ?1 GROUP BY channel`,
      )
      .bind(panelId, journeyId, hourFrom, to),
  ]);
  return {
    totals: totals!.results[0] as unknown as JourneyTotals,
    steps: steps!.results as unknown as StepSums[],
    waiting: waiting!.results as unknown as Array<{ step_id: string; waiting: number }>,
    channels: channels!.results as unknown as ChannelSums[],
  };
}

export interface ContactInstance {
  id: string;
  journeyId: string;
  name: string;
  status: string;
  enteredAt: number;
  endedAt: number | null;
}

export interface InstanceStep {
  instanceId: string;
  stepId: string;
  at: number;
  /** The step run's own result (a message step's is its msgid). */
  result: string | null;
  /** The message the step sent, if any: its status. */
  messageStatus: string | null;
  /** The wait or delay the step made, if any: how it ended (null while waiting). */
  pointKind: string | null;
  pointOutcome: string | null;
}

/** The contact's newest `limit` journey instances, newest first (index journey_instances_by_contact). */
export async function contactInstances(db: ShardDb, panelId: string, contactId: number, limit: number): Promise<ContactInstance[]> {
  const { results } = await db
    .prepare(
      `SELECT i.id, i.journey_id, j.name, i.status, i.entered_at, i.ended_at
       FROM journey_instances i JOIN journeys j ON j.id = i.journey_id AND j.panel_id = ?1
       WHERE i.panel_id = ?1 AND i.contact_id = ?2 ORDER BY i.entered_at DESC, i.id DESC LIMIT ?3`,
    )
    .bind(panelId, contactId, limit)
    .all<{ id: string; journey_id: string; name: string; status: string; entered_at: number; ended_at: number | null }>();
  return results.map((r) => ({ id: r.id, journeyId: r.journey_id, name: r.name, status: r.status, enteredAt: r.entered_at, endedAt: r.ended_at }));
}

/** The steps these instances ran, each with its message's status or its point's outcome, in the order they ran. */
export async function stepsOfInstances(db: ShardDb, panelId: string, instanceIds: readonly string[]): Promise<InstanceStep[]> {
  if (instanceIds.length === 0) return [];
  const { results } = await db
    .prepare(
      // Step runs by their primary key (instance first); messages by msgid; points by (instance, step).
      `SELECT r.instance_id, r.step_id, r.at, r.result, m.status AS message_status, p.kind AS point_kind, p.outcome AS point_outcome
       FROM json_each(?2) k
         CROSS JOIN journey_step_runs r ON r.instance_id = k.value
         LEFT JOIN journey_messages m ON m.msgid = r.result AND m.panel_id = ?1
         LEFT JOIN journey_points p ON p.instance_id = r.instance_id AND p.step_id = r.step_id AND p.panel_id = ?1
       ORDER BY r.at`,
    )
    .bind(panelId, JSON.stringify(instanceIds))
    .all<{ instance_id: string; step_id: string; at: number; result: string | null; message_status: string | null; point_kind: string | null; point_outcome: string | null }>();
  return results.map((r) => ({
    instanceId: r.instance_id,
    stepId: r.step_id,
    at: r.at,
    result: r.result,
    messageStatus: r.message_status,
    pointKind: r.point_kind,
    pointOutcome: r.point_outcome,
  }));
}
