import type { ShardDb } from "./shards";

/**
 * Webhook replays (shard migration 0085, services/replays): what an owner asked to re-send, how
 * far the steps got (the cursor: the last event handed over, in (occurred_at, id) order) and how
 * many events were handed over.
 */

export type ReplayState = "running" | "done" | "cancelled";

export interface ReplayFilter {
  /** Event channels to replay; null: all. */
  channels: string[] | null;
  /** Only the events of this journey's messages; null: any. */
  journeyId: string | null;
}

export interface ReplayCursor {
  occurredAt: number;
  id: number;
}

export interface WebhookReplay {
  panelId: string;
  id: string;
  webhookId: string;
  from: number;
  to: number;
  filter: ReplayFilter;
  state: ReplayState;
  eventsTotal: number;
  eventsQueued: number;
  cursor: ReplayCursor | null;
  createdBy: string | null;
  createdAt: number;
  stepAt: number;
  finishedAt: number | null;
}

interface ReplayRow {
  panel_id: string;
  id: string;
  webhook_id: string;
  from_at: number;
  to_at: number;
  filter: string;
  state: ReplayState;
  events_total: number;
  events_queued: number;
  cursor_at: number | null;
  cursor_id: number | null;
  created_by: string | null;
  created_at: number;
  step_at: number;
  finished_at: number | null;
}

function replayFromRow(row: ReplayRow): WebhookReplay {
  const filter = JSON.parse(row.filter) as { channels: string[] | null; journey_id: string | null };
  return {
    panelId: row.panel_id,
    id: row.id,
    webhookId: row.webhook_id,
    from: row.from_at,
    to: row.to_at,
    filter: { channels: filter.channels, journeyId: filter.journey_id },
    state: row.state,
    eventsTotal: row.events_total,
    eventsQueued: row.events_queued,
    cursor: row.cursor_at === null || row.cursor_id === null ? null : { occurredAt: row.cursor_at, id: row.cursor_id },
    createdBy: row.created_by,
    createdAt: row.created_at,
    stepAt: row.step_at,
    finishedAt: row.finished_at,
  };
}

/**
 * Records a replay unless the panel has one with its id already; answers the row as stored
 * (the first one's when the id was taken, which the caller compares).
 */
export async function insertReplay(
  db: ShardDb,
  replay: Omit<WebhookReplay, "state" | "eventsQueued" | "cursor" | "stepAt" | "finishedAt">,
): Promise<{ replay: WebhookReplay; created: boolean }> {
  const filter = JSON.stringify({ channels: replay.filter.channels, journey_id: replay.filter.journeyId });
  const inserted = await db
    .prepare(
      `INSERT INTO webhook_replays (panel_id, id, webhook_id, from_at, to_at, filter, state, events_total, events_queued, created_by, created_at, step_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, 0, ?8, ?9, ?9) ON CONFLICT (panel_id, id) DO NOTHING RETURNING *`,
    )
    .bind(replay.panelId, replay.id, replay.webhookId, replay.from, replay.to, filter, replay.eventsTotal, replay.createdBy, replay.createdAt)
    .first<ReplayRow>();
  if (inserted) return { replay: replayFromRow(inserted), created: true };
  const existing = await getReplay(db, replay.panelId, replay.id);
  if (!existing) throw new Error(`webhook replay ${replay.id} was neither inserted nor found`);
  return { replay: existing, created: false };
}

export async function getReplay(db: ShardDb, panelId: string, id: string): Promise<WebhookReplay | null> {
  const row = await db.prepare("SELECT * FROM webhook_replays WHERE panel_id = ? AND id = ?").bind(panelId, id).first<ReplayRow>();
  return row ? replayFromRow(row) : null;
}

/** A webhook's replays, newest first. */
export async function listReplays(db: ShardDb, panelId: string, webhookId: string, limit: number): Promise<WebhookReplay[]> {
  const { results } = await db
    .prepare("SELECT * FROM webhook_replays WHERE panel_id = ? AND webhook_id = ? ORDER BY created_at DESC, id DESC LIMIT ?")
    .bind(panelId, webhookId, limit)
    .all<ReplayRow>();
  return results.map(replayFromRow);
}

/**
 * Moves a running replay on from the cursor `from` (the one its step read from) to `to`,
 * counting `queued` events; `done` ends it. Answers false (changing nothing) when another step
 * moved it meanwhile or it was cancelled: that step's hand-over was a repeat the dispatcher
 * skipped, and this one stops.
 */
export async function advanceReplay(
  db: ShardDb,
  panelId: string,
  id: string,
  step: { from: ReplayCursor | null; to: ReplayCursor | null; queued: number; done: boolean },
  now: number,
): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE webhook_replays SET cursor_at = ?3, cursor_id = ?4, events_queued = events_queued + ?5, step_at = ?6,
         state = CASE WHEN ?7 THEN 'done' ELSE state END, finished_at = CASE WHEN ?7 THEN ?6 ELSE finished_at END
       WHERE panel_id = ?1 AND id = ?2 AND state = 'running' AND cursor_at IS ?8 AND cursor_id IS ?9`,
    )
    .bind(panelId, id, step.to?.occurredAt ?? null, step.to?.id ?? null, step.queued, now, step.done ? 1 : 0, step.from?.occurredAt ?? null, step.from?.id ?? null)
    .run();
  return (result.meta.changes ?? 0) > 0;
}

/** Notes that a step looked at a running replay (one waiting for its dispatcher): the re-drive leaves it alone. */
export async function touchReplay(db: ShardDb, panelId: string, id: string, now: number): Promise<void> {
  await db.prepare("UPDATE webhook_replays SET step_at = ?3 WHERE panel_id = ?1 AND id = ?2 AND state = 'running'").bind(panelId, id, now).run();
}

/** Ends a running replay as cancelled; answers the replay as it is now (null when the panel has none with this id). */
export async function cancelReplay(db: ShardDb, panelId: string, id: string, now: number): Promise<WebhookReplay | null> {
  await db
    .prepare("UPDATE webhook_replays SET state = 'cancelled', finished_at = ?3, step_at = ?3 WHERE panel_id = ?1 AND id = ?2 AND state = 'running'")
    .bind(panelId, id, now)
    .run();
  return getReplay(db, panelId, id);
}

/**
 * Running replays of the shard whose last step is older than `before` (their nudge was lost, or
 * a step failed): marked as taken now and answered, so each is nudged by one sweep only.
 */
export async function stalledReplays(db: ShardDb, before: number, now: number, limit: number): Promise<Array<{ panelId: string; replayId: string }>> {
  const { results } = await db
    .prepare(
      `UPDATE webhook_replays SET step_at = ?1
       WHERE (panel_id, id) IN (SELECT panel_id, id FROM webhook_replays WHERE state = 'running' AND step_at < ?2 LIMIT ?3)
       RETURNING panel_id, id`,
    )
    .bind(now, before, limit)
    .all<{ panel_id: string; id: string }>();
  return results.map((row) => ({ panelId: row.panel_id, replayId: row.id }));
}
