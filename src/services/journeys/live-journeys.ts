import type { ShardDb } from "../../store/shards";
import { TtlCache } from "../../lib/ttl-cache";
import { liveJourneysOfPanel, type Journey } from "../../store/journeys/definitions";

/**
 * The journeys of a panel that are running or paused, as an isolate last read them. Contact
 * writes (segment and list triggers) and the event pipeline (activity triggers, waits) ask it
 * on every call; a panel without such journeys, the common case, then costs no D1 read at all.
 *
 * Freshness is the API-key cache's rule (decision 0006, 10 s): a journey run, paused or
 * stopped through another isolate is seen here within that time; in the isolate that changed
 * it, at once (forgetLiveJourneys). Entries a stale answer misses are not lost where another
 * path takes them: list entries are left by the membership's trigger in D1 and taken by the
 * cron; a segment journey's entry scan passes over every contact after it starts, and the
 * contacts it passed within this time are looked at again once it is over (rescan_upto,
 * contact-triggers.ts). An activity trigger has no such second look, so the pipeline asks for
 * an answer read after its events were recorded (`recordedBy`): a journey started before them,
 * through any isolate, is then seen (one read a pass while events keep coming).
 */
export const LIVE_JOURNEYS_CACHE_MS = 10_000;
/** How far two isolates' clocks may disagree: an answer read this close after `recordedBy` is read again. */
const CLOCK_SKEW_MS = 1_000;
/** A read of the panel's live journeys, shared by concurrent callers; `settled` once it succeeded. */
interface LiveRead {
  journeys: Promise<Journey[]>;
  readAt: number;
  settled?: Journey[];
}
const live = new TtlCache<LiveRead>(LIVE_JOURNEYS_CACHE_MS, 1000);

export function liveJourneys(db: ShardDb, panelId: string, recordedBy?: number): Promise<Journey[]> {
  const now = Date.now();
  const cached = live.get(panelId, now);
  if (cached && (recordedBy === undefined || cached.readAt >= recordedBy + CLOCK_SKEW_MS)) return cached.journeys;
  // The promise is cached, so concurrent calls share one read; a failed read is not kept.
  const journeys = liveJourneysOfPanel(db, panelId);
  const entry: LiveRead = { journeys, readAt: now };
  live.set(panelId, entry, now);
  journeys.then(
    (read) => {
      entry.settled = read;
    },
    () => {
      if (live.get(panelId) === entry) live.delete(panelId);
    },
  );
  return journeys;
}

/** The panel's live journeys as liveJourneys (without `recordedBy`) would answer them now, when that answer is already read; undefined otherwise (nothing is read). */
export function knownLiveJourneys(panelId: string): readonly Journey[] | undefined {
  return live.get(panelId)?.settled;
}

/** Running journeys of the panel whose trigger is of `type`. */
export async function runningJourneys(db: ShardDb, panelId: string, type: Journey["definition"]["trigger"]["type"]): Promise<Journey[]> {
  return (await liveJourneys(db, panelId)).filter((j) => j.status === "running" && j.definition.trigger.type === type);
}

/** A journey's status changed in this isolate: its panel's answer is read again. */
export function forgetLiveJourneys(panelId: string): void {
  live.delete(panelId);
}
