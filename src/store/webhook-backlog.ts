import type { PendingEvent } from "../domain/webhooks/batching";
import { utcHourOf } from "../domain/time";
import { chunk } from "./sql";

/**
 * The SQLite storage of one WebhookDispatcher Durable Object: its event backlog (in hand-over
 * order), the one batch in flight, the attempt log and a little state. Every method is
 * synchronous; each write happens inside one transaction, so a crash leaves either all of it
 * or none.
 */

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
  // seq is the hand-over order (AUTOINCREMENT: never reused, always growing). payload is the
  // event's JSON, URL-encoded once at hand-over; bytes is its length; source the journey that
  // handed it over (NULL for other events), for the journey report's deliveries per hour.
  // replay is the webhook replay that queued it (NULL for live events): a batch holds the events
  // of one of them only, and its deliveries carry the replay's id.
  `CREATE TABLE IF NOT EXISTS events (
     seq INTEGER PRIMARY KEY AUTOINCREMENT, payload TEXT NOT NULL, bytes INTEGER NOT NULL, enqueued_at INTEGER NOT NULL, source TEXT, replay TEXT)`,
  // Guids given by the caller and handed over recently, so handing the same event over twice
  // queues it once. (A guid the service generated cannot repeat and is not kept.)
  `CREATE TABLE IF NOT EXISTS seen_guids (guid TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID`,
  `CREATE INDEX IF NOT EXISTS seen_guids_by_time ON seen_guids (at)`,
  // At most one row: the batch being delivered, which is the events first_seq..last_seq as
  // they were when it was cut. Nothing can join that range later (new events get larger seqs
  // and retention spares it), so the batch is re-sent byte for byte and, after a 2xx, exactly
  // its own events are removed.
  `CREATE TABLE IF NOT EXISTS batch (
     id TEXT PRIMARY KEY, envelope_key TEXT NOT NULL, first_seq INTEGER NOT NULL, last_seq INTEGER NOT NULL,
     events INTEGER NOT NULL, created_at INTEGER NOT NULL, failures INTEGER NOT NULL DEFAULT 0, next_attempt_at INTEGER NOT NULL, replay TEXT)`,
  // Events and batches of each replay delivered (2xx), counted with the attempt that delivered them.
  `CREATE TABLE IF NOT EXISTS replay_counts (replay TEXT PRIMARY KEY, events INTEGER NOT NULL, batches INTEGER NOT NULL) WITHOUT ROWID`,
  `CREATE TABLE IF NOT EXISTS attempts (
     id INTEGER PRIMARY KEY AUTOINCREMENT, at INTEGER NOT NULL, kind TEXT NOT NULL, batch_id TEXT NOT NULL,
     events INTEGER NOT NULL, status INTEGER, error TEXT, error_message TEXT, duration_ms INTEGER NOT NULL,
     response TEXT NOT NULL, outcome TEXT NOT NULL, next_attempt_at INTEGER)`,
  // Events per source (a journey id; '' for other events) and UTC hour of the attempt: in a
  // batch delivered, in a failed attempt retried later, in a failed attempt that disabled the
  // webhook. Counted in the transaction that records the attempt, so each attempt counts once.
  `CREATE TABLE IF NOT EXISTS delivery_hours (
     source TEXT NOT NULL, hour INTEGER NOT NULL, delivered INTEGER NOT NULL DEFAULT 0, retried INTEGER NOT NULL DEFAULT 0,
     failed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (source, hour)) WITHOUT ROWID`,
];

/** Events of one source in one hour's delivery attempts. */
export interface DeliveryHour {
  hour: number;
  delivered: number;
  retried: number;
  failed: number;
}

export interface InFlightBatch {
  id: string;
  envelopeKey: string;
  firstSeq: number;
  lastSeq: number;
  events: number;
  createdAt: number;
  /** Failed attempts so far. */
  failures: number;
  nextAttemptAt: number;
  /** The replay whose events it holds; null for live events. */
  replay: string | null;
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

/** Durable Object SQLite binds at most 100 values per statement. */
const MAX_PARAMS = 100;

/** The members of an event's `event_params` that name its contact. */
const CONTACT_PARAMS = ["foreignkey", "identity", "email", "mobile"] as const;

export class WebhookBacklog {
  constructor(
    private readonly sql: SqlStorage,
    private readonly transaction: <T>(work: () => T) => T,
  ) {
    this.createSchema();
  }

