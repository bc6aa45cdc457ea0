import { bucketRangesOn, contactBucket, inRanges, partitionMapProblem, partitionOfBucket, wholePanelPartition, type BucketRanges, type Partition } from "../../domain/partitions";
import { refusedField, succeeded, type Result } from "../../lib/problems";
import { getPanel, type Panel } from "../../store/panels";
import { setPanelPartitions } from "../../store/panel-partitions";
import { startStopCopyPass } from "../../store/stop-copy-passes";
import { allShards, shardByIndex, shardOf, type ShardDb } from "../../store/shards";
import { hasContacts } from "../../store/contacts";
import { copyStops } from "../../store/panel-move/stops";
import { deleteSegmentsStatements, listSegments, mirrorSegmentsStatements, type Segment } from "../../store/segments";
import { dropMirroredJourneysStatements, journeysToMirror, mirrorJourneysStatements } from "../../store/journeys/definitions";
import { dropMirroredListsStatement, liveListsToMirror, mirrorListsStatement, parkListNamesStatement, type MirroredList } from "../../store/lists";
import { attributesToMirror, dropMirroredAttributesStatement, mirrorAttributesStatement, type MirroredAttribute } from "../../store/attributes";
import { dropMirroredTopicsStatements, mirrorTopicsStatement, topicsToMirror, type MirroredTopic } from "../../store/topics";
import { forgetPanelHome, forgetPanelPlaces, panelHome, type PanelHome } from "./shards";

/**
 * Where a panel's contact-keyed data lives (decision 0038): its partitions, each a bucket
 * range on one shard. The map comes with the directory entry (Panel.partitions, read in the
 * same statement and kept in the same per-isolate caches), so answering costs no read. A panel
 * without a map (every panel made before it) is one partition: every bucket on its home shard.
 */

/** A partition of a panel with its shard's database. */
export interface PanelPartition extends Partition {
  db: ShardDb;
}

function withDb(env: Env, partition: Partition): PanelPartition {
  const db = shardByIndex(env, partition.shard);
  if (!db) throw new Error(`the partition map names shard ${partition.shard}, which has no binding`);
  return { ...partition, db };
}

/** Every partition of the panel, in bucket order. */
export function partitionsOf(env: Env, panel: Pick<Panel, "shard" | "partitions">): PanelPartition[] {
  const map = panel.partitions.length ? panel.partitions : wholePanelPartition(panel.shard);
  return map.map((p) => withDb(env, p));
}

/** The partition holding the contact whose key (primary-key value, or an anonymous uniqueid) is `key`. */
export function partitionOfContact(env: Env, panel: Pick<Panel, "id" | "shard" | "partitions">, key: string): PanelPartition {
  if (panel.partitions.length === 0) return withDb(env, wholePanelPartition(panel.shard)[0]!);
  return withDb(env, partitionOfBucket(panel.partitions, contactBucket(panel.id, key)));
}

type Placed = Pick<Panel, "id" | "shard" | "partitions">;

/** The number of the shard the map places the contact whose key is `key` on (the home, for a panel without a map). */
export function contactShard(panel: Placed, key: string): number {
  return panel.partitions.length ? partitionOfBucket(panel.partitions, contactBucket(panel.id, key)).shard : panel.shard;
}

/**
 * Whether some of the panel's contacts live on a shard other than its home: a campaign then
 * publishes and sends on each shard too (decision 0038 step 4).
 */
export function hasContactsBeyondHome(panel: PanelPlace): boolean {
  return panel.partitions.some((p) => p.shard !== panel.shard);
}

/** Where a panel's rows are: its home shard and its partition map (empty: all on the home). */
export interface PanelPlace {
  shard: number;
  partitions: readonly Partition[];
}

/** The distinct shard numbers holding the panel's partitions, in map order. */
function partitionShardNumbers(panel: PanelPlace): number[] {
  return panel.partitions.length ? [...new Set(panel.partitions.map((p) => p.shard))] : [panel.shard];
}

