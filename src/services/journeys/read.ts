import { getJourney, listJourneys, type Journey } from "../../store/journeys/definitions";
import { journeyCounters, type JourneyCounters } from "../../store/journeys/instances";
import { listVersions, type JourneyVersion } from "../../store/journeys/versions";
import type { ShardDb } from "../../store/shards";

/** The panel's journeys, each with its counters. */
export async function journeysWithCounters(db: ShardDb, panelId: string): Promise<{ journey: Journey; counters: JourneyCounters }[]> {
  const journeys = await listJourneys(db, panelId);
  const counters = await Promise.all(journeys.map((j) => journeyCounters(db, panelId, j.id)));
  return journeys.map((journey, i) => ({ journey, counters: counters[i]! }));
}

/** A journey with its counters; null when the panel has no such journey. */
export async function journeyWithCounters(db: ShardDb, panelId: string, journeyId: string): Promise<{ journey: Journey; counters: JourneyCounters } | null> {
  const journey = await getJourney(db, panelId, journeyId);
  return journey ? { journey, counters: await journeyCounters(db, panelId, journey.id) } : null;
}

/** A journey's versions, newest first; null when the panel has no such journey. */
export async function versionsOfJourney(db: ShardDb, panelId: string, journeyId: string): Promise<JourneyVersion[] | null> {
  const journey = await getJourney(db, panelId, journeyId);
  return journey ? listVersions(db, panelId, journey.id) : null;
}
