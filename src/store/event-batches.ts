import { jsonArrays } from "./json-arrays";
import { batchWithJsonEach, type JsonEach } from "./json-each";
import type { ShardDb } from "./shards";
import { inBucketRanges } from "./sql";
import { RECEIVED_SLOT_MS } from "./panel-counts";
import { identityContactsCreated, identityContactsSql, type KeyedContact } from "./contacts";
import type { NewEvent } from "../domain/events";
import { contactBucket, type BucketRanges } from "../domain/partitions";
import { eventColumns, eventFromRow, type EventBatchState, type EventRow, type StoredEvent } from "./events";

/**
 * The event batches: what one call recorded (a JSON array in one row, with a claim per
 * caller-chosen guid), and the pipeline's progress over it. Recording writes no row per
 * event; the pipeline's first pass turns the batch into rows of `events` (with their
 * contacts and anonymous-profile links) inside D1, without the JSON travelling back.
 */

export type EventToRecord = NewEvent & {
  guid: string;
  /** The caller chose the guid (a guid or an Idempotency-Key): it is claimed, so a repeat stores nothing. */
  claimed: boolean;
};

/**
 * The short keys of a recorded event in its batch's JSON (`event_batches.events`): the one
 * table where they meet the event's own names (domain/events.ts NewEvent), used by the writer
 * (encodeRecordedEvent, whose keys are checked against it) and the one reader (the INSERT INTO
 * events of storeBatchesStatements, through `recorded`). Short because a batch holds up to a
 * thousand events; kept as they are because batches still in the pipeline at a deploy are read
 * with the keys they were written with (renaming one would need a migration of pending batches).
 * `x` marks a guid the caller chose (claimed); `b` is the bucket of the event's identity, else
 * of its uniqueid (decision 0038), which the contact it creates and its row take, and `ub` the
 * uniqueid's when it has both (an anonymous profile lives by its uniqueid). Batches
 * recorded before it carry no `b`: their rows take 0 and the back-fill corrects them.
 */
export const RECORDED_KEYS = {
  guid: "g",
  claimed: "x",
  channel: "ch",
  name: "n",
  activityId: "a",
  contactId: "c",
  identity: "k",
  uniqueid: "u",
  source: "s",
  params: "p",
  occurredAt: "t",
  msgid: "m",
  campaignId: "cp",
  journeyId: "j",
  assetId: "as",
  bucket: "b",
  uniqueidBucket: "ub",
} as const satisfies Record<keyof EventToRecord | "bucket" | "uniqueidBucket", string>;

type RecordedKey = (typeof RECORDED_KEYS)[keyof typeof RECORDED_KEYS];

/** SQL reading one member of a recorded event `e` (a json_each row): `->>` as text or SQL number, `->` as JSON. */
function recorded(member: keyof typeof RECORDED_KEYS, as: "->>" | "->" = "->>"): string {
  return `e.value${as}'${RECORDED_KEYS[member]}'`;
}

/** One recorded event as its batch's JSON holds it (keys: RECORDED_KEYS). Written out: this runs per event of every call. */
function encodeRecordedEvent(panelId: string, e: EventToRecord): Record<RecordedKey, unknown> {
  const key = e.identity ?? e.uniqueid;
  return {
    g: e.guid,
    x: e.claimed ? 1 : undefined,
    ch: e.channel,
    n: e.name,
    a: e.activityId,
    c: e.contactId,
    k: e.identity,
    u: e.uniqueid,
    s: e.source,
    p: e.params ?? {},
    t: e.occurredAt,
    m: e.msgid,
    cp: e.campaignId,
    j: e.journeyId,
    as: e.assetId,
    b: key == null ? undefined : contactBucket(panelId, key),
    ub: e.identity != null && e.uniqueid != null ? contactBucket(panelId, e.uniqueid) : undefined,
  } satisfies Record<RecordedKey, unknown>;
}

/** One batch row's worth of events: their JSON, how many, and the guids their callers chose. */
interface BatchChunk {
  json: string;
  count: number;
  /** [guid, bucket] of each guid the caller chose. */
  claims: Array<[string, unknown]>;
}

