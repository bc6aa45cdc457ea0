import { EVENT_CHANNELS, MAX_GUID_LENGTH, type NewEvent } from "../domain/events";
import { uuidV7 } from "../lib/random";
import { storeEvents } from "../store/events";
import { nudgeEvents } from "./nudge";

export interface RecordResult {
  /** Each event's guid, in the order of the events: the one given, or the one generated. */
  guids: string[];
  /** Ids of the events this call stored, ascending. */
  ids: number[];
  /** Events not stored because the panel already had their guid (or the call repeated it). */
  duplicates: number;
}

export interface RecordOptions {
  /** One clock reading for the whole call (received_at). */
  now?: number;
  /**
   * Where to hand the queue send, e.g. `(p) => exec.waitUntil(p)`, so the caller answers once
   * the events are stored without waiting for the queue. Without it the send is awaited. A
   * send that fails is logged, not thrown: the events are stored, and the re-drive cron
   * enqueues them again (src/pipeline/redrive.ts).
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
 * THE entry of every event of the service (CONTRACT 7). Stores the events of one panel in
 * one D1 batch (all or none) and returns once they are durably stored; then nudges the EVENTS
 * queue, whose consumer runs the pipeline steps. An event whose guid the panel already has is
 * not stored twice; it counts as a duplicate.
 */
export async function recordEvents(
  env: Pick<Env, "DB" | "EVENTS">,
  panel: { id: string; primaryKey: string },
  events: readonly NewEvent[],
  options: RecordOptions = {},
): Promise<RecordResult> {
  if (events.length === 0) return { guids: [], ids: [], duplicates: 0 };
  events.forEach(assertRecordable);
  const now = options.now ?? Date.now();
  // Time-ordered, so the (panel_id, guid) index is appended to rather than written at random.
  const toStore = events.map((event) => ({ ...event, guid: event.guid ?? uuidV7(now) }));
  const ids = await storeEvents(env.DB, panel, toStore, now);
  if (ids.length) {
    const nudge = nudgeEvents(env.EVENTS, panel.id, ids).catch((error) => {
      console.error(`events ${ids[0]}..${ids.at(-1)} of panel ${panel.id} stored but not enqueued; the re-drive will`, error);
    });
    if (options.defer) options.defer(nudge);
    else await nudge;
  }
  return { guids: toStore.map((event) => event.guid), ids, duplicates: events.length - ids.length };
}
