import type { EventChannel, NewEvent } from "../domain/events";
import { ensureContactsStatement } from "./contacts";

/**
 * The event store. Batches travel as one JSON parameter read with json_each rather than as
 * multi-row VALUES: a 1,000-event batch is then one INSERT instead of ~90 statements cut to
 * D1's 100-parameter limit, and a bound text may be up to 2 MB (the statement-text limit of
 * 100 KB does not apply to it). JSON chunks are kept well below that.
 */
const MAX_JSON_CHUNK_CHARS = 512 * 1024;

export type EventState = "pending" | "done" | "failed";

/** An event as stored; what pipeline steps and the admin API read. */
export interface StoredEvent {
  id: number;
  panelId: string;
  guid: string;
  channel: EventChannel;
  name: string;
  activityId: number | null;
  contactId: number | null;
  uniqueid: string | null;
  identity: string | null;
  source: string | null;
  params: Record<string, unknown>;
  occurredAt: number;
  receivedAt: number;
  msgid: string | null;
  campaignId: string | null;
  journeyId: string | null;
  state: EventState;
  attempts: number;
}

interface EventRow {
  id: number;
  panel_id: string;
  guid: string;
  channel: EventChannel;
  name: string;
  activity_id: number | null;
  contact_id: number | null;
  uniqueid: string | null;
  identity: string | null;
  source: string | null;
  params: string;
  occurred_at: number;
  received_at: number;
  msgid: string | null;
  campaign_id: string | null;
  journey_id: string | null;
  state: EventState;
  attempts: number;
}

const EVENT_COLUMNS = `id, panel_id, guid, channel, name, activity_id, contact_id, uniqueid, identity, source, params,
  occurred_at, received_at, msgid, campaign_id, journey_id, state, attempts`;

function eventFromRow(row: EventRow): StoredEvent {
  return {
    id: row.id,
    panelId: row.panel_id,
    guid: row.guid,
    channel: row.channel,
    name: row.name,
    activityId: row.activity_id,
    contactId: row.contact_id,
    uniqueid: row.uniqueid,
    identity: row.identity,
    source: row.source,
    params: JSON.parse(row.params) as Record<string, unknown>,
    occurredAt: row.occurred_at,
    receivedAt: row.received_at,
    msgid: row.msgid,
    campaignId: row.campaign_id,
    journeyId: row.journey_id,
    state: row.state,
    attempts: row.attempts,
  };
}

/** Cuts items into JSON arrays of at most MAX_JSON_CHUNK_CHARS characters each. */
function jsonChunks(items: readonly unknown[]): string[] {
  if (items.length === 0) return [];
  const whole = JSON.stringify(items);
  if (whole.length <= MAX_JSON_CHUNK_CHARS) return [whole];
  const chunks: string[] = [];
  let parts: string[] = [];
  let size = 2;
  for (const item of items) {
    const text = JSON.stringify(item);
    if (parts.length && size + text.length + 1 > MAX_JSON_CHUNK_CHARS) {
      chunks.push(`[${parts.join(",")}]`);
      parts = [];
      size = 2;
    }
    parts.push(text);
    size += text.length + 1;
  }
  if (parts.length) chunks.push(`[${parts.join(",")}]`);
  return chunks;
}

export type EventToStore = NewEvent & { guid: string };

/**
 * Stores events in one D1 batch, so they are all stored or none: creates the contacts of
 * unknown identities, links each uniqueid seen with an identity to that contact (a new link
 * moves the uniqueid's anonymous events to it: trigger anon_profiles_join_history), then
 * inserts the events. An event whose guid the panel already has is not stored again. Returns
 * the ids of the events stored now, ascending.
 *
 * Statements are kept few on purpose: locally each costs about as much CPU as a whole bare
 * insert (bench:activity), so a post with identity and uniqueid is three, with one of them two.
 */
