import type { ShardDb } from "./shards";
import type { EventChannel } from "../domain/events";
import type { BucketRanges } from "../domain/partitions";
import { inBucketRanges } from "./sql";

/**
 * The stored events (rows of `events`), as pipeline steps and the admin API read them. Events
 * are recorded as batches first (store/event-batches.ts); the pipeline makes them rows.
 */

/** Where an event is in the pipeline: its batch still pending or failed, or done with. */
export type EventPipelineState = "pending" | "done" | "failed";

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
  assetId: string | null;
}

export interface EventRow {
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
  asset_id: string | null;
}

const COLUMN_NAMES = [
  "id", "panel_id", "guid", "channel", "name", "activity_id", "contact_id", "uniqueid", "identity", "source", "params",
  "occurred_at", "received_at", "msgid", "campaign_id", "journey_id", "asset_id",
];

/** The columns of an event row, qualified by `alias` when given. */
export function eventColumns(alias?: string): string {
  return COLUMN_NAMES.map((name) => (alias ? `${alias}.${name}` : name)).join(", ");
}

export function eventFromRow(row: EventRow): StoredEvent {
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
    assetId: row.asset_id,
  };
}

/**
 * Whose events: a contact's, or a uniqueid's; `unjoined`: only its anonymous events joined to no
 * contact on the shard read (a uniqueid linked to a contact on another partition keeps them
 * there unjoined, decision 0038 step 3: that contact's history reads them so).
 */
export type EventOwner = { contactId: number } | { uniqueid: string; unjoined?: true };

/** A position in a newest-first listing: the last event of the previous page. */
export interface EventCursor {
  occurredAt: number;
  id: number;
}

/** The pipeline's record of the batch an event was recorded in, while it is in the pipeline. */
export interface EventBatchState {
  state: "pending" | "failed";
  stepsDone: Record<string, true | number[]>;
}

/**
 * The events of a contact or of an anonymous uniqueid, newest first, after `cursor`, each with
 * its batch's pipeline record (null once the batch left the pipeline). A uniqueid's events are
 * those recorded without an identity (events_by_uniqueid) and those recorded with one, found
 * among the events of each contact the uniqueid was seen with (uniqueid_contacts, shard
 * migration 0057). `+panel_id` keeps the planner on events_by_contact where a contact is named:
 * without it the planner may read the panel's rows in events_by_name instead. With `buckets`
 * (the shard's in the panel's map) only events in them: a split's source holds copies of the
 * moved events until cleaning (decision 0047).
 */
export async function listEventsOf(
  db: ShardDb,
  panelId: string,
  owner: EventOwner,
  limit: number,
  cursor?: EventCursor,
  buckets: BucketRanges | null = null,
): Promise<Array<StoredEvent & { batch: EventBatchState | null }>> {
  const columns = `${eventColumns("e")}, b.state AS batch_state, b.steps_done AS batch_steps_done`;
  const page = `(?3 IS NULL OR (e.occurred_at, e.id) < (?3, ?4)) AND (?6 IS NULL OR ${inBucketRanges("e.bucket", "?6")})`;
  const [sql, value] =
    "contactId" in owner
      ? [
          `SELECT ${columns} FROM events e LEFT JOIN event_batches b ON b.id = e.batch_id
           WHERE e.contact_id = ?2 AND +e.panel_id = ?1 AND ${page}
           ORDER BY e.occurred_at DESC, e.id DESC LIMIT ?5`,
          owner.contactId,
        ]
      : owner.unjoined
        ? [
            `SELECT ${columns} FROM events e LEFT JOIN event_batches b ON b.id = e.batch_id
             WHERE e.panel_id = ?1 AND e.uniqueid = ?2 AND e.identity IS NULL AND e.contact_id IS NULL AND ${page}
             ORDER BY e.occurred_at DESC, e.id DESC LIMIT ?5`,
            owner.uniqueid,
          ]
        : [
          `SELECT * FROM (
             SELECT ${columns} FROM events e LEFT JOIN event_batches b ON b.id = e.batch_id
             WHERE e.panel_id = ?1 AND e.uniqueid = ?2 AND e.identity IS NULL AND ${page}
             UNION ALL
             SELECT ${columns} FROM uniqueid_contacts u CROSS JOIN events e ON e.contact_id = u.contact_id LEFT JOIN event_batches b ON b.id = e.batch_id
             WHERE u.panel_id = ?1 AND u.uniqueid = ?2 AND +e.panel_id = ?1 AND e.uniqueid = ?2 AND e.identity IS NOT NULL AND ${page})
           ORDER BY occurred_at DESC, id DESC LIMIT ?5`,
          owner.uniqueid,
        ];
  const { results } = await db
    .prepare(sql)
    .bind(panelId, value, cursor?.occurredAt ?? null, cursor?.id ?? null, limit, buckets && JSON.stringify(buckets))
    .all<EventRow & { batch_state: EventBatchState["state"] | null; batch_steps_done: string | null }>();
  return results.map((row) => ({
    ...eventFromRow(row),
    batch: row.batch_state === null ? null : { state: row.batch_state, stepsDone: JSON.parse(row.batch_steps_done ?? "{}") as EventBatchState["stepsDone"] },
  }));
}

/** Stored events of the panel by id (journeys read the event a webhook describes). */
export async function getEventsByIds(db: ShardDb, panelId: string, ids: readonly number[]): Promise<Map<number, StoredEvent>> {
  if (ids.length === 0) return new Map();
  const { results } = await db
    // +panel_id: the ids are looked up by key (the planner would otherwise scan the panel's rows in an index).
    .prepare(`SELECT ${eventColumns()} FROM events WHERE +panel_id = ? AND id IN (SELECT value FROM json_each(?))`)
    .bind(panelId, JSON.stringify(ids))
    .all<EventRow>();
  return new Map(results.map((row) => [row.id, eventFromRow(row)]));
}