/** A shard holding some of a panel's contact-keyed data: its number and database. */
export interface PanelShard {
  shard: number;
  db: ShardDb;
  /** It is the panel's home (`panels.shard`), which also holds the panel's configuration. */
  home: boolean;
}

/**
 * Every shard that may hold the panel's contact-keyed rows, the home first (it holds what was
 * recorded before a map, and what a path not yet routed writes), then the other partitions'
 * shards, each with its number: what a sweep of one panel's rows (its event batches) reads
 * (panelShards, for reads that need the databases only). Just the home for a panel without a map.
 */
export function panelShardPlaces(env: Env, panel: PanelPlace): PanelShard[] {
  const others = partitionShardNumbers(panel).filter((shard) => shard !== panel.shard);
  return [panel.shard, ...others].map((shard, i) => ({ shard, db: shardOf(env, { shard }), home: i === 0 }));
}

/** A shard of the panel with the buckets its map gives it; null: every bucket (a panel without a map). */
export interface OwningShard {
  db: ShardDb;
  buckets: BucketRanges | null;
}

/**
 * The panel's shards (panelShards, `home` first), each with the buckets the map gives it: a read
 * that counts rows keeps to them, since between a split's switch and its cleaning the source
 * still holds copies of the moved rows (decision 0047), which the target owns.
 */
export function panelOwningShards(env: Env, panel: PanelPlace, home: ShardDb): OwningShards {
  const [first, ...rest] = panelShardPlaces(env, panel).map((place) => ({
    db: place.home ? home : place.db,
    buckets: panel.partitions.length ? bucketRangesOn(panel.partitions, place.shard) : null,
  }));
  return [first!, ...rest];
}

/** The panel's owning shards, the home first (panelOwningShards). */
export type OwningShards = readonly [OwningShard, ...OwningShard[]];

/** Shards whose every row counts (a read that does not yet keep to the map's buckets). */
export function wholeShards(shards: readonly [ShardDb, ...ShardDb[]]): OwningShards {
  const [home, ...rest] = shards;
  return [{ db: home, buckets: null }, ...rest.map((db) => ({ db, buckets: null }))];
}

/**
 * The shard a piece of the panel's work names (an event batch's nudge): `shard` when it holds
 * one of the panel's partitions, else the home. A shard the panel's map does not name (a nudge
 * sent before a panel moved whole, or none) means the home, as every nudge did before maps.
 */
export function namedPanelShard(env: Env, panel: PanelPlace, shard: number | undefined): PanelShard {
  if (shard === undefined || shard === panel.shard || !panel.partitions.some((p) => p.shard === shard)) return { shard: panel.shard, db: shardOf(env, panel), home: true };
  return { shard, db: shardOf(env, { shard }), home: false };
}

/**
 * The panel's directory entry for work naming `shard` (a send nudge, a page of unsent batches):
 * an entry cached before a split's switch does not name its target yet (decision 0047), so a
 * named shard it lacks has the directory read afresh, once.
 */
export async function panelHomeNaming(env: Env, panelId: string, shard: number | undefined): Promise<PanelHome> {
  const found = await panelHome(env, panelId);
  if (shard === undefined || shard === found.panel.shard || found.panel.partitions.some((p) => p.shard === shard)) return found;
  // Only this panel's entry: the isolate's other caches (every panel's) stay warm.
  forgetPanelHome(panelId);
  return await panelHome(env, panelId);
}

/**
 * The first of `shards` (in their order: panelShards gives the home first) on which `read` finds
 * something, with that shard: a row kept on its contact's shard looked up by what does not name
 * the contact (a tracking link, a provider's message id, an erasure's id). One read a shard until found.
 */