/** The events' JSON in arrays that fit one bound value, in order; `claimed` says which of them carry a claim. */
function batchJsonChunks(encoded: readonly RecordedEvent[], claimed: (i: number) => boolean): BatchChunk[] {
  return jsonArrays(encoded).map(({ json, from, to }) => {
    const claims: Array<[string, unknown]> = [];
    for (let i = from; i < to; i++) if (claimed(i)) claims.push([encoded[i]!.g as string, encoded[i]!.b ?? 0]);
    return { json, count: to - from, claims };
  });
}

/** A recorded event as its batch's JSON holds it (keys: RECORDED_KEYS). */
export type RecordedEvent = Partial<Record<RecordedKey, unknown>>;

/**
 * Records the events of one panel in one D1 batch (all or none): a batch row per chunk, and
 * a claim per caller-chosen guid. Returns the new batch ids, the events each holds (`sizes`),
 * and the claimed guids another batch already held (those events will not be stored). Guids
 * must be unique within the call.
 */
export async function appendEventBatches(
  db: ShardDb,
  panelId: string,
  events: readonly EventToRecord[],
  now: number,
): Promise<{ batchIds: number[]; sizes: number[]; taken: Set<string> }> {
  const encoded = events.map((e) => encodeRecordedEvent(panelId, e));
  return await insertBatches(db, panelId, batchJsonChunks(encoded, (i) => events[i]!.claimed), now, now);
}

/**
 * Records events already encoded (another shard's batch's, re-routed: services/pipeline/reroute.ts)
 * as new batches here, received at `receivedAt`, each event claiming its guid: a second hand-off
 * of the same events finds every guid taken and stores nothing.
 */
export async function appendRecordedEvents(
  db: ShardDb,
  panelId: string,
  events: readonly RecordedEvent[],
  receivedAt: number,
  now: number,
): Promise<{ batchIds: number[]; sizes: number[]; taken: Set<string> }> {
  const claimed = events.map((e) => ({ ...e, x: 1 }));
  return await insertBatches(db, panelId, batchJsonChunks(claimed, () => true), receivedAt, now);
}

async function insertBatches(db: ShardDb, panelId: string, chunks: readonly BatchChunk[], receivedAt: number, now: number): Promise<{ batchIds: number[]; sizes: number[]; taken: Set<string> }> {
  const statements: D1PreparedStatement[] = [];
  /** Per statement: the claims it inserts, or undefined for a batch row's insert. */
  const claimsOf: Array<Array<[string, unknown]> | undefined> = [];
  for (const chunk of chunks) {
    statements.push(
      db.prepare("INSERT INTO event_batches (panel_id, events, received_at, nudged_at) VALUES (?1, ?2, ?3, ?4) RETURNING id").bind(panelId, chunk.json, receivedAt, now),
    );
    claimsOf.push(undefined);
    if (chunk.claims.length === 0) continue;
    // The batch row just inserted has the highest id: a D1 batch is one transaction, one writer.
    claimsOf.push(chunk.claims);
    statements.push(
      db
        .prepare(
          // `at` starts the key's window (EVENT_GUID_DAYS); a repeat within it stores nothing.
          `INSERT INTO event_guids (panel_id, guid, batch_id, at, bucket)
           SELECT ?1, g.value ->> 0, (SELECT MAX(id) FROM event_batches), ?3, g.value ->> 1 FROM json_each(?2) g WHERE true
           ON CONFLICT (panel_id, guid) DO NOTHING
           RETURNING guid`,
        )
        .bind(panelId, JSON.stringify(chunk.claims), now),
    );
  }
  const results = await db.batch<{ id: number; guid: string }>(statements);
  // Read in one pass over the results: this runs on every activity post.
  const batchIds: number[] = [];
  const taken = new Set<string>();
  results.forEach(({ results: rows }, index) => {
    const claims = claimsOf[index];
    if (!claims) {
      for (const row of rows) batchIds.push(row.id);
      return;
    }
    const won = new Set(rows.map((row) => row.guid));
    for (const [guid] of claims) if (!won.has(guid)) taken.add(guid);
  });
  return { batchIds, sizes: chunks.map((chunk) => chunk.count), taken };
}

