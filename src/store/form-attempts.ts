import type { ShardDb } from "./shards";

/**
 * A signup form's rate limits, counted on the contact's shard in the batch that writes the
 * contact (shard migration 0108, decision 0049 option A): no round trip of their own. A count
 * past its limit fails its statement by the limit's named constraint, so D1 rolls the whole batch
 * back and nothing of the submission is written; formLimitRefusal tells that failure from others.
 */

/** The per-IP rows' panel: an IP is counted across the panels of a shard. */
export const ANY_PANEL = "";

/** One subject to count: `panelId` ANY_PANEL for a client IP, the panel for a contact key. */
export interface FormAttempt {
  panelId: string;
  subject: string;
  limit: number;
}

/**
 * Counts each attempt in its window (one that started before `windowStart` starts over at
 * `now`). Put it first in the batch: past a limit it fails, and the batch with it.
 */
export function countFormAttemptsStatement(db: ShardDb, attempts: readonly FormAttempt[], now: number, windowStart: number): D1PreparedStatement {
  const rows = attempts.map((_, i) => `(?${3 * i + 3}, ?${3 * i + 4}, ?1, 1, ?${3 * i + 5})`).join(", ");
  return db
    .prepare(
      `INSERT INTO form_attempts (panel_id, subject, window_start, attempts, most) VALUES ${rows}
       ON CONFLICT (panel_id, subject) DO UPDATE SET
         attempts = CASE WHEN window_start < ?2 THEN 1 ELSE attempts + 1 END,
         window_start = CASE WHEN window_start < ?2 THEN excluded.window_start ELSE window_start END,
         most = excluded.most`,
    )
    .bind(now, windowStart, ...attempts.flatMap((a) => [a.panelId, a.subject, a.limit]));
}

/** Which limit refused a batch that failed (its constraint names it), or null when the failure was another. */
export function formLimitRefusal(error: unknown): "ip" | "address" | null {
  const message = error instanceof Error ? error.message : String(error);
  const named = /CHECK constraint failed: form_(ip|address)_limit\b/.exec(message);
  return named ? (named[1] as "ip" | "address") : null;
}