export async function firstOnShards<T>(shards: readonly ShardDb[], read: (db: ShardDb) => Promise<T | null | undefined>): Promise<{ db: ShardDb; found: T } | null> {
  for (const db of shards) {
    const found = await read(db);
    if (found) return { db, found };
  }
  return null;
}

/** A shard mirroring a panel's configuration: its number and database. */
export interface MirrorShard {
  shard: number;
  db: ShardDb;
}

/**
 * The shards that mirror the panel's configuration (decision 0041): those holding a partition,
 * other than the home, which keeps the configuration itself. None for a panel without a map.
 */
export function mirrorShards(env: Env, panel: Pick<Panel, "shard" | "partitions">): MirrorShard[] {
  return partitionShardNumbers(panel)
    .filter((shard) => shard !== panel.shard)
    .map((shard) => ({ shard, db: shardOf(env, { shard }) }));
}

/** The panel's shards, its home first. */
export type PanelShards = [ShardDb, ...ShardDb[]];

/**
 * The databases a read spanning the panel asks (decision 0038 step 3): the caller's `home`
 * first, then each mirror, one per shard however many of the panel's partitions it holds. A
 * panel without a map: `[home]`, so such a read runs exactly the statements it ran before.
 */
export function panelShards(env: Env, panel: Pick<Panel, "shard" | "partitions">, home: ShardDb): PanelShards {
  return [home, ...mirrorShards(env, panel).map((m) => m.db)];
}

/**
 * One page of a read spanning the panel: each shard's first `limit` rows past the cursor in
 * `order` (what `read` answers), merged, and the first `limit` of them, which are the panel's
 * first `limit` past it. A request so reads at most `limit` rows a shard, and a cursor in the
 * order's own terms pages on through every shard: a contact key lives in one partition only,
 * and ids are unique across shards (decision 0030). `shards` may also be reads' sources naming
 * their database (a shard with whose rows to read there).
 *
 * Rows are not de-duplicated: each caller's shards list only rows they own. Consent records,
 * journey messages, campaign recipients and a uniqueid's events keep to the buckets the map gives
 * each shard (a split's source's copies left out); a contact's history reads the contact's shard
 * and other shards for unjoined events of its uniqueids only. (The SMS stop list, whose stops are
 * copied to every shard, reads its own way: panelSmsSuppressions.)
 */
export async function mergedPage<T, S = ShardDb>(shards: readonly S[], read: (shard: S) => Promise<readonly T[]>, order: (a: T, b: T) => number, limit: number): Promise<T[]> {
  const pages = await Promise.all(shards.map(read));
  return pages.length === 1 ? [...pages[0]!] : pages.flat().sort(order).slice(0, limit);
}

/** How many times mergedContactPage reads on a shard whose rows it kept too few of, before it answers a short page. */
export const CONTACT_PAGE_READ_ONS = 4;

/**
 * A page of mergedContactPage: `rows` in order, and `readTo`, set when the reads stopped before
 * the page was whole: the row the reads reached, past which the next page reads (every row of
 * the panel up to it is in `rows`). Null when `rows` are the page's `limit`, or all there is.
 */
export interface ContactPage<T> {
  rows: T[];
  readTo: T | null;
}

/**
 * mergedPage of reads by contact (rows naming their contact's key) over the panel's owning shards,
 * each shard's rows kept to the buckets its map gives it: between a split's switch and its
 * cleaning the source still holds copies of the moved contacts' rows (decision 0047), as they
 * were at the switch, while the target's are the contact's. `read` answers a shard's first
 * `limit` rows past the request's cursor, or past `after` (the last row it answered there).
 *
 * A row left out usually stands for its contact's row on the target, within the target's page,
 * so one read a shard gives the panel's first `limit`. One whose contact's row went on the target
 * after the switch stands for nothing: past the last row read on a shard whose page was full,
 * the panel's rows are not known, so that shard reads on until the page is whole. Such rows can
 * be many (a segment's members re-checked on the target, its source's copies left as they were),
 * so a shard reads on at most CONTACT_PAGE_READ_ONS times: then the page is the rows known so
 * far, short, with `readTo` for the next page to go on from (never skipping or repeating a row).
 */