/** A batch as the pipeline works on it: its events as rows, and the steps they passed. */
export interface EventBatch {
  id: number;
  attempts: number;
  events: StoredEvent[];
  /** step name -> true (every event passed it) or the ids of the events that passed it */
  stepsDone: EventBatchState["stepsDone"];
}

/**
 * The statements that turn the recorded JSON of the batches `?2` (a JSON array of ids) into
 * rows of `events`, in SQL and whatever their number: create the contacts of unknown
 * identities, link each uniqueid seen with an identity to that contact (a new link moves the
 * uniqueid's anonymous events to it: trigger anon_profiles_join_history; the later identity
 * wins), insert the events whose guid is theirs to store, batch after batch, and note each
 * batch's id range when the batches are `kept` in the pipeline. Only batches under the lease `?3` are touched. A batch whose `events` is
 * NULL was stored already and is left alone, so a batch taken twice (a redelivered message)
 * is stored once.
 */
function storeBatchesStatements(db: ShardDb, panel: BatchPanel, idList: string, lease: string, each: JsonEach, kept: boolean): D1PreparedStatement[] {
  const panelId = panel.id;
  const toStore = (table: string) =>
    `${table}.id IN (SELECT value FROM json_each(?2)) AND ${table}.panel_id = ?1 AND ${table}.state = 'pending' AND ${table}.lease = ?3 AND ${table}.events IS NOT NULL`;
  const unstored = `event_batches b CROSS JOIN ${each}(b.events) e WHERE ${toStore("b")}`;
  const statements = [
    // The contacts of identities not yet in the panel, with only their primary key.
    db.prepare(identityContactsSql(unstored, recorded("identity"), `COALESCE(${recorded("bucket")}, 0)`, "b.received_at")).bind(panelId, idList, lease, panel.primaryKey),
    // CROSS JOIN keeps the batches' events the outer loop (the planner otherwise scans the panel's contacts).
    db
      .prepare(
        `INSERT INTO anon_profiles (panel_id, uniqueid, contact_id, linked_at, bucket)
         SELECT ?1, ${recorded("uniqueid")}, c.id, b.received_at, COALESCE(${recorded("uniqueidBucket")}, 0)
         FROM ${unstored.replace(`${each}(b.events) e`, `${each}(b.events) e CROSS JOIN contacts c ON c.panel_id = ?1 AND c.pk_value = ${recorded("identity")}`)}
           AND ${recorded("uniqueid")} IS NOT NULL
         ORDER BY b.id, e.key
         ON CONFLICT (panel_id, uniqueid) DO UPDATE SET contact_id = excluded.contact_id, linked_at = excluded.linked_at
         WHERE anon_profiles.contact_id IS NOT excluded.contact_id`,
      )
      .bind(panelId, idList, lease),
    // Ids are handed out above the highest so far, one writer at a time: every row this pass
    // inserts has an id from here on, which bounds the search for each batch's range below.
    db.prepare(`UPDATE event_batches SET first_id = (SELECT COALESCE(MAX(id), 0) + 1 FROM events) WHERE ${toStore("event_batches")}`).bind(panelId, idList, lease),
    // The contact: the one the caller names, else the identity's, else the uniqueid's linked one.
    // The bucket: the named contact's (channel events name no identity), else the recorded one.
    db
      .prepare(
        `INSERT INTO events (panel_id, batch_id, guid, channel, name, activity_id, contact_id, uniqueid, identity, source, params,
           occurred_at, received_at, msgid, campaign_id, journey_id, asset_id, bucket)
         SELECT ?1, b.id, ${recorded("guid")}, ${recorded("channel")}, ${recorded("name")}, ${recorded("activityId")},
           COALESCE(
             (SELECT c.id FROM contacts c WHERE c.panel_id = ?1 AND c.id = ${recorded("contactId")}),
             (SELECT c.id FROM contacts c WHERE c.panel_id = ?1 AND c.pk_value = ${recorded("identity")}),
             (SELECT ap.contact_id FROM anon_profiles ap WHERE ap.panel_id = ?1 AND ap.uniqueid = ${recorded("uniqueid")})),
           ${recorded("uniqueid")}, ${recorded("identity")}, ${recorded("source")}, ${recorded("params", "->")}, ${recorded("occurredAt")}, b.received_at,
           ${recorded("msgid")}, ${recorded("campaignId")}, ${recorded("journeyId")}, ${recorded("assetId")},
           COALESCE(CASE WHEN ${recorded("contactId")} IS NOT NULL THEN (SELECT c.bucket FROM contacts c WHERE c.panel_id = ?1 AND c.id = ${recorded("contactId")}) END,
             ${recorded("bucket")}, 0)
         FROM ${unstored}
           AND (${recorded("claimed")} IS NULL OR EXISTS (SELECT 1 FROM event_guids g WHERE g.panel_id = ?1 AND g.guid = ${recorded("guid")} AND g.batch_id = b.id))
         ORDER BY b.id, e.key`,
      )
      .bind(panelId, idList, lease),
    // The Home screen's events per day (migration 0051), counted from this pass's rows (ids from
    // the first_id noted above on), in the transaction that stores them: a batch is stored once, so it is counted once.
    db
      .prepare(
        `INSERT INTO panel_days (panel_id, kind, day, name, n)
         SELECT ?1, 'events', (occurred_at / 86400000) * 86400000 AS day, channel || ':' || name AS what, COUNT(*)
         FROM events WHERE id >= (SELECT MIN(first_id) FROM event_batches WHERE ${toStore("event_batches")}) AND +panel_id = ?1
         GROUP BY day, what
         ON CONFLICT (panel_id, kind, day, name) DO UPDATE SET n = n + excluded.n`,
      )
      .bind(panelId, idList, lease),
    // Home's events received today (migration 0062), per 15-minute slot of receipt, counted
    // like the per-day counts above: once per pass, not per event, and no index on received_at.
    db
      .prepare(
        `INSERT INTO panel_received (panel_id, slot, n)
         SELECT ?1, (received_at / ${RECEIVED_SLOT_MS}) * ${RECEIVED_SLOT_MS} AS slot, COUNT(*)
         FROM events WHERE id >= (SELECT MIN(first_id) FROM event_batches WHERE ${toStore("event_batches")}) AND +panel_id = ?1
         GROUP BY slot
         ON CONFLICT (panel_id, slot) DO UPDATE SET n = n + excluded.n`,
      )
      .bind(panelId, idList, lease),
    // Each uniqueid seen with an identity, once per contact (shard migration 0057): events so
    // recorded are not in events_by_uniqueid, and a uniqueid's history finds them through these.
    db
      .prepare(
        `INSERT INTO uniqueid_contacts (panel_id, uniqueid, contact_id, bucket)
         SELECT DISTINCT ?1, uniqueid, contact_id, bucket
         FROM events WHERE id >= (SELECT MIN(first_id) FROM event_batches WHERE ${toStore("event_batches")}) AND +panel_id = ?1
           AND uniqueid IS NOT NULL AND identity IS NOT NULL AND contact_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM uniqueid_contacts u WHERE u.panel_id = ?1 AND u.uniqueid = events.uniqueid AND u.contact_id = events.contact_id)
         ON CONFLICT DO NOTHING`,
      )
      .bind(panelId, idList, lease),
  ];
  // Batches removed in the same transaction (finishEventBatches) need no range.
  if (!kept) return statements;
  return [
    ...statements,
    // Rows of one batch were inserted together, so their ids are consecutive: one grouped scan
    // of this pass's rows gives every batch its range...
    db
      .prepare(
        `UPDATE event_batches SET first_id = r.lo, last_id = r.hi
         FROM (SELECT batch_id, MIN(id) AS lo, MAX(id) AS hi FROM events
               WHERE id >= (SELECT MIN(first_id) FROM event_batches WHERE ${toStore("event_batches")}) GROUP BY batch_id) r
         WHERE r.batch_id = event_batches.id AND ${toStore("event_batches")}`,
      )
      .bind(panelId, idList, lease),
    // ...and a batch that stored nothing (all duplicates) the empty range first_id..first_id - 1.
    db.prepare(`UPDATE event_batches SET last_id = COALESCE(last_id, first_id - 1), events = NULL WHERE ${toStore("event_batches")}`).bind(panelId, idList, lease),
  ];
}

