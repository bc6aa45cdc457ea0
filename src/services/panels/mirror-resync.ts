import { attributesToMirror, mirrorAttributesStatement, type MirroredAttribute } from "../../store/attributes";
import { liveListsToMirror, mirrorListsStatement, parkListNamesStatement, type MirroredList } from "../../store/lists";
import { getPanel, type Panel } from "../../store/panels";
import { deleteSegmentsStatements, listSegments, mirrorSegmentsStatements, type Segment } from "../../store/segments";
import { journeyStamps, journeysToMirror, mirrorJourneysStatements, stopInstancesStatements, type JourneyStamp } from "../../store/journeys/definitions";
import { nthMirroredPanelHomedOn } from "../../store/panel-partitions";
import { shardOf, type ShardDb } from "../../store/shards";
import { dropTopicsStatements, mirrorTopicsStatement, topicsToMirror, type MirroredTopic } from "../../store/topics";
import { mirrorShards, type MirrorShard } from "../access/partitions";
import { bucketRangesOn, type BucketRanges } from "../../domain/partitions";
import { shardTask } from "../access/shards";
import { deleteMirroredList } from "../lists/clear";

/**
 * A mirror's resync (decision 0041): the list, attribute and topic services write the home, then
 * each mirror, not atomically, so a mirror write that failed leaves that mirror behind (a list
 * missing, so its contacts there cannot join it; a stale name; a topic the home deleted). This
 * copies the home's configuration onto every mirror again, as setPartitionMap's copy does, without
 * dropping what the mirror's contacts name: each mirror takes the home's live lists, attributes,
 * topics and saved segments (upserts; member counters stay each shard's own; a segment whose
 * version the mirror already has keeps its build and count there, one the mirror holds at a newer
 * version, saved since the home was read, is left as it is), and loses the lists, topics and
 * segments the home no longer has (a list's members there cleared in the bounded steps of a list's
 * deletion; a topic with its opt-outs, a segment with its members, as deleting them did on the
 * home). Journeys (services/journeys/mirror.ts) whose copy lacks the home's version, status or
 * last change are copied again (their current version; an instance on the mirror walks only a
 * version its copy had), and one the home stopped ends its instances there as its stop does: a
 * stop whose copy failed left them active. A handful of reads and one batch per mirror, plus a
 * clear for each list removed.
 */

/** What one mirror was behind by, now repaired. */
export interface MirrorResync {
  shard: number;
  /** Home lists the mirror lacked or held with another name or description. */
  listsRepaired: number;
  /** Lists live on the mirror that the home deleted: deleted there too. */
  listsRemoved: number;
  attributesAdded: number;
  /** Home topics the mirror lacked or held with another name or description. */
  topicsRepaired: number;
  topicsRemoved: number;
  /** Home segments the mirror lacked or held at an older version. */
  segmentsRepaired: number;
  segmentsRemoved: number;
  /** Home journeys the mirror lacked or held at another version or status (those stopped end their instances there). */
  journeysRepaired: number;
}

interface Configuration {
  lists: MirroredList[];
  attributes: MirroredAttribute[];
  topics: MirroredTopic[];
  segments: Segment[];
  journeys: JourneyStamp[];
}

async function configurationOf(db: ShardDb, panelId: string): Promise<Configuration> {
  const [lists, attributes, topics, segments, journeys] = await Promise.all([
    liveListsToMirror(db, panelId),
    attributesToMirror(db, panelId),
    topicsToMirror(db, panelId),
    listSegments(db, panelId),
    journeyStamps(db, panelId),
  ]);
  return { lists, attributes, topics, segments, journeys };
}

/** Copies the panel's configuration from its home onto each of its mirrors; none for a panel without a map. */
export async function resyncMirrors(env: Env, panel: Pick<Panel, "id" | "shard" | "partitions">, now: number): Promise<MirrorResync[]> {
  const mirrors = mirrorShards(env, panel);
  if (mirrors.length === 0) return [];
  // The mirrors first, then the home: the home is written before its mirrors, so a list or topic
  // a mirror held that the home lacks when read after it is one the home deleted, never one made
  // meanwhile (list ids are not reused, services/lists/create.ts).
  const held = await Promise.all(mirrors.map((m) => configurationOf(m.db, panel.id)));
  const home = await configurationOf(shardOf(env, panel), panel.id);
  const done: MirrorResync[] = [];
  const homeDb = shardOf(env, panel);
  for (const [i, mirror] of mirrors.entries()) done.push(await resyncMirror(env, homeDb, mirror, bucketRangesOn(panel.partitions, mirror.shard), panel.id, home, held[i]!, now));
  return done;
}

const sameText = (a: { name: string; description: string }, b: { name: string; description: string } | undefined) => b !== undefined && a.name === b.name && a.description === b.description;

