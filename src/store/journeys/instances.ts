import type { ShardDb } from "../shards";
import type { BucketRanges } from "../../domain/partitions";
import { inBucketRanges } from "../sql";
// Journey instances (a contact's way through a journey), the steps they ran, and their counts.

export interface Entry {
  instanceId: string;
  panelId: string;
  journeyId: string;
  contactId: number;
  entryKey: string;
  /** The triggering event, carried to the steps (webhooks describe it). */
  eventId: number | null;
  /** The journey's version whose filter let the contact in: the one the instance walks to its end. */
  version: number;
}

/**
 * Enters contacts into journeys: each gets an active instance and its start point, unless it
 * is already in that journey, this very trigger entered it before (its instance, or the key
 * kept when a finished instance was pruned), or the journey was stopped
 * since the trigger (checked in the same statement, so a stop cannot slip in between). The
 * start points are leased to the caller until `until`, who continues them. Returns the
 * instance ids created.
 */
export async function enterInstances(db: ShardDb, entries: readonly Entry[], now: number, until: number): Promise<Set<string>> {
  if (entries.length === 0) return new Set();
  const statements: D1PreparedStatement[] = [];
  for (const e of entries) {
    statements.push(
      db
        .prepare(
          `INSERT OR IGNORE INTO journey_instances (id, panel_id, journey_id, contact_id, entry_key, status, entered_at, version, bucket)
           SELECT ?1, ?2, ?3, ?4, ?5, 'active', ?6, ?7, COALESCE((SELECT bucket FROM contacts WHERE id = ?4 AND panel_id = ?2), 0)
           WHERE EXISTS (SELECT 1 FROM journeys WHERE panel_id = ?2 AND id = ?3 AND status IN ('running', 'paused'))
             AND NOT EXISTS (SELECT 1 FROM journey_entry_keys WHERE journey_id = ?3 AND entry_key = ?5) RETURNING id`,
        )
        .bind(e.instanceId, e.panelId, e.journeyId, e.contactId, e.entryKey, now, e.version),
      db
        .prepare(
          `INSERT OR IGNORE INTO journey_points (instance_id, step_id, panel_id, journey_id, contact_id, kind, event_id, outcome, created_at, resolved_at, leased_until, bucket)
           SELECT id, '', panel_id, journey_id, contact_id, 'start', ?1, 'start', ?2, ?2, ?4, bucket FROM journey_instances WHERE id = ?3`,
        )
        .bind(e.eventId, now, e.instanceId, until),
    );
  }
  const results = await db.batch<{ id: string }>(statements);
  const created = new Set<string>();
  for (let i = 0; i < results.length; i += 2) for (const row of results[i]!.results) created.add(row.id);
  return created;
}

/**
 * Whether each instance may still act: `go` while it is active and its journey runs, `held`
 * while its journey is paused, `ended` once it ended (a stop, its goal) or its journey was
 * stopped. An instance not found is absent. One statement, primary-key reads only (CROSS
 * JOIN keeps the ids first: the panel's index would read every instance of the panel).
 */
export async function instancesGoing(db: ShardDb, panelId: string, instanceIds: readonly string[]): Promise<Map<string, "go" | "held" | "ended">> {
  if (instanceIds.length === 0) return new Map();
  const { results } = await db
    .prepare(
      `SELECT i.id, CASE WHEN i.status <> 'active' THEN 'ended' WHEN j.status = 'running' THEN 'go' WHEN j.status = 'paused' THEN 'held' ELSE 'ended' END AS state
       FROM json_each(?1) k CROSS JOIN journey_instances i ON i.id = k.value JOIN journeys j ON j.id = i.journey_id
       WHERE i.panel_id = ?2`,
    )
    .bind(JSON.stringify([...new Set(instanceIds)]), panelId)
    .all<{ id: string; state: "go" | "held" | "ended" }>();
  return new Map(results.map((r) => [r.id, r.state]));
}

/**
 * SQL true while the instance whose id is bound at `idParam` (e.g. "?1") has not exited (its goal
 * or a stop): the writes of a continuation, a message or a split entry take it as their condition,
 * so a goal or stop landing between the reads and the writes records nothing for the instance.
 */
export function instanceStays(idParam: string): string {
  return `NOT EXISTS (SELECT 1 FROM journey_instances WHERE id = ${idParam} AND status = 'exited')`;
}

/**
 * A step's run, recorded only while its instance has not exited (read by primary key in the
 * insert): a goal or stop landing between a continuation's reads and its writes counts no step
 * the instance walked only on paper.
 */
