import { filterMatches } from "../domain/filters";
import type { AttributeValue } from "../domain/attributes";
import { contactsPage, runningJourneysByTrigger, setScanCursor, type Journey } from "../store/journeys";
import { enterJourneys, entriesFor, type EngineEnv } from "./engine";

/**
 * List and segment triggers (CONTRACT 5): a contact added to a list enters the running
 * journeys of that list; a contact that matches a segment's filter enters its running
 * journeys, once per journey (entry key `segment:<contact>`), whether it matched when the
 * journey started (the entry scan) or came to match later (a contact write).
 */

export interface ChangedContact {
  id: number;
  key: string;
  attributes: Record<string, AttributeValue>;
}

function segmentFilter(journey: Journey) {
  return journey.definition.trigger.type === "segment" ? journey.definition.trigger.filter : [];
}

/**
 * After a contact was written through the API (run after the answer, in waitUntil):
 * `joinedList` is the list it became a member of just now, if any. Enters it where it
 * belongs. Never throws: the contact write stands; an entry made but not continued is taken
 * up by the cron (timers.ts), and a failure before the entry is logged.
 */
export async function journeysAfterContactWrite(env: EngineEnv, panelId: string, contact: ChangedContact, joinedList: number | null, now: number): Promise<number> {
  try {
    return await enterAfterContactWrite(env, panelId, contact, joinedList, now);
  } catch (error) {
    console.error(`journeys: entering contact ${contact.id} of panel ${panelId} after a write failed`, error);
    return 0;
  }
}

async function enterAfterContactWrite(env: EngineEnv, panelId: string, contact: ChangedContact, joinedList: number | null, now: number): Promise<number> {
  const [segments, lists] = await Promise.all([
    runningJourneysByTrigger(env.DB, panelId, "segment"),
    joinedList === null ? Promise.resolve([]) : runningJourneysByTrigger(env.DB, panelId, "list", [String(joinedList)]),
  ]);
  const matching = segments.filter((j) => filterMatches(segmentFilter(j), contact.attributes));
  const entries = [
    ...matching.flatMap((j) => entriesFor([j], contact, `segment:${contact.id}`, null)),
    ...entriesFor(lists, contact, `list:${joinedList}:${contact.id}:${now}`, null),
  ];
  return enterJourneys(env, entries, now);
}

/** Contacts looked at per scan step; the cron goes on from the cursor next minute. */
export const SEGMENT_SCAN_PAGE = 500;

/** One page of a segment journey's entry scan; returns whether the scan is complete. */
export async function scanSegment(env: EngineEnv, journey: Journey, now: number): Promise<boolean> {
  const cursor = journey.scanCursor ?? 0;
  const page = await contactsPage(env.DB, journey.panelId, cursor, SEGMENT_SCAN_PAGE);
  const matching = page.filter((c) => filterMatches(segmentFilter(journey), c.attributes));
  await enterJourneys(
    env,
    matching.flatMap((c) => entriesFor([journey], c, `segment:${c.id}`, null)),
    now,
  );
  const done = page.length < SEGMENT_SCAN_PAGE;
  await setScanCursor(env.DB, journey.id, done ? null : page.at(-1)!.id, now);
  return done;
}
