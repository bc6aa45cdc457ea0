import { panelHome } from "../access/shards";
import { contactDb, contactShard, panelShardPlaces, partitionOfContact, type MirrorShard } from "../access/partitions";
import { filterMatches } from "../../domain/filters";
import { contactsPage, type KeyedContact } from "../../store/contacts";
import { segmentMembersPage } from "../../store/segments";
import { getJourney, type Journey } from "../../store/journeys/definitions";
import type { ShardDb } from "../../store/shards";
import type { Panel } from "../../store/panels";
import { enterJourneys, entriesFor, type EngineEnv } from "./engine";
import type { ChangedContact, ContactReaction } from "../contacts/reactions";
import { restartSegmentScans, setRescanUpto, setScanCursor } from "../../store/journeys/scans";
import { enterListEntries, nudgeListEntries } from "./list-entries";
import { knownLiveJourneys, LIVE_JOURNEYS_CACHE_MS, runningJourneys } from "./live-journeys";

/**
 * Triggers on contact writes (CONTRACT 5): a contact added to a list enters the running
 * journeys of that list (list-entries.ts); a contact that matches a segment's filter enters its running
 * journeys, once per journey (entry key `segment:<contact>`), whether it matched when the
 * journey started (the entry scan) or came to match later (a contact write). On a panel
 * spread over partitions (decision 0038) both happen on the contact's shard: each shard scans
 * its own contacts with its copy of the journey, and a written contact enters there.
 */

/**
 * The journeys' reaction to contact writes (services/contacts/reactions.ts), after the
 * segments': a contact that joined a list or entered a segment enters their journeys; after
 * an import's rows, new list members' entries are taken up, and once its rows are all written
 * segment journeys look at every contact again (entering is once per contact); the contacts a
 * pipeline pass created enter the segment journeys whose filter they match, and the entries
 * of the saved segments they entered are taken up.
 */
export const journeysContactReaction: ContactReaction = {
  name: "journeys",
  async afterContact(env, { panelId, contact, joinedList, joinedSegment, now }) {
    await journeysAfterContactWrite(env, panelId, contact, joinedList || joinedSegment, now);
  },
  // A written contact enters only running journeys of a segment or a list (enterSegments, enterLists).
  idleAfter(panelId) {
    const journeys = knownLiveJourneys(panelId);
    return journeys !== undefined && !journeys.some((j) => j.status === "running" && (j.definition.trigger.type === "segment" || j.definition.trigger.type === "list"));
  },
  async afterContacts(env, { panelId, contacts, joinedList, joinedSegment, rewritten, now, at }) {
    if (joinedList || joinedSegment) await nudgeAllListEntries(env, panelId);
    if (rewritten) await restartAllSegmentScans(env, panelId, now);
    else if (contacts?.length) await enterSegments(env, panelId, contacts, now, at?.db);
  },
};

/** The filter of a segment journey of its own; undefined for a saved segment's journey, which enters through its membership. */
function segmentFilter(journey: Journey) {
  return journey.definition.trigger.type === "segment" ? journey.definition.trigger.filter : undefined;
}

/**
 * After a contact was written through the API (run after the answer, in waitUntil):
 * `joinedList` says it became a member of a list just now, whose entries (left by the
 * membership's trigger, list-entries.ts) it enters right away. Never throws: the contact
 * write stands, and a failure is logged. Entries not taken here (a write refused while a move
 * fences the panel, a busy database) go to the JOURNEYS queue, whose consumer retries until
 * the panel takes writes again; the cron re-drives them if that nudge is lost too. An entry
 * made but not continued is continued by the cron (timers.ts).
 */
async function journeysAfterContactWrite(env: EngineEnv, panelId: string, contact: ChangedContact, joinedList: boolean, now: number): Promise<void> {
  try {
    const { panel, db: home } = await panelHome(env, panelId);
    await Promise.all([enterSegments(env, panelId, [contact], now, contactDb(env, panel, home, contact.key)), joinedList ? enterLists(env, panelId, contact, now) : undefined]);
  } catch (error) {
    console.error(`journeys: entering contact ${contact.id} of panel ${panelId} after a write failed${joinedList ? "; its list entries go to the queue" : ""}`, error);
    if (joinedList) await nudgeAllListEntries(env, panelId).catch((lost) => console.error(`journeys: list entries of panel ${panelId} not queued; the cron takes them`, lost));
  }
}

/**
 * The memberships' triggers (of a list, of a saved segment) left entries only if a journey of
 * a list or of a saved segment runs; those a stale answer misses, the cron takes.
 */
async function enterLists(env: EngineEnv, panelId: string, contact: ChangedContact, now: number): Promise<void> {
  const { panel, db } = await panelHome(env, panelId);
  const [lists, segments] = await Promise.all([runningJourneys(db, panelId, "list"), runningJourneys(db, panelId, "segment")]);
  if (lists.length === 0 && !segments.some((j) => j.definition.trigger.type === "segment" && j.definition.trigger.segment !== undefined)) return;
  // The membership's trigger left the entries on the contact's partition's shard (decision 0038).
  const shard = panel.partitions.length ? partitionOfContact(env, panel, contact.key).shard : undefined;
  await enterListEntries(env, panelId, now, { contactId: contact.id, shard });
}

/**
 * List entries left by many memberships (an import's rows): a nudge for the home, and one per
 * other shard holding a partition of the panel, whose members' entries are there.
 */
async function nudgeAllListEntries(env: EngineEnv, panelId: string): Promise<void> {
  const { panel } = await panelHome(env, panelId);
  for (const place of panelShardPlaces(env, panel)) await nudgeListEntries(env, panelId, place.home ? undefined : place.shard);
}