interface BatchRow {
  id: number;
  attempts: number;
  steps_done: string;
}

/** What storing a panel's batches needs of it: its id and the attribute its identities fill. */
export interface BatchPanel {
  id: string;
  primaryKey: string;
}

/**
 * Takes the pending batches among `ids` of one panel that no other pass holds, under `lease`
 * until `until`, oldest first, each with its events (stored as rows first if they were not
 * yet) and the steps done; in one D1 round trip.
 */
function idListOf(ids: readonly number[]): string {
  return JSON.stringify([...new Set(ids)].sort((a, b) => a - b));
}

/**
 * The bucket ranges this shard holds of a mapped panel, as its pass's caller read the map: an
 * event of a taken batch outside them (its `b`) was recorded here for a partition elsewhere (a
 * split's moving buckets, recorded with the map before it: decision 0047). Absent for a panel
 * without a map, whose every bucket is on its home: nothing is checked.
 */
export type HeldBuckets = BucketRanges;

/** The lease a pass puts on the batches it takes holding events of another shard's buckets, while it re-routes them. */
export function rerouteLease(lease: string): string {
  return `${lease}:reroute`;
}

/** Leases the pending batches among `?2` that no other pass holds, then stores their events as rows. */
function takeStatements(db: ShardDb, panel: BatchPanel, idList: string, lease: string, now: number, until: number, each: JsonEach, kept: boolean, held?: HeldBuckets): D1PreparedStatement[] {
  const panelId = panel.id;
  return [
    db
      .prepare(
        `UPDATE event_batches SET lease = ?3, leased_until = ?4
         WHERE id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1 AND state = 'pending' AND leased_until <= ?5`,
      )
      .bind(panelId, idList, lease, until, now),
    // A batch with an event of a bucket this shard does not hold is set apart under the re-route
    // lease (not stored here); in the same transaction, so the common pass reads nothing more.
    ...(held
      ? [
          db
            .prepare(
              `UPDATE event_batches SET lease = ?4
               WHERE id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1 AND state = 'pending' AND lease = ?3 AND events IS NOT NULL
                 AND EXISTS (SELECT 1 FROM ${each}(event_batches.events) e
                   WHERE e.value ->> '${RECORDED_KEYS.bucket}' IS NOT NULL
                     AND NOT ${inBucketRanges(`e.value ->> '${RECORDED_KEYS.bucket}'`, "?5")})
               RETURNING id`,
            )
            .bind(panelId, idList, lease, rerouteLease(lease), JSON.stringify(held)),
        ]
      : []),
    ...storeBatchesStatements(db, panel, idList, lease, each, kept),
  ];
}