  createSchema(): void {
    for (const statement of SCHEMA) this.sql.exec(statement);
    // Objects created before events had a source.
    const columns = this.sql.exec<{ name: string }>("PRAGMA table_info(events)").toArray();
    if (!columns.some((column) => column.name === "source")) this.sql.exec("ALTER TABLE events ADD COLUMN source TEXT");
    // Objects created before replays.
    if (!columns.some((column) => column.name === "replay")) this.sql.exec("ALTER TABLE events ADD COLUMN replay TEXT");
    const batchColumns = this.sql.exec<{ name: string }>("PRAGMA table_info(batch)").toArray();
    if (!batchColumns.some((column) => column.name === "replay")) this.sql.exec("ALTER TABLE batch ADD COLUMN replay TEXT");
    // A replay's progress and cancel read its events alone; live events stay out of the index.
    this.sql.exec("CREATE INDEX IF NOT EXISTS events_by_replay ON events (replay) WHERE replay IS NOT NULL");
  }

  getMeta<T>(key: string): T | null {
    const row = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0];
    return row ? (JSON.parse(row.value) as T) : null;
  }

  setMeta(key: string, value: unknown): void {
    if (value === null || value === undefined) this.sql.exec("DELETE FROM meta WHERE key = ?", key);
    else this.sql.exec("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", key, JSON.stringify(value));
  }

  /**
   * Appends events in order; an event whose caller-given guid was seen within the dedupe window
   * (or earlier in the same call) is skipped. Multi-row statements: at most 100 bound values each.
   */
  append(events: ReadonlyArray<{ guid: string; payload: string; dedupe: boolean; source?: string | null; replay?: string | null }>, now: number): { accepted: number; duplicates: number } {
    return this.transaction(() => {
      const fresh = new Set<string>();
      for (const rows of chunk(events.filter((event) => event.dedupe), MAX_PARAMS / 2)) {
        const inserted = this.sql
          .exec<{ guid: string }>(
            `INSERT INTO seen_guids (guid, at) VALUES ${rows.map(() => "(?, ?)").join(", ")} ON CONFLICT (guid) DO NOTHING RETURNING guid`,
            ...rows.flatMap((event) => [event.guid, now]),
          )
          .toArray();
        for (const row of inserted) fresh.add(row.guid);
      }
      const accepted = events.filter((event) => !event.dedupe || fresh.delete(event.guid));
      this.adjustCount(accepted.length);
      for (const rows of chunk(accepted, Math.floor(MAX_PARAMS / 5))) {
        this.sql.exec(
          `INSERT INTO events (payload, bytes, enqueued_at, source, replay) VALUES ${rows.map(() => "(?, ?, ?, ?, ?)").join(", ")}`,
          ...rows.flatMap((event) => [event.payload, event.payload.length, now, event.source ?? null, event.replay ?? null]),
        );
      }
      return { accepted: accepted.length, duplicates: events.length - accepted.length };
    });
  }

  /** The oldest events not yet in a batch, in order. */
  pendingHead(limit: number): PendingEvent[] {
    return this.sql
      .exec<{ seq: number; bytes: number; enqueued_at: number; replay: string | null }>(
        "SELECT seq, bytes, enqueued_at, replay FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
        this.batchedUpTo(),
        limit,
      )
      .toArray()
      .map((row) => ({ seq: row.seq, bytes: row.bytes, enqueuedAt: row.enqueued_at, replay: row.replay }));
  }

  /** The last seq of the batch in flight (0 without one): later events wait for the next batch. */
  private batchedUpTo(): number {
    return this.sql.exec<{ last: number }>("SELECT last_seq AS last FROM batch").toArray()[0]?.last ?? 0;
  }

  currentBatch(): InFlightBatch | null {
    const row = this.sql.exec<Row>("SELECT * FROM batch LIMIT 1").toArray()[0];
    if (!row) return null;
    return {
      id: row.id as string,
      envelopeKey: row.envelope_key as string,
      firstSeq: row.first_seq as number,
      lastSeq: row.last_seq as number,
      events: row.events as number,
      createdAt: row.created_at as number,
      failures: row.failures as number,
      nextAttemptAt: row.next_attempt_at as number,
      replay: (row.replay as string | null) ?? null,
    };
  }