/**
 * After an import's rows: the running segment journeys scan every contact again, on every shard
 * holding the panel's contacts (an import writes each row on its partition's).
 */
async function restartAllSegmentScans(env: EngineEnv, panelId: string, now: number): Promise<void> {
  const { panel } = await panelHome(env, panelId);
  for (const place of panelShardPlaces(env, panel)) await restartSegmentScans(place.db, panelId, now, place.home);
}

/**
 * The contacts, all on the shard `on` (absent: the home), enter there the running segment
 * journeys (of a filter of their own) they match, in one write. The journeys are the home's
 * cached answer; a partition's shard holds the same copies (mirror.ts).
 */
async function enterSegments(env: EngineEnv, panelId: string, contacts: readonly ChangedContact[], now: number, on?: ShardDb): Promise<void> {
  const home = await panelHome(env, panelId);
  const db = on ?? home.db;
  const segments = (await runningJourneys(home.db, panelId, "segment")).filter((j) => segmentFilter(j) !== undefined);
  if (segments.length === 0) return;
  const entries = contacts.flatMap((contact) =>
    segments.filter((j) => filterMatches(segmentFilter(j), contact.attributes)).flatMap((j) => entriesFor([j], contact, `segment:${contact.id}`, null)),
  );
  if (entries.length) await enterJourneys(env, db, entries, now);
}

/** Contacts looked at per scan step; the cron goes on from the cursor next minute. */
export const SEGMENT_SCAN_PAGE = 500;

/**
 * One page of a segment journey's entry scan on the shard `at` (absent: the panel's home), over
 * that shard's contacts, with its copy of the journey (`journey` as that shard has it); returns
 * whether the scan is complete.
 */
export async function scanSegment(env: EngineEnv, journey: Journey, now: number, at?: MirrorShard): Promise<boolean> {
  const { panel, db: home } = await panelHome(env, journey.panelId);
  const db = at?.db ?? home;
  const cursor = journey.scanCursor ?? 0;
  const { trigger } = journey.definition;
  const saved = trigger.type === "segment" ? trigger.segment : undefined;
  // A saved segment's journey enters its members as they are now; later entries come from the membership (migration 0030).
  const page = saved === undefined ? await contactsPage(db, journey.panelId, cursor, SEGMENT_SCAN_PAGE) : await segmentMembersPage(db, journey.panelId, saved, cursor, SEGMENT_SCAN_PAGE);
  await enterPage(env, db, panel, journey, page, now, at?.shard);
  const done = page.length < SEGMENT_SCAN_PAGE;
  // A saved segment's later entries come from its membership's trigger in D1, whatever an isolate knows: no rescan.
  const staleMs = saved === undefined ? LIVE_JOURNEYS_CACHE_MS : 0;
  await setScanCursor(db, journey.id, cursor, done ? null : page.at(-1)!.id, now, staleMs, at === undefined || at.shard === panel.shard);
  return done;
}

/** The contacts of a scan's page that are this shard's (`on`, absent: the home) and match enter the journey there, on `db` (once each: the entry key). */
async function enterPage(env: EngineEnv, db: ShardDb, panel: Panel, journey: Journey, page: readonly KeyedContact[], now: number, on?: number): Promise<void> {
  // A contact the map places on another shard is skipped: a split's moved contacts stay on its
  // source until the settle time is up (decision 0047), and their entries are the target's.
  const shard = on ?? panel.shard;
  const here = panel.partitions.length ? page.filter((c) => contactShard(panel, c.key) === shard) : page;
  const filter = segmentFilter(journey);
  const matching = filter === undefined ? here : here.filter((c) => filterMatches(filter, c.attributes));
  await enterJourneys(
    env,
    db,
    matching.flatMap((c) => entriesFor([journey], c, `segment:${c.id}`, null)),
    now,
  );
}

/**
 * One page of a finished entry scan's rescan on the shard `at` (absent: the home), from the top
 * of what the scan passed while isolates could still miss the journey (rescan_upto): those
 * contacts that match now enter (once each), so one such an isolate wrote to match after the
 * scan passed it is not left out.
 */
export async function rescanSegmentPage(env: EngineEnv, journey: Journey, upto: number, now: number, at?: MirrorShard): Promise<void> {
  const { panel, db: home } = await panelHome(env, journey.panelId);
  const db = at?.db ?? home;
  const page = await contactsPage(db, journey.panelId, upto, SEGMENT_SCAN_PAGE, true);
  await enterPage(env, db, panel, journey, page, now, at?.shard);
  const lowest = page.at(-1)?.id;
  await setRescanUpto(db, journey.id, upto, page.length < SEGMENT_SCAN_PAGE || lowest === undefined || lowest <= 1 ? null : lowest - 1);
}

/**
 * Starting a segment journey (running it, or a new version): its first page of matching
 * contacts enters now on the home and on each of `mirrors` whose copy has a scan going, the
 * rest by the cron on each shard (timers.ts). One read of the copy per mirror.
 */
export async function scanSegmentNow(env: EngineEnv, journey: Journey, mirrors: readonly MirrorShard[], now: number): Promise<void> {
  if (journey.definition.trigger.type !== "segment") return;
  if (journey.scanCursor !== null) await scanSegment(env, journey, now);
  for (const mirror of mirrors) {
    const copy = await getJourney(mirror.db, journey.panelId, journey.id);
    if (copy?.status === "running" && copy.scanCursor !== null) await scanSegment(env, copy, now, mirror);
  }
}