/** The batches the guard of takeStatements set apart, and where its contact insert (identityContactsSql) is. */
function takeOutcome(results: D1Result[], held: HeldBuckets | undefined): { misplaced: number[]; created: KeyedContact[] } {
  const misplaced = held ? (results[1]!.results as Array<{ id: number }>).map((r) => r.id).sort((a, b) => a - b) : [];
  return { misplaced, created: identityContactsCreated(results[held ? 2 : 1]) };
}

/**
 * Takes the batches as takeEventBatches does and, in the same D1 transaction, removes them
 * from the pipeline as done, their events stored as rows: for a pass in which no step has
 * anything to do, so the events are never read back. Batches another pass holds are left alone;
 * so are those set apart for re-routing (`misplaced`, with `held`), under rerouteLease.
 */
export async function finishEventBatches(
  db: ShardDb,
  panel: BatchPanel,
  ids: readonly number[],
  lease: string,
  now: number,
  until: number,
  held?: HeldBuckets,
): Promise<{ created: KeyedContact[]; misplaced: number[] }> {
  const panelId = panel.id;
  const idList = idListOf(ids);
  const results = await batchWithJsonEach(db, (each) => [
    ...takeStatements(db, panel, idList, lease, now, until, each, false, held),
    db.prepare("DELETE FROM event_batches WHERE id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1 AND state = 'pending' AND lease = ?3").bind(panelId, idList, lease),
  ]);
  return takeOutcome(results, held);
}