export async function mergedContactPage<T extends { key: string }>(
  panelId: string,
  shards: readonly OwningShard[],
  read: (db: ShardDb, after: T | undefined) => Promise<readonly T[]>,
  order: (a: T, b: T) => number,
  limit: number,
): Promise<ContactPage<T>> {
  if (shards.length === 1 && shards[0]!.buckets === null) return { rows: [...(await read(shards[0]!.db, undefined))], readTo: null };
  const states = shards.map((shard) => ({ shard, kept: [] as T[], last: undefined as T | undefined, ended: false }));
  const readOn = async (state: (typeof states)[number]) => {
    const page = await read(state.shard.db, state.last);
    const { buckets } = state.shard;
    state.kept.push(...(buckets ? page.filter((row) => inRanges(buckets, contactBucket(panelId, row.key))) : page));
    state.last = page[page.length - 1] ?? state.last;
    state.ended = page.length < limit;
  };
  await Promise.all(states.map(readOn));
  for (let readOns = 0; ; readOns++) {
    // The first row no shard has read past: rows beyond it may lie unread on that shard.
    const open = states.filter((state) => !state.ended);
    const horizon = open.reduce<T | undefined>((min, state) => (min === undefined || order(state.last!, min) < 0 ? state.last : min), undefined);
    const known = states
      .flatMap((state) => state.kept)
      .filter((row) => horizon === undefined || order(row, horizon) <= 0)
      .sort(order);
    if (known.length >= limit || horizon === undefined) return { rows: known.slice(0, limit), readTo: null };
    if (readOns === CONTACT_PAGE_READ_ONS) return { rows: known, readTo: horizon };
    await Promise.all(open.filter((state) => order(state.last!, horizon) === 0).map(readOn));
  }
}

/**
 * A ContactPage asked for one row more than the `limit` shown (to know whether more follow):
 * the rows shown, and the row the next page goes on after, null on the last page.
 */
export function shownContactPage<T>(page: ContactPage<T>, limit: number): { shown: T[]; nextAfter: T | null } {
  const shown = page.rows.slice(0, limit);
  return { shown, nextAfter: page.rows.length > limit ? shown[shown.length - 1]! : page.readTo };
}

/**
 * A read by contact or event ids asked of each of the panel's shards, the answers merged: each
 * id lives on one shard only (decision 0030), so an answer is found where its row is.
 */
export async function mergedMap<K, V>(shards: readonly ShardDb[], read: (db: ShardDb) => Promise<Map<K, V>>): Promise<Map<K, V>> {
  const maps = await Promise.all(shards.map(read));
  return maps.length === 1 ? maps[0]! : new Map(maps.flatMap((m) => [...m]));
}

/** The database holding the contact `key` (its partition's): the caller's `home` for a panel without a map. */
export function contactDb(env: Env, panel: Placed, home: ShardDb, key: string): ShardDb {
  return panel.partitions.length ? partitionOfContact(env, panel, key).db : home;
}

/** Where a write by contact key goes (contactPlace). */
export interface ContactPlace {
  db: ShardDb;
  configElsewhere: ShardDb[];
}

/**
 * Where a write by contact key goes: the key's partition's database, and the other shards that
 * hold the panel's configuration (home and mirrors), which get the attributes the write creates.
 * A panel without a map: its home database (the caller's `home`, unchanged) and no other.
 */
export function contactPlace(env: Env, panel: Placed, home: ShardDb, key: string | null): ContactPlace {
  if (panel.partitions.length === 0) return { db: home, configElsewhere: [] };
  // A key that does not read: the service refuses the call before it writes.
  if (key === null) return { db: home, configElsewhere: mirrorShards(env, panel).map((m) => m.db) };
  const partition = partitionOfContact(env, panel, key);
  return { db: partition.db, configElsewhere: shardsBesides(panel, partition.shard).map((shard) => shardOf(env, { shard })) };
}

