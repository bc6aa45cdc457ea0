/**
 * Cutting the backlog into batches (CONTRACT 6): a batch closes at 100 events, at 256 KB of
 * request body, or when its oldest event has waited the batch window (5 s), whichever comes
 * first, and where the backlog passes from live events to a replay's or back. Pure: the Durable Object feeds it the head of its backlog and the time.
 *
 * Sizes are of the request body as sent: `data=` followed by the URL-encoded JSON. Each event
 * is URL-encoded once, when it is handed over, so a batch body is a concatenation of stored
 * strings and its size is known before it is built.
 */

export interface BatchLimits {
  maxEvents: number;
  maxBytes: number;
  windowMs: number;
}

export const BATCH_LIMITS: BatchLimits = { maxEvents: 100, maxBytes: 256 * 1024, windowMs: 5_000 };

/** An event may take at most half a batch, so a batch always has room for the envelope. */
export const MAX_EVENT_BYTES = BATCH_LIMITS.maxBytes / 2;

export interface PendingEvent {
  seq: number;
  /** Length of the URL-encoded event JSON (ASCII, so bytes). */
  bytes: number;
  enqueuedAt: number;
  /** The replay that queued it (null or absent for live events): a batch never mixes two. */
  replay?: string | null;
}

export type CutDecision = { kind: "empty" } | { kind: "wait"; until: number } | { kind: "cut"; seqs: number[] };

/** URL-encoded `,` between two events of the array. */
const SEPARATOR = encodeURIComponent(",");

/** Body bytes besides the events: `data=`, `{"<panel name>":[` and `]}`. */
export function envelopeBytes(envelopeKey: string): number {
  return "data=".length + encodeURIComponent(`{${JSON.stringify(envelopeKey)}:[`).length + encodeURIComponent("]}").length;
}

/** The form-encoded body `data=<URL-encoded {"<panel name>": [events]}>` from URL-encoded events. */
export function batchBody(envelopeKey: string, encodedEvents: readonly string[]): string {
  return `data=${encodeURIComponent(`{${JSON.stringify(envelopeKey)}:[`)}${encodedEvents.join(SEPARATOR)}${encodeURIComponent("]}")}`;
}

/**
 * What to do with the oldest pending events (in order, at least `limits.maxEvents` of them when
 * there are that many): cut a batch now, wait until the window closes, or nothing.
 */
export function decideCut(pending: readonly PendingEvent[], now: number, envelopeKey: string, limits: BatchLimits = BATCH_LIMITS): CutDecision {
  const first = pending[0];
  if (!first) return { kind: "empty" };
  const seqs: number[] = [];
  let bytes = envelopeBytes(envelopeKey);
  let full = false;
  for (const event of pending) {
    // A replay's events and live ones never share a batch (its deliveries carry the replay's
    // header); the run before the change is complete, so it goes at once.
    if ((event.replay ?? null) !== (first.replay ?? null)) {
      full = true;
      break;
    }
    const added = event.bytes + (seqs.length ? SEPARATOR.length : 0);
    // The first event always goes in: one event never exceeds a batch (MAX_EVENT_BYTES).
    if (seqs.length && bytes + added > limits.maxBytes) {
      full = true;
      break;
    }
    seqs.push(event.seq);
    bytes += added;
    if (seqs.length >= limits.maxEvents) {
      full = true;
      break;
    }
  }
  const windowEnds = first.enqueuedAt + limits.windowMs;
  if (full || now >= windowEnds) return { kind: "cut", seqs };
  return { kind: "wait", until: windowEnds };
}