/** What a pass took: its batches, and the contacts it created for identities the panel did not have. */
export interface TakenBatches {
  batches: EventBatch[];
  createdContacts: KeyedContact[];
  /** Batches set apart for re-routing (with `held`): not taken, under rerouteLease. */
  misplaced: number[];
}

export async function takeEventBatches(db: ShardDb, panel: BatchPanel, ids: readonly number[], lease: string, now: number, until: number, held?: HeldBuckets): Promise<TakenBatches> {
  const panelId = panel.id;
  const idList = idListOf(ids);
  const results = await batchWithJsonEach(db, (each) => [
    ...takeStatements(db, panel, idList, lease, now, until, each, true, held),
    db
      .prepare(`SELECT id, attempts, steps_done FROM event_batches WHERE id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1 AND state = 'pending' AND lease = ?3 ORDER BY id`)
      .bind(panelId, idList, lease),
    db
      .prepare(
        `SELECT ${eventColumns("e")}, e.batch_id FROM event_batches b CROSS JOIN events e ON e.id BETWEEN b.first_id AND b.last_id
         WHERE b.id IN (SELECT value FROM json_each(?2)) AND b.panel_id = ?1 AND b.state = 'pending' AND b.lease = ?3 AND +e.panel_id = ?1
         ORDER BY e.id`,
      )
      .bind(panelId, idList, lease),
  ]);
  const batchRows = results.at(-2)!.results as unknown as BatchRow[];
  const eventRows = results.at(-1)!.results as unknown as Array<EventRow & { batch_id: number }>;
  const batches = new Map<number, EventBatch>(
    batchRows.map((row) => [row.id, { id: row.id, attempts: row.attempts, events: [], stepsDone: JSON.parse(row.steps_done) as EventBatch["stepsDone"] }]),
  );
  for (const row of eventRows) batches.get(row.batch_id)?.events.push(eventFromRow(row));
  const { misplaced, created } = takeOutcome(results, held);
  return { batches: [...batches.values()], createdContacts: created, misplaced };
}

export interface BatchProgress {
  id: number;
  stepsDone: EventBatch["stepsDone"];
  /** Every event passed every step: the batch leaves the pipeline. */
  done: boolean;
  /** The reasons of this pass's failures, when some step failed for some event. */
  error?: string;
}

/**
 * Records what a consumer pass achieved, in one D1 batch: the steps each batch passed, and the
 * removal of finished ones. Between pieces of a pass (`final` false) `progress` names the
 * batches that moved, and the lease of every batch in `held` is renewed until `heldUntil`; at
 * the end of the pass (`final`, `progress` naming every batch) the batches left open are
 * released and get an attempt and the last error when they failed.
 */
export async function saveBatchProgress(
  db: ShardDb,
  panelId: string,
  progress: readonly BatchProgress[],
  now: number,
  final: boolean,
  lease: string,
  heldUntil: number,
  held: readonly number[] = [],
): Promise<void> {
  const open = progress.filter((p) => !(final && p.done));
  const finished = progress.filter((p) => final && p.done).map((p) => p.id);
  const statements: D1PreparedStatement[] = [];
  if (!final && held.length) {
    statements.push(
      db
        .prepare("UPDATE event_batches SET leased_until = ?3, nudged_at = ?4 WHERE id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1 AND lease = ?5")
        .bind(panelId, idListOf(held), heldUntil, now, lease),
    );
  }
  if (open.length) {
    const updates = open.map((p) => ({ id: p.id, s: JSON.stringify(p.stepsDone), e: p.error?.slice(0, 1000) ?? null, f: final && p.error !== undefined ? 1 : 0 }));
    statements.push(
      db
        .prepare(
          `UPDATE event_batches SET steps_done = u.value->>'s',
             attempts = attempts + (u.value->>'f'), nudged_at = ?3, last_error = COALESCE(u.value->>'e', last_error),
             leased_until = ?4
           FROM json_each(?2) u
           WHERE event_batches.id = u.value->>'id' AND event_batches.panel_id = ?1 AND event_batches.lease = ?5`,
        )
        .bind(panelId, JSON.stringify(updates), now, final ? 0 : heldUntil, lease),
    );
  }
  if (finished.length) {
    statements.push(db.prepare("DELETE FROM event_batches WHERE id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1").bind(panelId, JSON.stringify(finished)));
  }
  if (statements.length) await db.batch(statements);
}

