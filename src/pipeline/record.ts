import { EVENT_CHANNELS, MAX_GUID_LENGTH, type NewEvent } from "../domain/events";
import { storeEvents } from "../store/events";
import { nudgeEvents } from "./nudge";

export interface RecordedEvent {
  guid: string;
  /** The stored event's id; null when the panel already had an event with this guid. */
  id: number | null;
  duplicate: boolean;
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
 * reported as a duplicate and stored nothing twice. Results are in the order of `events`.
 */
export async function recordEvents(
  env: Pick<Env, "DB" | "EVENTS">,
  panel: { id: string; primaryKey: string },
  events: readonly NewEvent[],
  options: RecordOptions = {},
): Promise<RecordedEvent[]> {
  if (events.length === 0) return [];
  events.forEach(assertRecordable);
  const now = options.now ?? Date.now();
  const toStore = events.map((event) => ({ ...event, guid: event.guid ?? crypto.randomUUID() }));
  const stored = await storeEvents(env.DB, panel, toStore, now);

  const claimed = new Set<string>();
  const recorded = toStore.map(({ guid }): RecordedEvent => {
    const id = stored.get(guid);
    const isNew = id !== undefined && !claimed.has(guid);
    claimed.add(guid);
    return { guid, id: isNew ? id : null, duplicate: !isNew };
  });

  const ids = [...stored.values()].sort((a, b) => a - b);
  if (ids.length) {
    const nudge = nudgeEvents(env.EVENTS, panel.id, ids).catch((error) => {
      console.error(`events ${ids[0]}..${ids.at(-1)} of panel ${panel.id} stored but not enqueued; the re-drive will`, error);
    });
    if (options.defer) options.defer(nudge);
    else await nudge;
  }
  return recorded;
}