/** The panel's shards (its partitions' and its home) other than `shard`, each once. */
function shardsBesides(panel: PanelPlace, shard: number): number[] {
  return partitionShardNumbers(panel).concat(panel.shard).filter((s, i, all) => s !== shard && all.indexOf(s) === i);
}

/** contactPlace with each shard's buckets in the panel's map (contactOwningPlace). */
export interface ContactOwningPlace {
  db: OwningShard;
  elsewhere: OwningShard[];
}

/**
 * contactPlace for a write made on every shard of the panel for one contact (its erasure), each
 * shard with the buckets its map gives it (panelOwningShards): between a split's switch and its
 * cleaning, the source's fenced copies of moved rows are left to cleaning (fencedCopyHere).
 */
export function contactOwningPlace(env: Env, panel: Placed, home: ShardDb, key: string): ContactOwningPlace {
  if (panel.partitions.length === 0) return { db: { db: home, buckets: null }, elsewhere: [] };
  const partition = partitionOfContact(env, panel, key);
  const owning = (shard: number, db: ShardDb): OwningShard => ({ db, buckets: bucketRangesOn(panel.partitions, shard) });
  return { db: owning(partition.shard, partition.db), elsewhere: shardsBesides(panel, partition.shard).map((shard) => owning(shard, shardOf(env, { shard }))) };
}

/** Items written on one shard other than the home (splitByShard). */
export interface ShardPart<T> {
  shard: number;
  db: ShardDb;
  items: T[];
}

/**
 * Items of contacts (an import chunk's rows) split by the shard of their contact's partition,
 * from each item's bucket: those of the home, and one part per other shard (two partitions on
 * one shard make one part). A panel whose partitions are all on its home (every panel without a
 * map) gets its items back as they are, with no look at them.
 */
export function splitByShard<T>(env: Env, panel: PanelPlace, items: readonly T[], bucketOf: (item: T) => number): { home: readonly T[]; elsewhere: ShardPart<T>[] } {
  if (!hasContactsBeyondHome(panel)) return { home: items, elsewhere: [] };
  const home: T[] = [];
  const byShard = new Map<number, T[]>();
  for (const item of items) {
    const shard = partitionOfBucket(panel.partitions, bucketOf(item)).shard;
    if (shard === panel.shard) home.push(item);
    else {
      const part = byShard.get(shard);
      if (part) part.push(item);
      else byShard.set(shard, [item]);
    }
  }
  return { home, elsewhere: [...byShard].map(([shard, part]) => ({ shard, db: shardOf(env, { shard }), items: part })) };
}

/**
 * A list changed on the home (made, renamed): the same row on every mirror, one statement each,
 * in the service call that changed it.
 */
export async function mirrorLists(mirrors: readonly MirrorShard[], panelId: string, lists: readonly MirroredList[]): Promise<void> {
  if (lists.length === 0) return;
  await Promise.all(mirrors.map((m) => mirrorListsStatement(m.db, panelId, lists).run()));
}

/** Attributes defined on one of the panel's shards: the same on `shards` (home and mirrors). */
export async function mirrorAttributes(shards: readonly ShardDb[], panelId: string, attributes: readonly MirroredAttribute[]): Promise<void> {
  if (attributes.length === 0) return;
  await Promise.all(shards.map((db) => mirrorAttributesStatement(db, panelId, attributes).run()));
}

/** A topic made or renamed on the home: the same row on every mirror, one statement each. */
export async function mirrorTopics(mirrors: readonly MirrorShard[], panelId: string, topics: readonly MirroredTopic[]): Promise<void> {
  if (topics.length === 0) return;
  await Promise.all(mirrors.map((m) => mirrorTopicsStatement(m.db, panelId, topics).run()));
}