export async function storeEvents(
  db: D1Database,
  panel: { id: string; primaryKey: string },
  events: readonly EventToStore[],
  now: number,
): Promise<number[]> {
  const statements: D1PreparedStatement[] = [];
  const identities = [...new Set(events.flatMap((e) => (e.identity ? [e.identity] : [])))];
  if (identities.length) statements.push(ensureContactsStatement(db, panel.id, panel.primaryKey, identities, now));

  // One link per uniqueid: when a batch shows it with two identities, the later one wins.
  const linkOf = new Map<string, string>();
  for (const e of events) if (e.identity && e.uniqueid) linkOf.set(e.uniqueid, e.identity);
  const links = [...linkOf].map(([u, k]) => ({ u, k }));
  for (const chunk of jsonChunks(links)) {
    // CROSS JOIN keeps json_each the outer loop (SQLite's planner otherwise scans the panel's contacts).
    statements.push(
      db
        .prepare(
          `INSERT INTO anon_profiles (panel_id, uniqueid, contact_id, linked_at)
           SELECT ?1, l.value->>'u', c.id, ?2 FROM json_each(?3) l
             CROSS JOIN contacts c ON c.panel_id = ?1 AND c.pk_value = l.value->>'k'
           WHERE true
           ON CONFLICT (panel_id, uniqueid) DO UPDATE SET contact_id = excluded.contact_id, linked_at = excluded.linked_at
           WHERE anon_profiles.contact_id IS NOT excluded.contact_id`,
        )
        .bind(panel.id, now, chunk),
    );
  }

  const rows = events.map((e) => ({
    g: e.guid,
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
  }));
  const firstInsert = statements.length;
  for (const chunk of jsonChunks(rows)) {
    // The contact: the one the caller names, else the identity's, else the uniqueid's linked one.
    statements.push(
      db
        .prepare(
          `INSERT INTO events (panel_id, guid, channel, name, activity_id, contact_id, uniqueid, identity, source, params,
             occurred_at, received_at, msgid, campaign_id, journey_id, state, nudged_at)
           SELECT ?1, e.value->>'g', e.value->>'ch', e.value->>'n', e.value->>'a',
             COALESCE(
               (SELECT c.id FROM contacts c WHERE c.panel_id = ?1 AND c.id = e.value->>'c'),
               (SELECT c.id FROM contacts c WHERE c.panel_id = ?1 AND c.pk_value = e.value->>'k'),
               (SELECT ap.contact_id FROM anon_profiles ap WHERE ap.panel_id = ?1 AND ap.uniqueid = e.value->>'u')),
             e.value->>'u', e.value->>'k', e.value->>'s', e.value->'p', e.value->>'t', ?2,
             e.value->>'m', e.value->>'cp', e.value->>'j', 'pending', ?2
           FROM json_each(?3) e WHERE true ORDER BY e.key
           ON CONFLICT (panel_id, guid) DO NOTHING
           RETURNING id`,
        )
        .bind(panel.id, now, chunk),
    );
  }
  const results = await db.batch<{ id: number }>(statements);
  return results
    .slice(firstInsert)
    .flatMap((result) => result.results.map((row) => row.id))
    .sort((a, b) => a - b);
}

/*
 * Statements that name events by id write `+panel_id`: the unary plus keeps SQLite from
 * choosing the (panel_id, ...) index, which would walk the panel's whole history, over
 * rowid lookups. The panel condition still holds on every row.
 */