/** A retry of these batches comes at `at` (a queue retry with backoff): the re-drive waits for it. */
export async function deferEventBatches(db: ShardDb, panelId: string, ids: readonly number[], at: number): Promise<void> {
  if (ids.length === 0) return;
  await db
    .prepare("UPDATE event_batches SET nudged_at = MAX(nudged_at, ?3) WHERE id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1 AND state = 'pending'")
    .bind(panelId, JSON.stringify(ids), at)
    .run();
}

/**
 * Pending batches nobody holds (no lease, or one whose holder died) and not nudged or attempted
 * for `quietMs`, or, when a consumer took the batch since its last re-drive (`taken`: it holds a
 * lease mark), for `quietMs` times 2 to the power of its re-drives so far: a batch whose takers
 * keep dying waits longer each time (1, 2, 4, 8, 16 minutes), while a nudge that never reached a
 * consumer (lost in a crash, still in a backlog) costs nothing and is sent again after `quietMs`.
 * `only` names some batches of one panel instead, whatever their quiet time (a dead-lettered
 * message: the queue's retries already waited).
 * This sweep reads across panels; each returned batch is then handled within its own panel.
 */
export async function stalledBatches(
  db: ShardDb,
  now: number,
  quietMs: number,
  maxRedrives: number,
  limit: number,
  only?: { panelId: string; ids: readonly number[] },
): Promise<Array<{ id: number; panelId: string; redrives: number; taken: boolean }>> {
  const statement = only
    ? db
        .prepare(
          `SELECT id, panel_id, redrives, lease IS NOT NULL AS taken FROM event_batches
           WHERE id IN (SELECT value FROM json_each(?3)) AND panel_id = ?2 AND state = 'pending' AND leased_until <= ?1 LIMIT ?4`,
        )
        .bind(now, only.panelId, JSON.stringify(only.ids), limit)
    : db
        .prepare(
          `SELECT id, panel_id, redrives, lease IS NOT NULL AS taken FROM event_batches
           WHERE state = 'pending' AND nudged_at < ?1 - ?2 AND leased_until <= ?1
             AND nudged_at < ?1 - ?2 * (CASE WHEN lease IS NULL OR redrives >= ?3 THEN 1 ELSE 1 << redrives END)
           ORDER BY nudged_at LIMIT ?4`,
        )
        .bind(now, quietMs, maxRedrives, limit);
  const { results } = await statement.all<{ id: number; panel_id: string; redrives: number; taken: number }>();
  return results.map((r) => ({ id: r.id, panelId: r.panel_id, redrives: r.redrives, taken: r.taken === 1 }));
}

/**
 * Records a re-drive of these batches once their new nudge is sent (a failed send records
 * nothing, so an outage of the queue fails no batch): `count` adds one to their re-drives (a
 * consumer took them since the last one and did not finish), and the lease mark is cleared, so
 * the next re-drive counts only if a consumer takes them again (a consumer that took them
 * already, the new nudge being quick, keeps its lease). `fail` marks them failed instead, left
 * for an operator's retry, unless a consumer holds them by now.
 */
