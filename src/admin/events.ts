import { contactEventsAnswer, eventRetryAnswer, profileEventsAnswer } from "../domain/answers/contacts";
import { NEEDS } from "../domain/permissions";
import { contactHistoryPage, uniqueidHistoryPage, type HistoryEvent } from "../services/retention/history";
import { normalisePrimaryKey } from "../domain/primary-key";
import { formatCts, formatLocalIso } from "../domain/time";
import { invalidField, orNotFound } from "../lib/http/errors";
import { base64UrlEncode } from "../lib/random";
import { z } from "../lib/z";
import { loadAttributeSchema } from "../store/attributes";
import { getContactByKey } from "../store/contacts";
import { contactDb, hasContactsBeyondHome, panelOwningShards } from "../services/access/partitions";
import { eventPipelineState } from "../services/pipeline/consumer";
import { PIPELINE_STEPS } from "../services/pipeline-steps";
import { retryFailedEventBatches } from "../services/pipeline/retry-failed";
import { type EventBatchState, type EventCursor, type StoredEvent } from "../store/events";
import type { Panel } from "../store/panels";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";

/** An event as the admin API shows it; times also in the panel's zone, as webhooks carry them. */
export function eventView(event: StoredEvent & { batch: EventBatchState | null }, timezone: string) {
  return {
    guid: event.guid,
    channel: event.channel,
    name: event.name,
    activityid: event.activityId === null ? null : String(event.activityId),
    source: event.source,
    params: event.params,
    identity: event.identity,
    uniqueid: event.uniqueid,
    ts: formatCts(event.occurredAt, timezone),
    timestamp: formatLocalIso(event.occurredAt, timezone),
    occurred_at: isoTime(event.occurredAt),
    received_at: isoTime(event.receivedAt),
    msgid: event.msgid,
    campaign_id: event.campaignId,
    journey_id: event.journeyId,
    asset_id: event.assetId,
    pipeline: eventPipelineState(event.id, event.batch, PIPELINE_STEPS),
  };
}

function encodeCursor(event: StoredEvent): string {
  return base64UrlEncode(new TextEncoder().encode(`${event.occurredAt}:${event.id}`));
}

function decodeCursor(cursor: string | undefined): EventCursor | undefined {
  if (cursor === undefined) return undefined;
  let text = "";
  try {
    text = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    // reported below
  }
  const match = /^(-?\d{1,16}):(\d{1,16})$/.exec(text);
  if (!match) throw invalidField("cursor", "is not a cursor this API answered (next_cursor)");
  return { occurredAt: Number(match[1]), id: Number(match[2]) };
}

const pageQuery = z.object({
  limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(500).default(50),
  cursor: z.string().optional().meta({ description: "next_cursor of the previous page" }),
});

/** A page of `read`'s events (`limit`, past `cursor`: the rows still in the shard, then the days moved to R2 by event retention). */
async function eventPage(panel: Panel, query: z.output<typeof pageQuery>, read: (limit: number, cursor: EventCursor | undefined) => Promise<HistoryEvent[]>) {
  const events = await read(query.limit + 1, decodeCursor(query.cursor));
  const page = events.slice(0, query.limit);
  return {
    events: page.map((event) => eventView(event, panel.timezone)),
    next_cursor: events.length > query.limit ? encodeCursor(page.at(-1)!) : null,
  };
}

const contactEvents = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/contacts/:key/events",
  role: NEEDS.read,
  response: contactEventsAnswer,
  summary: "A contact's events, newest first, including the anonymous history joined to it; key is its primary-key value",
  query: pageQuery,
  async handle({ env, path, query, panel, db: home }) {
    const schema = await loadAttributeSchema(home, panel.id);
    const key = normalisePrimaryKey(panel.primaryKey, schema.get(panel.primaryKey) ?? "string", path.key);
    if (!key.ok) throw invalidField("key", key.reason);
    // The contact and its events are on its key's partition (decision 0038).
    const db = contactDb(env, panel, home, key.value);
    const contact = await orNotFound(getContactByKey(db, panel.id, key.value), `No contact with ${panel.primaryKey} "${key.value}" in this panel`);
    // Its uniqueids' anonymous events may be on their own partitions, unjoined (a panel on one shard: no other read).
    const uniqueidDb = hasContactsBeyondHome(panel) ? (uniqueid: string) => contactDb(env, panel, home, uniqueid) : undefined;
    return { contact: key.value, ...(await eventPage(panel, query, (limit, cursor) => contactHistoryPage(env.FILES, db, panel.id, contact.id, limit, cursor, uniqueidDb))) };
  },
});

const profileEvents = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/profiles/:uniqueid/events",
  role: NEEDS.read,
  response: profileEventsAnswer,
  summary: "Events recorded with an anonymous uniqueid, newest first (whether or not joined to a contact since)",
  query: pageQuery,
  async handle({ env, path, query, panel, db }) {
    // Its anonymous events are on its partition, those with an identity since on the contact's (decision 0038).
    const shards = panelOwningShards(env, panel, db);
    return { uniqueid: path.uniqueid, ...(await eventPage(panel, query, (limit, cursor) => uniqueidHistoryPage(env.FILES, shards, panel.id, path.uniqueid, limit, cursor))) };
  },
});

/** Failed batches put back per call: one nudge message per 5, within what a call may send. */
const RETRY_BATCHES_PER_CALL = 500;

const retryFailedEvents = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/events/retry",
  role: NEEDS.retryEvents,
  response: eventRetryAnswer,
  summary: `Puts events whose pipeline failed for good (after every re-drive) through it again, up to ${RETRY_BATCHES_PER_CALL} recorded batches per call; steps they passed are not run again`,
  async handle({ env, panel }) {
    const ids = await retryFailedEventBatches(env, panel, RETRY_BATCHES_PER_CALL);
    return { retried_batches: ids.length, more: ids.length === RETRY_BATCHES_PER_CALL };
  },
});

export const eventRoutes = [contactEvents, profileEvents, retryFailedEvents];
