import type { ControlDb } from "./shards";
/** Messages the dead-letter queue received, and what their re-drive did (migration 0018). */

export interface DeadLetter {
  id: number;
  queue: string;
  kind: string;
  panelId: string | null;
  body: string;
  attempts: number;
  action: string;
  receivedAt: number;
}

/** How long a dead letter is kept. */
const KEEP_MS = 30 * 24 * 60 * 60_000;

/** Records one dead letter, and forgets those past their keeping time. */
export async function recordDeadLetter(db: ControlDb, letter: Omit<DeadLetter, "id">): Promise<void> {
  await db.batch([
    db
      .prepare("INSERT INTO dead_letters (queue, kind, panel_id, body, attempts, action, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)")
      .bind(letter.queue, letter.kind, letter.panelId, letter.body.slice(0, 4000), letter.attempts, letter.action, letter.receivedAt),
    db.prepare("DELETE FROM dead_letters WHERE received_at < ?").bind(letter.receivedAt - KEEP_MS),
  ]);
}

export async function listDeadLetters(db: ControlDb, limit: number): Promise<DeadLetter[]> {
  const { results } = await db
    .prepare("SELECT id, queue, kind, panel_id, body, attempts, action, received_at FROM dead_letters ORDER BY id DESC LIMIT ?")
    .bind(limit)
    .all<{ id: number; queue: string; kind: string; panel_id: string | null; body: string; attempts: number; action: string; received_at: number }>();
  return results.map((r) => ({ id: r.id, queue: r.queue, kind: r.kind, panelId: r.panel_id, body: r.body, attempts: r.attempts, action: r.action, receivedAt: r.received_at }));
}

export async function getDeadLetter(db: ControlDb, id: number): Promise<DeadLetter | null> {
  const r = await db
    .prepare("SELECT id, queue, kind, panel_id, body, attempts, action, received_at FROM dead_letters WHERE id = ?")
    .bind(id)
    .first<{ id: number; queue: string; kind: string; panel_id: string | null; body: string; attempts: number; action: string; received_at: number }>();
  return r && { id: r.id, queue: r.queue, kind: r.kind, panelId: r.panel_id, body: r.body, attempts: r.attempts, action: r.action, receivedAt: r.received_at };
}

/** Records what a re-drive by hand did, after what the dead-letter queue's consumer did. */
export async function noteDeadLetterAction(db: ControlDb, id: number, action: string): Promise<void> {
  await db.prepare("UPDATE dead_letters SET action = substr(action || '; ' || ?, 1, 2000) WHERE id = ?").bind(action, id).run();
}

/** How many dead letters arrived since `since`, by queue (one read of the newest rows: they are kept 30 days). */
export async function deadLettersSince(db: ControlDb, since: number): Promise<Array<{ queue: string; count: number; newest: number }>> {
  const { results } = await db
    .prepare("SELECT queue, COUNT(*) AS count, MAX(received_at) AS newest FROM dead_letters WHERE received_at >= ? GROUP BY queue ORDER BY queue")
    .bind(since)
    .all<{ queue: string; count: number; newest: number }>();
  return results;
}

/** Panels with dead letters since `since`: how many, and from which queues (at most `limit` panels). */
export async function deadLetterPanelsSince(db: ControlDb, since: number, limit: number): Promise<Array<{ panelId: string; count: number; queues: string[] }>> {
  const { results } = await db
    .prepare(
      `SELECT panel_id, COUNT(*) AS count, json_group_array(DISTINCT queue) AS queues FROM dead_letters
       WHERE received_at >= ? AND panel_id IS NOT NULL GROUP BY panel_id ORDER BY panel_id LIMIT ?`,
    )
    .bind(since, limit)
    .all<{ panel_id: string; count: number; queues: string }>();
  return results.map((r) => ({ panelId: r.panel_id, count: r.count, queues: JSON.parse(r.queues) as string[] }));
}