  /** Makes the pending events `firstSeq..lastSeq` (as decided by the cut) the batch `id`, due at once. */
  cutBatch(id: string, seqs: readonly number[], envelopeKey: string, now: number): InFlightBatch {
    // The cut never mixes replays (domain/webhooks/batching.ts): the first event's is the batch's.
    const replay = this.sql.exec<{ replay: string | null }>("SELECT replay FROM events WHERE seq = ?", seqs[0]!).toArray()[0]?.replay ?? null;
    const batch = { id, envelopeKey, firstSeq: seqs[0]!, lastSeq: seqs[seqs.length - 1]!, events: seqs.length, createdAt: now, failures: 0, nextAttemptAt: now, replay };
    this.sql.exec(
      "INSERT INTO batch (id, envelope_key, first_seq, last_seq, events, created_at, failures, next_attempt_at, replay) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?)",
      id,
      envelopeKey,
      batch.firstSeq,
      batch.lastSeq,
      batch.events,
      now,
      now,
      replay,
    );
    return batch;
  }

  /** The batch's events, URL-encoded, in order: the same strings on every re-send. */
  batchPayloads(batch: InFlightBatch): string[] {
    return this.sql
      .exec<{ payload: string }>("SELECT payload FROM events WHERE seq BETWEEN ? AND ? ORDER BY seq", batch.firstSeq, batch.lastSeq)
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

  /**
   * Counts a delivery attempt's events per source in the hour of the attempt (call before
   * completeBatch removes them, in the transaction that records the attempt).
   */
  countAttempt(batch: InFlightBatch, at: number, outcome: "delivered" | "retry" | "disabled"): void {
    const column = outcome === "delivered" ? "delivered" : outcome === "retry" ? "retried" : "failed";
    this.sql.exec(
      `INSERT INTO delivery_hours (source, hour, ${column})
       SELECT COALESCE(source, ''), ?, COUNT(*) FROM events WHERE seq BETWEEN ? AND ? GROUP BY COALESCE(source, '')
       ON CONFLICT (source, hour) DO UPDATE SET ${column} = ${column} + excluded.${column}`,
      utcHourOf(at),
      batch.firstSeq,
      batch.lastSeq,
    );
  }

  /** The hours in [from, to) with deliveries of `source`'s events, oldest first. */
  deliveryHours(source: string, from: number, to: number): DeliveryHour[] {
    return this.sql
      .exec<{ hour: number; delivered: number; retried: number; failed: number }>(
        "SELECT hour, delivered, retried, failed FROM delivery_hours WHERE source = ? AND hour >= ? AND hour < ? ORDER BY hour",
        source,
        utcHourOf(from),
        to,
      )
      .toArray()
      .map((row) => ({ hour: row.hour, delivered: row.delivered, retried: row.retried, failed: row.failed }));
  }

  /**
   * A 2xx: exactly the batch's own events leave the backlog (the ids fixed when it was cut;
   * events that arrived during the send have larger seqs and stay).
   */
  completeBatch(batch: InFlightBatch): void {
    const removed = this.sql.exec("DELETE FROM events WHERE seq BETWEEN ? AND ? RETURNING seq", batch.firstSeq, batch.lastSeq).toArray().length;
    this.sql.exec("DELETE FROM batch WHERE id = ?", batch.id);
    this.adjustCount(-removed);
    if (batch.replay !== null && removed > 0) {
      this.sql.exec(
        "INSERT INTO replay_counts (replay, events, batches) VALUES (?, ?, 1) ON CONFLICT (replay) DO UPDATE SET events = events + excluded.events, batches = batches + 1",
        batch.replay,
        removed,
      );
    }
  }

  /** What of a replay was delivered (2xx), and how many of its events still wait (the batch in flight included). */
  replayProgress(replay: string): { delivered: number; batches: number; waiting: number } {
    const counts = this.sql.exec<{ events: number; batches: number }>("SELECT events, batches FROM replay_counts WHERE replay = ?", replay).toArray()[0];
    const waiting = this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM events WHERE replay = ?", replay).toArray()[0]?.n ?? 0;
    return { delivered: counts?.events ?? 0, batches: counts?.batches ?? 0, waiting };
  }

  /**
   * A replay was cancelled: its waiting events go. The batch in flight is kept (it is re-sent
   * byte for byte until answered). Returns how many went.
   */
  dropReplay(replay: string): number {
    return this.transaction(() => {
      const gone = this.sql.exec("DELETE FROM events WHERE seq > ? AND replay = ? RETURNING seq", this.batchedUpTo(), replay).toArray().length;
      this.adjustCount(-gone);
      return gone;
    });
  }

  /** Another failure: the batch stays as it is and waits until `nextAttemptAt`. */
  failBatch(batchId: string, failures: number, nextAttemptAt: number): void {
    this.sql.exec("UPDATE batch SET failures = ?, next_attempt_at = ? WHERE id = ?", failures, nextAttemptAt, batchId);
  }

  /** A fresh retry schedule for the batch in flight (after the webhook is enabled again). */
  restartSchedule(now: number): void {
    this.sql.exec("UPDATE batch SET failures = 0, next_attempt_at = ?", now);
  }

  /** Kept as a counter beside the events: counting a large backlog would read all of it. */
  /**
   * Drops the waiting events whose `event_params` name one of `values` as the contact
   * (foreignkey, identity, email or mobile): a contact was erased. The batch in flight is kept,
   * as it is re-sent byte for byte until answered. Returns how many went.
   */
  forgetContact(values: readonly string[]): number {
    const wanted = new Set(values);
    return this.transaction(() => {
      const batch = this.currentBatch();
      const gone: number[] = [];
      for (const row of this.sql.exec<{ seq: number; payload: string }>("SELECT seq, payload FROM events").toArray()) {
        if (batch && row.seq >= batch.firstSeq && row.seq <= batch.lastSeq) continue;
        const params = (JSON.parse(decodeURIComponent(row.payload)) as { event_params?: Record<string, unknown> }).event_params ?? {};
        if (CONTACT_PARAMS.some((name) => typeof params[name] === "string" && wanted.has(params[name]))) gone.push(row.seq);
      }
      for (const seq of gone) this.sql.exec("DELETE FROM events WHERE seq = ?", seq);
      this.adjustCount(-gone.length);
      return gone.length;
    });
  }

  counts(): BacklogCounts {
    const oldest = this.sql.exec<{ at: number }>("SELECT enqueued_at AS at FROM events ORDER BY seq LIMIT 1").toArray()[0];
    return { events: this.getMeta<number>("count") ?? 0, oldestAt: oldest?.at ?? null };
  }

  private adjustCount(delta: number): void {
    if (delta !== 0) this.setMeta("count", (this.getMeta<number>("count") ?? 0) + delta);
  }

  /**
   * Retention: drops waiting events (never those of the batch in flight) older than `olderThan`
   * (when given), then the oldest waiting events beyond `maxEvents`; returns how many were
   * dropped. Also forgets guids seen before `guidsBefore` (when given).
   */
  prune(limits: { maxEvents: number; olderThan?: number; guidsBefore?: number; hoursBefore?: number }): number {
    return this.transaction(() => {
      let dropped = 0;
      if (limits.olderThan !== undefined) {
        const spared = this.batchedUpTo();
        // Events are appended in time order, so the oldest waiting event tells whether any expired;
        // only then is the table scanned (a disabled webhook's week-old backlog, rarely).
        const head = this.sql.exec<{ at: number }>("SELECT enqueued_at AS at FROM events WHERE seq > ? ORDER BY seq LIMIT 1", spared).toArray()[0];
        if (head && head.at < limits.olderThan) {
          dropped += this.sql.exec("DELETE FROM events WHERE seq > ? AND enqueued_at < ? RETURNING seq", spared, limits.olderThan).toArray().length;
        }
      }
      const excess = (this.getMeta<number>("count") ?? 0) - dropped - limits.maxEvents;
      if (excess > 0) {
        dropped += this.sql
          .exec("DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE seq > ? ORDER BY seq LIMIT ?) RETURNING seq", this.batchedUpTo(), excess)
          .toArray().length;
      }
      this.adjustCount(-dropped);
      if (limits.guidsBefore !== undefined) this.sql.exec("DELETE FROM seen_guids WHERE at < ?", limits.guidsBefore);
      if (limits.hoursBefore !== undefined) this.sql.exec("DELETE FROM delivery_hours WHERE hour < ?", limits.hoursBefore);
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
