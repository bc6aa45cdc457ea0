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
 * contact-triggers.ts).
 */
export const LIVE_JOURNEYS_CACHE_MS = 10_000;
const live = new TtlCache<Promise<Journey[]>>(LIVE_JOURNEYS_CACHE_MS, 1000);

export function liveJourneys(db: ShardDb, panelId: string): Promise<Journey[]> {
  const cached = live.get(panelId);
  if (cached) return cached;
  // The promise is cached, so concurrent calls share one read; a failed read is not kept.
  const read = liveJourneysOfPanel(db, panelId);
  live.set(panelId, read);
  read.catch(() => live.delete(panelId));
  return read;
}

/** Running journeys of the panel whose trigger is of `type`. */
export async function runningJourneys(db: ShardDb, panelId: string, type: Journey["definition"]["trigger"]["type"]): Promise<Journey[]> {
  return (await liveJourneys(db, panelId)).filter((j) => j.status === "running" && j.definition.trigger.type === type);
}

/** A journey's status changed in this isolate: its panel's answer is read again. */
export function forgetLiveJourneys(panelId: string): void {
  live.delete(panelId);
}
