import type { SplitEntryGoal } from "../../domain/journey-walk";
import type { ShardDb } from "../shards";
import { instanceStays } from "./instances";
import { instanceHasWaitingMessage } from "./messages";
// A/B split entries and journey goal conversions (migration 0082, decision 0042).

export interface SplitEntry {
  instanceId: string;
  stepId: string;
  panelId: string;
  journeyId: string;
  contactId: number;
  branch: string;
  goal: SplitEntryGoal | null;
}

/**
 * The branch an instance took at a split; a second insert (a step run again) is ignored, as is
 * one of an instance that exited meanwhile (a goal or stop before the continuation's writes),
 * which the split's figures then do not count. It takes its instance's bucket (decision 0038).
 */
export function insertSplitEntryStatement(db: ShardDb, e: SplitEntry, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO journey_split_entries (instance_id, step_id, panel_id, journey_id, contact_id, branch, at, goal_kind, goal_key, goal_until, bucket)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, COALESCE((SELECT bucket FROM journey_instances WHERE id = ?1), 0)
       WHERE ${instanceStays("?1")}`,
    )
    .bind(
      e.instanceId,
      e.stepId,
      e.panelId,
      e.journeyId,
      e.contactId,
      e.branch,
      now,
      e.goal?.kind ?? null,
      e.goal?.kind === "activity" ? e.goal.key : null,
      e.goal?.until ?? null,
    );
}

/** An event that may reach split goals: a contact's activity, or an open or click of a journey message. */
export interface GoalEvent {
  contactId: number;
  occurredAt: number;
  /** activity: its lower-case name; open/click: the message's instance. */
  kind: "activity" | "open" | "click";
  key: string;
}

/**
 * Marks the split entries these events convert: those of the contact whose goal is the event,
 * split before it and within the goal's window (for an activity, domain/journey-walk.ts
 * `splitGoalMet`, which the simulation applies). Setting converted_at once (where still NULL)
 * makes a redelivered event count once.
 */
export async function markSplitConversions(db: ShardDb, panelId: string, events: readonly GoalEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db
    .prepare(
      `UPDATE journey_split_entries AS s SET converted_at = (
         SELECT MIN(json_extract(e.value, '$[3]')) FROM json_each(?2) e
         WHERE json_extract(e.value, '$[0]') = s.contact_id AND json_extract(e.value, '$[1]') = s.goal_kind
           AND json_extract(e.value, '$[2]') = CASE s.goal_kind WHEN 'activity' THEN s.goal_key ELSE s.instance_id END
           AND json_extract(e.value, '$[3]') BETWEEN s.at AND s.goal_until)
       WHERE s.panel_id = ?1 AND s.converted_at IS NULL AND s.goal_kind IS NOT NULL
         AND s.contact_id IN (SELECT json_extract(value, '$[0]') FROM json_each(?2))
         AND EXISTS (SELECT 1 FROM json_each(?2) e
           WHERE json_extract(e.value, '$[0]') = s.contact_id AND json_extract(e.value, '$[1]') = s.goal_kind
             AND json_extract(e.value, '$[2]') = CASE s.goal_kind WHEN 'activity' THEN s.goal_key ELSE s.instance_id END
             AND json_extract(e.value, '$[3]') BETWEEN s.at AND s.goal_until)`,
    )
    .bind(panelId, JSON.stringify(events.map((e) => [e.contactId, e.kind, e.key, e.occurredAt])))
    .run();
}

/** Per split step and branch: instances that took it and those of them converted. */
export async function splitTallies(db: ShardDb, panelId: string, journeyId: string): Promise<Array<{ stepId: string; branch: string; entered: number; converted: number }>> {
  const { results } = await db
    .prepare(
      `SELECT step_id, branch, COUNT(*) AS entered, COUNT(converted_at) AS converted FROM journey_split_entries
       WHERE journey_id = ?2 AND panel_id = ?1 GROUP BY step_id, branch`,
    )
    .bind(panelId, journeyId)
    .all<{ step_id: string; branch: string; entered: number; converted: number }>();
  return results.map((r) => ({ stepId: r.step_id, branch: r.branch, entered: r.entered, converted: r.converted }));
}

/**
 * Ends the active instances of these (instance, event) pairs as converted: records the
 * conversion, cancels the instance's waits, delays and points not yet continued, and exits it,
 * in one batch. Each statement re-checks that the instance is still active, so a second call
 * (a redelivered event) changes nothing. Returns how many instances this call converted.
 */
export async function convertInstances(db: ShardDb, panelId: string, conversions: ReadonlyArray<{ instanceId: string; eventId: number }>, now: number): Promise<number> {
  if (conversions.length === 0) return 0;
  const statements = conversions.flatMap(({ instanceId, eventId }) => [
    db
      .prepare(
        `INSERT OR IGNORE INTO journey_conversions (instance_id, panel_id, journey_id, contact_id, event_id, at, bucket)
         SELECT id, panel_id, journey_id, contact_id, ?3, ?4, bucket FROM journey_instances WHERE id = ?1 AND panel_id = ?2 AND status = 'active' RETURNING instance_id`,
      )
      .bind(instanceId, panelId, eventId, now),
    db
      .prepare(
        `UPDATE journey_points SET outcome = COALESCE(outcome, 'cancelled'), resolved_at = COALESCE(resolved_at, ?3), continued_at = ?3
         WHERE instance_id = ?1 AND panel_id = ?2 AND continued_at IS NULL
           AND EXISTS (SELECT 1 FROM journey_instances WHERE id = ?1 AND status = 'active')`,
      )
      .bind(instanceId, panelId, now),
    db.prepare("UPDATE journey_instances SET status = 'exited', ended_at = ?3 WHERE id = ?1 AND panel_id = ?2 AND status = 'active'").bind(instanceId, panelId, now),
  ]);
  const results = await db.batch<{ instance_id: string }>(statements);
  let converted = 0;
  for (let i = 0; i < results.length; i += 3) converted += results[i]!.results.length;
  return converted;
}

/**
 * Active instances of these journeys of the given contacts, with when they entered, and the
 * completed ones whose SMS or push still waits for its provider (a pause holds it): a goal
 * reached before it went drops it.
 */
export async function goalInstancesOf(
  db: ShardDb,
  panelId: string,
  journeyIds: readonly string[],
  contactIds: readonly number[],
): Promise<Array<{ id: string; journeyId: string; contactId: number; entryKey: string; enteredAt: number; status: "active" | "completed" }>> {
  if (journeyIds.length === 0 || contactIds.length === 0) return [];
  const { results } = await db
    .prepare(
      `SELECT id, journey_id, contact_id, entry_key, entered_at, status FROM journey_instances i
       WHERE panel_id = ?1 AND contact_id IN (SELECT value FROM json_each(?3)) AND journey_id IN (SELECT value FROM json_each(?2))
         AND (status = 'active' OR (status = 'completed' AND ${instanceHasWaitingMessage("i")}))`,
    )
    .bind(panelId, JSON.stringify([...new Set(journeyIds)]), JSON.stringify([...new Set(contactIds)]))
    .all<{ id: string; journey_id: string; contact_id: number; entry_key: string; entered_at: number; status: "active" | "completed" }>();
  return results.map((r) => ({ id: r.id, journeyId: r.journey_id, contactId: r.contact_id, entryKey: r.entry_key, enteredAt: r.entered_at, status: r.status }));
}

/** Conversions of a journey: all, and those within [from, to). */
export async function conversionCount(db: ShardDb, panelId: string, journeyId: string, period?: { from: number; to: number }): Promise<number> {
  const row = await db
    .prepare("SELECT COUNT(*) AS n FROM journey_conversions WHERE journey_id = ?2 AND panel_id = ?1 AND (?3 IS NULL OR (at >= ?3 AND at < ?4))")
    .bind(panelId, journeyId, period?.from ?? null, period?.to ?? null)
    .first<{ n: number }>();
  return row?.n ?? 0;
}