/**
 * A segment saved on the home (made, edited): the same row on every mirror, in the service call
 * that saved it; each mirror then builds it over its own contacts (decision 0038's Status).
 */
export async function mirrorSegments(mirrors: readonly MirrorShard[], panelId: string, segments: readonly Segment[], now: number): Promise<void> {
  if (segments.length === 0) return;
  await Promise.all(mirrors.map((m) => m.db.batch(mirrorSegmentsStatements(m.db, panelId, segments, now))));
}

/**
 * Statements writing the home's live lists, attributes, topics, saved segments and journeys
 * (their rows and versions) into `target`'s mirror (upserts), after dropping the mirror's topics
 * and segments the home no longer has, with their opt-outs and members (as deleting them did on
 * the home; a list's row instead waits for that shard's clear).
 */
async function mirrorStatements(home: ShardDb, target: ShardDb, panelId: string): Promise<D1PreparedStatement[]> {
  const [lists, attributes, topics, segments, journeys] = await Promise.all([
    liveListsToMirror(home, panelId),
    attributesToMirror(home, panelId),
    topicsToMirror(home, panelId),
    listSegments(home, panelId),
    journeysToMirror(home, panelId),
  ]);
  return [
    ...dropMirroredTopicsStatements(target, panelId, topics.map((t) => t.id)),
    ...deleteSegmentsStatements(target, panelId, { except: segments.map((s) => s.id) }),
    // Names parked first: a refresh finds the rows copied before, which may hold names the home has swapped since.
    ...(lists.length ? [parkListNamesStatement(target, panelId, lists.map((l) => l.id)), mirrorListsStatement(target, panelId, lists)] : []),
    ...(attributes.length ? [mirrorAttributesStatement(target, panelId, attributes)] : []),
    ...(topics.length ? [mirrorTopicsStatement(target, panelId, topics)] : []),
    ...mirrorSegmentsStatements(target, panelId, segments, Date.now()),
    // After the lists and segments: a journey's trigger may name one.
    ...mirrorJourneysStatements(target, panelId, journeys),
  ];
}

/** Makes `target`'s mirror of the panel's configuration the home's, afresh (the panel has no contacts there). */
export async function copyConfiguration(home: ShardDb, target: ShardDb, panelId: string): Promise<void> {
  await target.batch([
    dropMirroredListsStatement(target, panelId),
    dropMirroredAttributesStatement(target, panelId),
    ...deleteSegmentsStatements(target, panelId, { except: [] }),
    ...(await mirrorStatements(home, target, panelId)),
  ]);
}

/**
 * Brings `target`'s mirror up to the home's without dropping what contacts there may name (its
 * lists and attributes): lists made or renamed, attributes defined and topics made, renamed or
 * deleted (with their opt-outs there) since it was copied.
 * A partition split (decision 0047) runs it before it applies changes: the map names the split's
 * target, and so mirrorLists and mirrorAttributes reach it, only from the switch.
 */
export async function refreshConfiguration(home: ShardDb, target: ShardDb, panelId: string): Promise<void> {
  await target.batch(await mirrorStatements(home, target, panelId));
}

/** Drops a mirror the new map no longer uses (it holds no contacts of the panel). */
export async function dropConfiguration(target: ShardDb, panelId: string): Promise<void> {
  await target.batch([
    dropMirroredListsStatement(target, panelId),
    dropMirroredAttributesStatement(target, panelId),
    ...dropMirroredTopicsStatements(target, panelId),
    ...dropMirroredJourneysStatements(target, panelId),
    ...deleteSegmentsStatements(target, panelId, { except: [] }),
  ]);
}

/**
 * How long after a map change (a new map, a split's switch) the panel's pass copying stops its
 * shards lack is due (services/panels/stop-copies.ts, decision 0061): past every isolate's cached
 * directory entry (CALLER_CACHE_MS) and the longest invocation that may still hold the old map (a
 * queue consumer's 15 minutes), so a stop such a writer copied to the old map's shards only is
 * copied to the new one's.
 */