export function stepRunStatement(db: ShardDb, instanceId: string, stepId: string, journeyId: string, result: string, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO journey_step_runs (instance_id, step_id, journey_id, result, at)
       SELECT ?1, ?2, ?3, ?4, ?5 WHERE ${instanceStays("?1")}`,
    )
    .bind(instanceId, stepId, journeyId, result, now);
}

/**
 * A webhook step's run, recorded with its hand-over's result whatever became of the instance
 * since: the event is with the webhook, so the step did run.
 */
export function handedStepRunStatement(db: ShardDb, instanceId: string, stepId: string, journeyId: string, result: string, now: number): D1PreparedStatement {
  return db
    .prepare("INSERT OR IGNORE INTO journey_step_runs (instance_id, step_id, journey_id, result, at) VALUES (?, ?, ?, ?, ?)")
    .bind(instanceId, stepId, journeyId, result, now);
}

/**
 * A message step's run (its result the msgid), recorded only with its message: an insert that
 * wrote nothing (its instance exited, its contact was erased) leaves the step not acted.
 */
export function messageStepRunStatement(db: ShardDb, instanceId: string, stepId: string, journeyId: string, msgid: string, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT OR IGNORE INTO journey_step_runs (instance_id, step_id, journey_id, result, at)
       SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM journey_messages WHERE msgid = ?4)`,
    )
    .bind(instanceId, stepId, journeyId, msgid, now);
}

export interface JourneyCounters {
  entered: number;
  active: number;
  completed: number;
  exited: number;
  /** Instances that left on reaching the journey's goal (among the exited). */
  converted: number;
  /** Per step: how many instances it acted for, and how many wait at it now. */
  steps: Record<string, { acted: number; waiting: number }>;
}

/**
 * The journey's counters from the rows this shard holds; with `buckets`, from those in them (the
 * shard's in the panel's map: between a split's switch and its cleaning the source still holds
 * copies of the moved instances, points and step runs, which the target counts; decision 0047).
 * What housekeeping pruned is an aggregate of the shard that counted it, read whole.
 */
export async function journeyCounters(db: ShardDb, panelId: string, journeyId: string, buckets: BucketRanges | null = null): Promise<JourneyCounters> {
  const owned = (bucket: string) => (buckets ? ` AND ${inBucketRanges(bucket, "?3")}` : "");
  const ranges = buckets ? [JSON.stringify(buckets)] : [];
  const [instances, runs, waiting, pruned, prunedRuns, conversions] = await db.batch<Record<string, unknown>>([
    db.prepare(`SELECT status, COUNT(*) AS n FROM journey_instances WHERE panel_id = ?1 AND journey_id = ?2${owned("bucket")} GROUP BY status`).bind(panelId, journeyId, ...ranges),
    db
      .prepare(
        `SELECT step_id, COUNT(*) AS n FROM journey_step_runs r WHERE journey_id = ?2 AND journey_id IN (SELECT id FROM journeys WHERE panel_id = ?1)${
          buckets ? ` AND EXISTS (SELECT 1 FROM journey_instances i WHERE i.id = r.instance_id${owned("i.bucket")})` : ""
        } GROUP BY step_id`,
      )
      .bind(panelId, journeyId, ...ranges),
    db
      .prepare(`SELECT step_id, COUNT(*) AS n FROM journey_points WHERE panel_id = ?1 AND journey_id = ?2 AND outcome IS NULL AND kind != 'start'${owned("bucket")} GROUP BY step_id`)
      .bind(panelId, journeyId, ...ranges),
    // What housekeeping pruned, counted when it went (migration 0065).
    db.prepare("SELECT COALESCE(SUM(completed), 0) AS completed, COALESCE(SUM(exited), 0) AS exited FROM journey_pruned WHERE journey_id = ?2 AND panel_id = ?1").bind(panelId, journeyId),
    db.prepare("SELECT step_id, acted AS n FROM journey_pruned_steps WHERE journey_id = ?2 AND panel_id = ?1").bind(panelId, journeyId),
    // Kept when their instances are pruned (migration 0082).
    db.prepare(`SELECT COUNT(*) AS n FROM journey_conversions WHERE journey_id = ?2 AND panel_id = ?1${owned("bucket")}`).bind(panelId, journeyId, ...ranges),
  ]);
  const counters: JourneyCounters = { entered: 0, active: 0, completed: 0, exited: 0, converted: (conversions!.results[0] as { n: number }).n, steps: {} };
  for (const row of instances!.results as Array<{ status: "active" | "completed" | "exited"; n: number }>) {
    counters[row.status] = row.n;
    counters.entered += row.n;
  }
  const step = (id: string) => (counters.steps[id] ??= { acted: 0, waiting: 0 });
  const gone = pruned!.results[0] as { completed: number; exited: number };
  counters.completed += gone.completed;
  counters.exited += gone.exited;
  counters.entered += gone.completed + gone.exited;
  for (const row of [...runs!.results, ...prunedRuns!.results] as Array<{ step_id: string; n: number }>) step(row.step_id).acted += row.n;
  for (const row of waiting!.results as Array<{ step_id: string; n: number }>) step(row.step_id).waiting = row.n;
  return counters;
}