/** The home's journeys the mirror's copy is behind on (a copy from a later write than the home's read is not). */
function staleJourneys(home: readonly JourneyStamp[], held: readonly JourneyStamp[]): JourneyStamp[] {
  const copies = new Map(held.map((j) => [j.id, j]));
  return home.filter((j) => {
    const copy = copies.get(j.id);
    if (copy === undefined || copy.updatedAt < j.updatedAt) return true;
    return copy.updatedAt === j.updatedAt && (copy.version !== j.version || copy.status !== j.status);
  });
}

/**
 * `buckets`: the mirror's in the panel's map. Its writes of contacts' rows (a deleted topic's
 * opt-outs, a deleted segment's members, a stopped journey's instances) keep to them, so that a
 * split's source, from its switch until cleaning, holds on to its fenced copies of moved rows,
 * which cleaning deletes, instead of refusing the whole repair (decision 0047).
 */
async function resyncMirror(env: Env, homeDb: ShardDb, mirror: MirrorShard, buckets: BucketRanges, panelId: string, home: Configuration, held: Configuration, now: number): Promise<MirrorResync> {
  const homeLists = new Set(home.lists.map((l) => l.id));
  const homeTopics = new Set(home.topics.map((t) => t.id));
  const heldLists = new Map(held.lists.map((l) => [l.id, l]));
  const heldTopics = new Map(held.topics.map((t) => [t.id, t]));
  const heldAttributes = new Set(held.attributes.map((a) => a.name));
  const goneLists = held.lists.filter((l) => !homeLists.has(l.id));
  const goneTopics = held.topics.filter((t) => !homeTopics.has(t.id)).map((t) => t.id);
  const homeSegments = new Set(home.segments.map((s) => s.id));
  const heldSegmentVersions = new Map(held.segments.map((s) => [s.id, s.version]));
  // Only those the mirror held and the home lacks: one saved since the home was read is kept.
  const goneSegments = held.segments.filter((s) => !homeSegments.has(s.id)).map((s) => s.id);
  const journeys = staleJourneys(home.journeys, held.journeys);
  const journeyCopies = journeys.length ? await journeysToMirror(homeDb, panelId, journeys.map((j) => j.id)) : null;
  // Before the names are written: a deleted list's name may be a live one's now, and deletion frees it.
  for (const list of goneLists) await deleteMirroredList(env, mirror, panelId, list.id, now);
  const db = mirror.db;
  const writes = [
    ...(goneTopics.length ? dropTopicsStatements(db, panelId, goneTopics, buckets) : []),
    // Every name set afresh in one transaction: two lists that swapped names while the mirror missed it take theirs.
    ...(home.lists.length ? [parkListNamesStatement(db, panelId, home.lists.map((l) => l.id)), mirrorListsStatement(db, panelId, home.lists)] : []),
    ...(home.attributes.length ? [mirrorAttributesStatement(db, panelId, home.attributes)] : []),
    ...(home.topics.length ? [mirrorTopicsStatement(db, panelId, home.topics)] : []),
    ...(goneSegments.length ? deleteSegmentsStatements(db, panelId, { only: goneSegments }, buckets) : []),
    ...mirrorSegmentsStatements(db, panelId, home.segments, now),
    // After the lists and segments: a journey's trigger may name one.
    ...(journeyCopies ? mirrorJourneysStatements(db, panelId, journeyCopies) : []),
    ...journeys.filter((j) => j.status === "stopped").flatMap((j) => stopInstancesStatements(db, panelId, j.id, now, buckets)),
  ];
  if (writes.length) await db.batch(writes);
  return {
    shard: mirror.shard,
    listsRepaired: home.lists.filter((l) => !sameText(l, heldLists.get(l.id))).length,
    listsRemoved: goneLists.length,
    attributesAdded: home.attributes.filter((a) => !heldAttributes.has(a.name)).length,
    topicsRepaired: home.topics.filter((t) => !sameText(t, heldTopics.get(t.id))).length,
    topicsRemoved: goneTopics.length,
    segmentsRepaired: home.segments.filter((s) => (heldSegmentVersions.get(s.id) ?? -1) < s.version).length,
    segmentsRemoved: goneSegments.length,
    journeysRepaired: journeys.length,
  };
}

/**
 * The cron's share (mirrorResyncTask): one panel homed on shard `index` with mirrors a run, in
 * turn by the minute, so a mirror left behind is repaired within as many minutes as the shard
 * has such panels, at a few statements a run. Two control reads for a shard without them.
 */
export async function resyncMirrorsInTurn(env: Env, index: number, now: number): Promise<void> {
  const panelId = await nthMirroredPanelHomedOn(env.DB, index, Math.floor(now / 60_000));
  const panel = panelId === null ? null : await getPanel(env.DB, panelId);
  if (panel && panel.shard === index) await resyncMirrors(env, panel, now);
}

/** Per shard, every minute: resyncMirrorsInTurn. */
export const mirrorResyncTask = shardTask("partitions.mirror-resync", (env, _db, index, now) => resyncMirrorsInTurn(env, index, now));
