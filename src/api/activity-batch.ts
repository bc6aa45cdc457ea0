import { prepareActivityEvent, type ActivityEventInput } from "../domain/activity";
import { JOURNEYS_SKIPPED_OLD, startsJourneys, type NewEvent } from "../domain/events";
import type { FieldProblem } from "../domain/problems";
import { fieldErrorsFromZod } from "../lib/http/errors";
import { envelopeSuccess, json } from "../lib/http/respond";
import type { z } from "../lib/z";
import { recordEvents } from "../services/pipeline/record";
import { catalogKnowing, definitionOf, ingestPanel, type ActivityRef } from "../services/access/activity-catalogs";
import type { ActivityCatalog } from "../store/activities";

/**
 * The batch core (CONTRACT 10, amending 8), shared by /activity/batch, /activity/upload and the
 * CSV batch: every event validated on its own, the valid ones stored together even when others
 * are rejected; 200 Success when at least one was stored, naming each rejected event by index
 * in `errors`; 400 Failed when all were rejected (nothing stored). A call hands its events over
 * in one group (a JSON body) or group by group as it reads them (a CSV file), then answers.
 */

/** The CSV batch's file (CONTRACT 10): rows after the header, and bytes. */
export const MAX_CSV_ROWS = 10_000;
export const MAX_CSV_BYTES = 5 * 1024 * 1024;

type EventProblem = FieldProblem & { index: number };

/** How a batch route reads its events, once its panel and caller are settled. */
export interface BatchSource {
  catalog: ActivityCatalog;
  /** The JSON shape of one event, and how the parsed event names its activity. */
  parse(item: unknown): { success: true; data: ActivityEventInput } | { success: false; error: z.ZodError };
  ref(input: ActivityEventInput): ActivityRef;
  /** Idempotency-Key: event `i` without a guid gets `<key>:<i>`. */
  key?: string;
  /** The events' parameters are CSV cells: an array parameter's cell holds the array's JSON. */
  fromCells?: boolean;
}

/** Where in the call (`positions`, the events' indexes in it) the events too old to start journeys are. */
export function tooOldForJourneys(events: readonly NewEvent[], now: number, positions: readonly number[]): number[] {
  const old: number[] = [];
  for (let i = 0; i < events.length; i++) if (!startsJourneys(events[i]!, now)) old.push(positions[i]!);
  return old;
}

export class ActivityBatch {
  private catalog: ActivityCatalog;
  /** One clock reading for the whole call. */
  private readonly now = Date.now();
  private readonly problems: EventProblem[] = [];
  private readonly events: NewEvent[] = [];
  /** Each event's index in the call. */
  private readonly positions: number[] = [];
  /** Events handed over, valid or not. */
  private total = 0;

  constructor(
    private readonly env: Env,
    private readonly source: BatchSource,
  ) {
    this.catalog = source.catalog;
  }

  /** Events handed over so far, valid or not. */
  get size(): number {
    return this.total;
  }

  /** An event refused before it could be parsed (a CSV row that is not valid CSV). */
  reject(index: number, field: string, message: string): void {
    this.total++;
    this.problems.push({ index, field, message });
  }

  /** Validates a group of the call's events: at indexes `at`, `at + 1`, … of the call, or at the indexes `at` lists. */
  async add(items: readonly unknown[], at: number | readonly number[]): Promise<void> {
    const call = this.source;
    const parsed = items.map((item) => call.parse(item));
    // Loops rather than flatMap here and below: an array per event was measurable on a 1,000-event call.
    const refs: ActivityRef[] = [];
    for (const result of parsed) if (result.success) refs.push(call.ref(result.data));
    const catalog = (this.catalog = await catalogKnowing(this.env, this.catalog.panel.clientId, this.catalog, refs));
    const panel = ingestPanel(catalog);
    const { problems, events, positions, now } = this;
    this.total += items.length;
    parsed.forEach((result, offset) => {
      const index = typeof at === "number" ? at + offset : at[offset]!;
      if (!result.success) {
        for (const problem of fieldErrorsFromZod(result.error)) problems.push({ index, ...problem });
        return;
      }
      const prepared = prepareActivityEvent(result.data, definitionOf(catalog, call.ref(result.data)), panel, now, call.fromCells);
      // A batch answers every refusal as the event's errors[] lines, whatever its kind (CONTRACT 10).
      if (!prepared.ok) {
        for (const problem of prepared.problem.fields) problems.push({ index, ...problem });
        return;
      }
      // The prepared event is this call's own: completed in place.
      const event = prepared.value;
      if (event.guid === undefined && call.key !== undefined) event.guid = `${call.key}:${index}`;
      events.push(event);
      positions.push(index);
    });
  }

  /** Records the valid events (all in one recordEvents call) and answers the call. */
  async answer(requestId: string, exec: ExecutionContext): Promise<Response> {
    const { events, positions, now } = this;
    // Groups of a CSV may report refused rows before the group's other problems.
    const problems = this.problems.sort((a, b) => a.index - b.index);
    const rejected = this.total - events.length;
    const counts = { recorded: events.length, accepted: events.length, duplicates: 0, rejected };
    if (events.length === 0) {
      const first = problems[0]!;
      return json(
        {
          requestid: requestId,
          result: "Failed",
          message: `Every event was rejected and nothing was stored; event ${first.index}: ${first.field}: ${first.message}`,
          ...counts,
          errors: problems,
        },
        400,
      );
    }
    const recorded = await recordEvents(this.env, this.catalog.panel, events, { now, defer: (work) => exec.waitUntil(work) });
    counts.duplicates = recorded.duplicates;
    const old = tooOldForJourneys(events, now, positions);
    const journeys = old.length ? { journeys: JOURNEYS_SKIPPED_OLD, journeys_skipped: old } : {};
    // 200 whenever something was stored (CONTRACT 10): a client that retries a non-200 answer
    // would record the good events a second time.
    return envelopeSuccess(requestId, {
      ...(rejected ? { message: `${rejected} of ${this.total} events were rejected; the other ${events.length} were stored` } : {}),
      ...counts,
      ...journeys,
      errors: problems,
    });
  }
}