export async function markRedriven(db: ShardDb, ids: readonly number[], now: number, { fail = false, count }: { fail?: boolean; count: boolean }): Promise<void> {
  if (ids.length === 0) return;
  await db
    .prepare(
      `UPDATE event_batches SET nudged_at = MAX(nudged_at, ?2), redrives = redrives + ?4,
         lease = CASE WHEN leased_until <= ?2 THEN NULL ELSE lease END, state = CASE WHEN ?3 THEN 'failed' ELSE state END
       WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'pending' AND (NOT ?3 OR leased_until <= ?2)`,
    )
    .bind(JSON.stringify(ids), now, fail ? 1 : 0, count ? 1 : 0)
    .run();
}

/**
 * Puts up to `limit` of the panel's failed batches back in the pipeline (an operator's retry,
 * once the cause is mended): pending again with fresh attempt and re-drive counts, keeping the
 * steps they passed. Returns their ids, oldest first.
 */
export async function retryFailedBatches(db: ShardDb, panelId: string, now: number, limit: number): Promise<number[]> {
  const { results } = await db
    .prepare(
      `UPDATE event_batches SET state = 'pending', attempts = 0, redrives = 0, lease = NULL, nudged_at = ?1
       WHERE id IN (SELECT id FROM event_batches WHERE panel_id = ?2 AND state = 'failed' ORDER BY id LIMIT ?3)
       RETURNING id`,
    )
    .bind(now, panelId, limit)
    .all<{ id: number }>();
  return results.map((r) => r.id).sort((a, b) => a - b);
}

/** A batch set apart for re-routing: its recorded events and the guids it claimed here. */
export interface BatchToReroute {
  id: number;
  receivedAt: number;
  events: RecordedEvent[];
  /** The caller-chosen guids this batch holds the claim of (its other claimed events are duplicates, never stored). */
  claims: Set<string>;
}

/** The batches among `ids` set apart under `lease` (rerouteLease), with their events and claims. */
export async function batchesToReroute(db: ShardDb, panelId: string, ids: readonly number[], lease: string): Promise<BatchToReroute[]> {
  const idList = idListOf(ids);
  const [batches, claims] = await db.batch<Record<string, unknown>>([
    db
      .prepare("SELECT id, received_at, events FROM event_batches WHERE id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1 AND lease = ?3 AND events IS NOT NULL ORDER BY id")
      .bind(panelId, idList, lease),
    db
      .prepare(
        `SELECT g.batch_id, g.guid FROM event_guids g
         WHERE g.panel_id = ?1 AND g.batch_id IN (SELECT id FROM event_batches WHERE id IN (SELECT value FROM json_each(?2)) AND panel_id = ?1 AND lease = ?3)`,
      )
      .bind(panelId, idList, lease),
  ]);
  return (batches!.results as Array<{ id: number; received_at: number; events: string }>).map((row) => ({
    id: row.id,
    receivedAt: row.received_at,
    events: JSON.parse(row.events) as RecordedEvent[],
    claims: new Set((claims!.results as Array<{ batch_id: number; guid: string }>).filter((c) => c.batch_id === row.id).map((c) => c.guid)),
  }));
}

/**
 * The hand-off's end on the batch's own shard, only while the batch is still under the
 * re-route `lease`: its events become `kept` (the batch goes when none is left) and the batch
 * is free for any pass. Run after the events were appended on their shards: a crash before it
 * leaves the batch whole, and the next pass hands the same events on again, which their claims
 * there make a no-op. The claims this batch holds here for the events handed on are left: they
 * are in the moving buckets, which the fence keeps from being written until the split's
 * cleaning deletes them with the buckets' other rows.
 */
export async function keepRecordedEvents(db: ShardDb, panelId: string, id: number, lease: string, kept: readonly RecordedEvent[]): Promise<void> {
  await (kept.length
    ? db.prepare("UPDATE event_batches SET events = ?4, lease = NULL, leased_until = 0 WHERE id = ?2 AND panel_id = ?1 AND lease = ?3").bind(panelId, id, lease, JSON.stringify(kept))
    : db.prepare("DELETE FROM event_batches WHERE id = ?2 AND panel_id = ?1 AND lease = ?3").bind(panelId, id, lease)
  ).run();
}
