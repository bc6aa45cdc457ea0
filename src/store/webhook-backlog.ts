import type { PendingEvent } from "../webhooks/batching";

/**
 * The SQLite storage of one WebhookDispatcher Durable Object: its event backlog (in hand-over
 * order), the one batch in flight, the attempt log and a little state. Every method is
 * synchronous; each write happens inside one transaction, so a crash leaves either all of it
 * or none.
 */

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  // payload is the event's JSON, URL-encoded once at hand-over; bytes is its length.
  `CREATE TABLE IF NOT EXISTS events (
     seq INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, payload TEXT NOT NULL,
     bytes INTEGER NOT NULL, enqueued_at INTEGER NOT NULL, batch_id TEXT)`,
  `CREATE INDEX IF NOT EXISTS events_by_batch ON events (batch_id) WHERE batch_id IS NOT NULL`,
  `CREATE INDEX IF NOT EXISTS events_by_time ON events (enqueued_at)`,
  // Guids handed over recently, so handing the same event over twice queues it once.
  `CREATE TABLE IF NOT EXISTS seen_guids (guid TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID`,
  `CREATE INDEX IF NOT EXISTS seen_guids_by_time ON seen_guids (at)`,
  // At most one row: the batch being delivered. Its events carry its id until it succeeds.
  `CREATE TABLE IF NOT EXISTS batch (
     id TEXT PRIMARY KEY, envelope_key TEXT NOT NULL, events INTEGER NOT NULL, created_at INTEGER NOT NULL,
     failures INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS attempts (
     id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, kind TEXT NOT NULL, batch_id TEXT NOT NULL,
     events INTEGER NOT NULL, status INTEGER, error TEXT, error_message TEXT, duration_ms INTEGER NOT NULL,
     response TEXT NOT NULL, outcome TEXT NOT NULL, next_attempt_at INTEGER)`,
];

export interface InFlightBatch {
  id: string;
  envelopeKey: string;
  events: number;
  createdAt: number;
  /** Failed attempts so far. */
  failures: number;
  nextAttemptAt: number;
}

export interface AttemptRecord {
  id: number;
  at: number;
  kind: "delivery" | "test";
  batchId: string;
  events: number;
  status: number | null;
  error: string | null;
  errorMessage: string | null;
  durationMs: number;
  response: string;
  /** delivered, retry, disabled, passed (test), failed (test). */
  outcome: string;
  nextAttemptAt: number | null;
}

export interface BacklogCounts {
  events: number;
  oldestAt: number | null;
}

type Row = Record<string, SqlStorageValue>;

export class WebhookBacklog {
  constructor(
    private readonly sql: SqlStorage,
    private readonly transaction: <T>(work: () => T) => T,
  ) {
    this.createSchema();
  }

  createSchema(): void {
    for (const statement of SCHEMA) this.sql.exec(statement);
  }

