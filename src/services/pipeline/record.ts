import { panelDb } from "../access/shards";
import { shardOf } from "../../store/shards";
import { EVENT_CHANNELS, MAX_GUID_LENGTH, type NewEvent } from "../../domain/events";
import { uuidV7 } from "../../lib/random";
import { appendEventBatches, type EventToRecord } from "../../store/event-batches";
import { logNotEnqueued, nudgeEventBatches, nudgeEventBatchesSoon } from "./nudge";
import { metrics } from "../../lib/observability/metrics";

export interface RecordResult {
  /** Each event's guid, in the order of the events: the one given, or the one generated. */
  guids: string[];
  /** Events that will be stored (and run through the pipeline). */
  recorded: number;
  /** Events not stored because the panel already had their guid (or the call repeated it). */
  duplicates: number;
  /** Which of the events, by position, were duplicates. */
  duplicateAt: boolean[];
}

export interface RecordOptions {
  /** One clock reading for the whole call (received_at). */
  now?: number;
  /**
   * Where to hand the queue send, e.g. `(p) => exec.waitUntil(p)`, so the caller answers once
   * the events are stored without waiting for the queue; the send then gathers the batches of
   * other calls of the isolate (nudgeEventBatchesSoon). Without it the send is awaited. A
   * send that fails is logged, not thrown: the events are stored, and the re-drive cron
   * enqueues them again (src/services/pipeline/redrive.ts).
   */
  defer?: (work: Promise<unknown>) => void;
}

function assertRecordable(event: NewEvent): void {
  // Programming errors of a caller, not client input: callers validate what clients send.
  if (!(EVENT_CHANNELS as readonly string[]).includes(event.channel)) throw new Error(`recordEvents: unknown channel ${event.channel}`);
  if (event.contactId === undefined && !event.identity && !event.uniqueid) throw new Error("recordEvents: an event needs contactId, identity or uniqueid");
  if (event.guid !== undefined && (event.guid === "" || event.guid.length > MAX_GUID_LENGTH)) throw new Error("recordEvents: guid must be 1 to 255 characters");
  if (!Number.isFinite(event.occurredAt)) throw new Error("recordEvents: occurredAt must be epoch milliseconds");
}

/**
 * THE entry of every event of the service (CONTRACT 7). Records the events of one panel as
 * one batch in D1 (all or none) and returns once that is durably stored; then nudges the
 * EVENTS queue, whose consumer stores them as event rows (creating the contacts of unknown
 * identities and joining anonymous histories) and runs the pipeline steps. An event whose
 * guid the panel already has, or that the call repeats, is not stored twice: it counts as a
 * duplicate.
 *
 * Why a batch and not a row per event: the request then writes one row whatever its size
 * (a row per event would make a 1,000-event post insert 1,000 indexed rows and their contacts
 * before answering),
 * and every later stage works per batch (bench:activity).
 */
export async function recordEvents(
  env: Env,
  /** With its directory entry when the caller has it (an API call's panel), else found by id. */
  panel: { id: string; shard?: number },
  events: readonly NewEvent[],
  options: RecordOptions = {},
): Promise<RecordResult> {
  if (events.length === 0) return { guids: [], recorded: 0, duplicates: 0, duplicateAt: [] };
  events.forEach(assertRecordable);
  const now = options.now ?? Date.now();
  const seen = new Set<string>();
  const duplicateAt: boolean[] = [];
  const toRecord: EventToRecord[] = [];
  const guids = events.map((event) => {
    // Time-ordered, so guids of one panel sort by when they were recorded.
    const guid = event.guid ?? uuidV7(now);
    const repeated = event.guid !== undefined && seen.has(guid);
    // Only a caller's guid can repeat; generated ones are random (hashing those was a few % of a batch).
    if (event.guid !== undefined) seen.add(guid);
    duplicateAt.push(repeated);
    // Written out, not spread: a spread of each event was a large share of recording's CPU.
    if (!repeated) {
      toRecord.push({
        channel: event.channel,
        name: event.name,
        occurredAt: event.occurredAt,
        activityId: event.activityId,
        contactId: event.contactId,
        identity: event.identity,
        uniqueid: event.uniqueid,
        source: event.source,
        params: event.params,
        guid,
        claimed: event.guid !== undefined,
        msgid: event.msgid,
        campaignId: event.campaignId,
        journeyId: event.journeyId,
        assetId: event.assetId,
      });
    }
    return guid;
  });
  const db = panel.shard === undefined ? await panelDb(env, panel.id) : shardOf(env, { shard: panel.shard });
  const { batchIds, sizes, taken } = await appendEventBatches(db, panel.id, toRecord, now);
  events.forEach((event, index) => {
    if (event.guid !== undefined && taken.has(event.guid)) duplicateAt[index] = true;
  });
  const duplicates = duplicateAt.filter(Boolean).length;
  if (events.length > duplicates) metrics(env).events(events[0]!.channel, events.length - duplicates);
  if (batchIds.length && options.defer) nudgeEventBatchesSoon(env.EVENTS, panel.id, batchIds, sizes, options.defer);
  else if (batchIds.length) await nudgeEventBatches(env.EVENTS, panel.id, batchIds, sizes).catch(logNotEnqueued(panel.id, batchIds));
  return { guids, recorded: events.length - duplicates, duplicates, duplicateAt };
}