/** The pending events among `ids`, oldest first, with the steps already done for each. */
export async function loadPendingEvents(
  db: D1Database,
  panelId: string,
  ids: readonly number[],
): Promise<{ events: StoredEvent[]; stepsDone: Set<string> }> {
  const idList = JSON.stringify(ids);
  const [events, steps] = await db.batch([
    db
      .prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE id IN (SELECT value FROM json_each(?2)) AND +panel_id = ?1 AND state = 'pending' ORDER BY id`)
      .bind(panelId, idList),
    db
      .prepare(
        `SELECT event_id, step FROM event_steps
         WHERE panel_id = ? AND event_id IN (SELECT value FROM json_each(?)) AND done_at IS NOT NULL`,
      )
      .bind(panelId, idList),
  ]);
  return {
    events: (events!.results as unknown as EventRow[]).map(eventFromRow),
    stepsDone: new Set((steps!.results as Array<{ event_id: number; step: string }>).map((s) => stepKey(s.event_id, s.step))),
  };
}

export function stepKey(eventId: number, step: string): string {
  return `${eventId}:${step}`;
}

export interface PipelineProgress {
  stepsDone?: Array<{ eventId: number; step: string }>;
  stepsFailed?: Array<{ eventId: number; step: string; error: string }>;
  /** Every step done: the event leaves the pipeline. */
  eventsDone?: number[];
  /** Some step failed: the event stays pending and counts an attempt. */
  eventsRetrying?: number[];
}

/** Records what one consumer pass achieved, in one batch. */
export async function savePipelineProgress(db: D1Database, panelId: string, progress: PipelineProgress, now: number): Promise<void> {
  const statements: D1PreparedStatement[] = [];
  for (const chunk of jsonChunks((progress.stepsDone ?? []).map((s) => [s.eventId, s.step]))) {
    statements.push(
      db
        .prepare(
          `INSERT INTO event_steps (event_id, step, panel_id, done_at, attempts)
           SELECT s.value->>0, s.value->>1, ?1, ?2, 1 FROM json_each(?3) s WHERE true
           ON CONFLICT (event_id, step) DO UPDATE SET done_at = excluded.done_at, attempts = event_steps.attempts + 1`,
        )
        .bind(panelId, now, chunk),
    );
  }
  for (const chunk of jsonChunks((progress.stepsFailed ?? []).map((s) => [s.eventId, s.step, s.error.slice(0, 1000)]))) {
    statements.push(
      db
        .prepare(
          `INSERT INTO event_steps (event_id, step, panel_id, done_at, attempts, last_error)
           SELECT s.value->>0, s.value->>1, ?1, NULL, 1, s.value->>2 FROM json_each(?2) s WHERE true
           ON CONFLICT (event_id, step) DO UPDATE SET attempts = event_steps.attempts + 1, last_error = excluded.last_error`,
        )
        .bind(panelId, chunk),
    );
  }
  if (progress.eventsDone?.length) {
    statements.push(
      db
        .prepare(
          `UPDATE events SET state = 'done', attempts = attempts + 1, nudged_at = ?1
           WHERE id IN (SELECT value FROM json_each(?3)) AND +panel_id = ?2 AND state = 'pending'`,
        )
        .bind(now, panelId, JSON.stringify(progress.eventsDone)),
    );
  }
  if (progress.eventsRetrying?.length) {
    statements.push(
      db
        .prepare(
          `UPDATE events SET attempts = attempts + 1, nudged_at = ?1
           WHERE id IN (SELECT value FROM json_each(?3)) AND +panel_id = ?2 AND state = 'pending'`,
        )
        .bind(now, panelId, JSON.stringify(progress.eventsRetrying)),
    );
  }
  if (statements.length) await db.batch(statements);
}

/**
 * Claims pending events nobody has nudged or attempted since `quietSince` (their enqueue was
 * lost, or the queue gave up on them): bumps their nudge time and re-drive count, and marks
 * those re-driven `maxRedrives` times already as failed instead. This sweep is the one query
 * that reads across panels; each returned id is then handled within its own panel.
 */
export async function claimStalledEvents(
  db: D1Database,
  quietSince: number,
  now: number,
  limit: number,
  maxRedrives: number,
): Promise<Array<{ id: number; panelId: string; state: EventState }>> {
  const { results } = await db
    .prepare(
      `UPDATE events SET nudged_at = ?1, redrives = redrives + 1,
         state = CASE WHEN redrives >= ?2 THEN 'failed' ELSE state END
       WHERE id IN (SELECT id FROM events WHERE state = 'pending' AND nudged_at < ?3 ORDER BY nudged_at LIMIT ?4)
       RETURNING id, panel_id, state`,
    )
    .bind(now, maxRedrives, quietSince, limit)
    .all<{ id: number; panel_id: string; state: EventState }>();
  return results.map((r) => ({ id: r.id, panelId: r.panel_id, state: r.state }));
}

export type EventOwner = { contactId: number } | { uniqueid: string };

/** A position in a newest-first listing: the last event of the previous page. */
export interface EventCursor {
  occurredAt: number;
  id: number;
}

/** The events of a contact or of an anonymous uniqueid, newest first, after `cursor`. */
export async function listEventsOf(
  db: D1Database,
  panelId: string,
  owner: EventOwner,
  limit: number,
  cursor?: EventCursor,
): Promise<StoredEvent[]> {
  const [column, value] = "contactId" in owner ? ["contact_id", owner.contactId] : ["uniqueid", owner.uniqueid];
  const { results } = await db
    .prepare(
      `SELECT ${EVENT_COLUMNS} FROM events
       WHERE panel_id = ?1 AND ${column} = ?2 AND (?3 IS NULL OR (occurred_at, id) < (?3, ?4))
       ORDER BY occurred_at DESC, id DESC LIMIT ?5`,
    )
    .bind(panelId, value, cursor?.occurredAt ?? null, cursor?.id ?? null, limit)
    .all<EventRow>();
  return results.map(eventFromRow);
}

/** Stored events of the panel by id (journeys read the event a webhook describes). */
export async function getEventsByIds(db: D1Database, panelId: string, ids: readonly number[]): Promise<Map<number, StoredEvent>> {
  if (ids.length === 0) return new Map();
  const { results } = await db
    .prepare(`SELECT ${EVENT_COLUMNS} FROM events WHERE panel_id = ? AND id IN (SELECT value FROM json_each(?))`)
    .bind(panelId, JSON.stringify(ids))
    .all<EventRow>();
  return new Map(results.map((row) => [row.id, eventFromRow(row)]));
}