  getMeta<T>(key: string): T | null {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0];
    return row ? (JSON.parse(row.value) as T) : null;
  }

  setMeta(key: string, value: unknown): void {
    if (value === null || value === undefined) this.sql.exec("DELETE FROM meta WHERE key = ?", key);
    else this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, JSON.stringify(value));
  }

  /** Appends events in order; a guid seen within the dedupe window is skipped. */
  append(events: ReadonlyArray<{ guid: string; payload: string }>, now: number): { accepted: number; duplicates: number } {
    return this.transaction(() => {
      let accepted = 0;
      for (const event of events) {
        const fresh = this.sql.exec("INSERT INTO seen_guids (guid, at) VALUES (?, ?) ON CONFLICT (guid) DO NOTHING RETURNING guid", event.guid, now).toArray().length > 0;
        if (!fresh) continue;
        this.sql.exec("INSERT INTO events (guid, payload, bytes, enqueued_at) VALUES (?, ?, ?, ?)", event.guid, event.payload, event.payload.length, now);
        accepted++;
      }
      return { accepted, duplicates: events.length - accepted };
    });
  }

  /** The oldest events not yet in a batch, in order. */
  pendingHead(limit: number): PendingEvent[] {
    return this.sql
      .exec<{ seq: number; bytes: number; enqueued_at: number }>("SELECT seq, bytes, enqueued_at FROM events WHERE batch_id IS NULL ORDER BY seq LIMIT ?", limit)
      .toArray()
      .map((row) => ({ seq: row.seq, bytes: row.bytes, enqueuedAt: row.enqueued_at }));
  }

  currentBatch(): InFlightBatch | null {
    const row = this.sql.exec<Row>("SELECT * FROM batch LIMIT 1").toArray()[0];
    if (!row) return null;
    return {
      id: row.id as string,
      envelopeKey: row.envelope_key as string,
      events: row.events as number,
      createdAt: row.created_at as number,
      failures: row.failures as number,
      nextAttemptAt: row.next_attempt_at as number,
    };
  }

  /** Makes the oldest pending events up to `lastSeq` the batch `id`, due at once. */
  cutBatch(id: string, lastSeq: number, envelopeKey: string, now: number): InFlightBatch {
    return this.transaction(() => {
      const marked = this.sql.exec("UPDATE events SET batch_id = ? WHERE batch_id IS NULL AND seq <= ? RETURNING seq", id, lastSeq).toArray().length;
      this.sql.exec("INSERT INTO batch (id, envelope_key, events, created_at, failures, next_attempt_at) VALUES (?, ?, ?, ?, 0, ?)", id, envelopeKey, marked, now, now);
      return { id, envelopeKey, events: marked, createdAt: now, failures: 0, nextAttemptAt: now };
    });
  }

  /** The batch's events, URL-encoded, in order: the same strings on every re-send. */
  batchPayloads(batchId: string): string[] {
    return this.sql
      .exec<{ payload: string }>("SELECT payload FROM events WHERE batch_id = ? ORDER BY seq", batchId)
      .toArray()
      .map((row) => row.payload);
  }

  recordAttempt(attempt: Omit<AttemptRecord, "id">, keep: number): void {
    this.sql.exec(
      `INSERT INTO attempts (at, kind, batch_id, events, status, error, error_message, duration_ms, response, outcome, next_attempt_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      attempt.at,
      attempt.kind,
      attempt.batchId,
      attempt.events,
      attempt.status,
      attempt.error,
      attempt.errorMessage,
      attempt.durationMs,
      attempt.response,
      attempt.outcome,
      attempt.nextAttemptAt,
    );
    this.sql.exec("DELETE FROM attempts WHERE id <= (SELECT max(id) FROM attempts) - ?", keep);
  }

  /** A 2xx: the batch's events leave the backlog, by batch id only (never a range or a blanket delete). */
  completeBatch(batchId: string): void {
    this.sql.exec("DELETE FROM events WHERE batch_id = ?", batchId);
    this.sql.exec("DELETE FROM batch WHERE id = ?", batchId);
  }

  /** Another failure: the batch stays as it is and waits until `nextAttemptAt`. */
  failBatch(batchId: string, failures: number, nextAttemptAt: number): void {
    this.sql.exec("UPDATE batch SET failures = ?, next_attempt_at = ? WHERE id = ?", failures, nextAttemptAt, batchId);
  }

  /** A fresh retry schedule for the batch in flight (after the webhook is enabled again). */
  restartSchedule(now: number): void {
    this.sql.exec("UPDATE batch SET failures = 0, next_attempt_at = ?", now);
  }

  counts(): BacklogCounts {
    const row = this.sql.exec<{ n: number; oldest: number | null }>("SELECT count(*) AS n, min(enqueued_at) AS oldest FROM events").one();
    return { events: row.n, oldestAt: row.oldest };
  }

  /**
   * Retention: drops events not in the batch in flight that are older than `olderThan`, then the
   * oldest such events beyond `maxEvents`; returns how many were dropped. Also forgets guids
   * seen before `guidsBefore`.
   */
  prune(olderThan: number, maxEvents: number, guidsBefore: number): number {
    return this.transaction(() => {
      let dropped = this.sql.exec("DELETE FROM events WHERE batch_id IS NULL AND enqueued_at < ? RETURNING seq", olderThan).toArray().length;
      const bounds = this.sql.exec<{ low: number | null; high: number | null }>("SELECT min(seq) AS low, max(seq) AS high FROM events").one();
      // The seq range bounds the count from above, so the exact count is only taken when it may be over.
      if (bounds.low !== null && bounds.high !== null && bounds.high - bounds.low + 1 > maxEvents) {
        const excess = this.counts().events - maxEvents;
        if (excess > 0) {
          dropped += this.sql.exec(
            "DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE batch_id IS NULL ORDER BY seq LIMIT ?) RETURNING seq",
            excess,
          ).toArray().length;
        }
      }
      this.sql.exec("DELETE FROM seen_guids WHERE at < ?", guidsBefore);
      return dropped;
    });
  }

  attempts(limit: number, batchId?: string): AttemptRecord[] {
    const rows = batchId
      ? this.sql.exec<Row>("SELECT * FROM attempts WHERE batch_id = ? ORDER BY id DESC LIMIT ?", batchId, limit).toArray()
      : this.sql.exec<Row>("SELECT * FROM attempts ORDER BY id DESC LIMIT ?", limit).toArray();
    return rows.map((row) => ({
      id: row.id as number,
      at: row.at as number,
      kind: row.kind as AttemptRecord["kind"],
      batchId: row.batch_id as string,
      events: row.events as number,
      status: row.status as number | null,
      error: row.error as string | null,
      errorMessage: row.error_message as string | null,
      durationMs: row.duration_ms as number,
      response: row.response as string,
      outcome: row.outcome as string,
      nextAttemptAt: row.next_attempt_at as number | null,
    }));
  }
}