export const STOP_COPIES_AFTER_MAP_MS = 16 * 60_000;

/** Starts the panel's pass of stop copies afresh, due STOP_COPIES_AFTER_MAP_MS after `now`. */
export async function scheduleStopCopies(env: Env, panelId: string, now: number): Promise<void> {
  await startStopCopyPass(env.DB, panelId, now + STOP_COPIES_AFTER_MAP_MS, now);
}

/** Stops read from the home a page when a new map places partitions on another shard. */
const STOP_COPY_PAGE_ROWS = 500;

/**
 * Gives a panel a new partition map (an operator's layout of a panel across shards, before it
 * holds contacts: moving rows between partitions is the split of decision 0038 step 5, not
 * built). Refuses a map that does not cover every bucket once or names a shard the deployment
 * does not bind. An empty map makes the panel one partition on its home shard again.
 */
export async function setPartitionMap(env: Env, panelId: string, partitions: readonly Partition[]): Promise<Result<Panel>> {
  const shards = allShards(env).length;
  if (partitions.length) {
    const problem = partitionMapProblem(partitions);
    if (problem) return refusedField("invalid", "partitions", problem);
    const unbound = partitions.find((p) => shardByIndex(env, p.shard) === null);
    if (unbound) return refusedField("invalid", "partitions", `this deployment has no shard ${unbound.shard} (shards 0 to ${shards - 1})`);
  }
  const panel = await getPanel(env.DB, panelId);
  if (!panel) return refusedField("not_found", "panel", `no panel with id "${panelId}"`);
  const before = partitionShardNumbers(panel);
  const after = partitionShardNumbers({ shard: panel.shard, partitions: [...partitions] });
  const involved = [...new Set([panel.shard, ...before, ...after])];
  // Moving contacts between partitions is the split (0038 step 5), not built: a panel holding
  // contacts anywhere keeps its map.
  const holding = await Promise.all(involved.map((shard) => hasContacts(shardOf(env, { shard }), panelId)));
  if (holding.some(Boolean)) return refusedField("conflict", "partitions", "the panel holds contacts: its map changes only by a split, which is not built (decision 0038 step 5)");
  // Saved segments and journeys are mirrored with the rest of the configuration below; a live
  // segment journey's copy starts its own entry scan on its shard (mirrorJourneysStatements).
  const home = shardOf(env, panel);
  // Mirrors first (decision 0041), so that once the map is read every partition has the configuration its rows name.
  for (const shard of after) if (shard !== panel.shard) await copyConfiguration(home, shardOf(env, { shard }), panelId);
  await setPanelPartitions(env.DB, panelId, partitions);
  // A panel's stops outlive its contacts: every send of a contact off the home reads the home's
  // too, and so must that shard's segment conditions (decision 0038, "Stops by address"), and its
  // SMS sends, which read their own shard alone. Copied after the map is set, so a stop the home
  // records meanwhile is either copied here or written there by its writer (home-stop-copies.ts).
  // Paged; the panel holds no contacts, so rarely more than a few pages.
  for (const shard of after) if (shard !== panel.shard && !before.includes(shard)) await copyStops(home, shardOf(env, { shard }), panelId, STOP_COPY_PAGE_ROWS);
  for (const shard of before) if (shard !== panel.shard && !after.includes(shard)) await dropConfiguration(shardOf(env, { shard }), panelId);
  // A writer still holding the old map copies a stop to its shards only: a later pass copies it.
  if (after.some((shard) => shard !== panel.shard)) await scheduleStopCopies(env, panelId, Date.now());
  // This isolate's cached directory entries carry the old map; others see the new one within their cache time.
  forgetPanelPlaces();
  return succeeded((await getPanel(env.DB, panelId))!);
}
