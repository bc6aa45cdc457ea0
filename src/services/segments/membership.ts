import { panelDb, panelHome, shardTask } from "../access/shards";
import { namedPanelShard, panelShardPlaces } from "../access/partitions";
import { readsEvent } from "../../domain/segments";
import type { ShardDb } from "../../store/shards";
import { forgetBuiltMembersStatement } from "../../store/panel-counts";
import { PANEL_SEGMENTS_CACHE_MS, panelCatalog, panelSegments } from "./panel-segments";
import { compileSegment, compileSegments, type SegmentCatalog } from "../../store/segment-sql";
import {
  buildCursorStatement,
  checkedAtStatement,
  contactPageEnd,
  recheckCursorStatement,
  differingPairsStatement,
  refreshPairsStatements,
  refreshMembersStatements,
  segmentsToBuild,
  segmentsToRecheck,
  slidingSegmentsDue,
  type Segment,
  type SegmentPair,
} from "../../store/segments";

/**
 * Live membership of saved segments (CONTRACT 9): each change that can make a contact enter
 * or leave re-evaluates that contact against the segments the change concerns (the compiled
 * match, run for those contacts only); a new or edited segment is built in pages of contacts;
 * windows that slide are re-checked each minute for the contacts whose events (or dates)
 * crossed the window's edge since the last check. Entering and leaving are logged by the
 * membership's triggers, which also leave segment journeys their entries (migration 0030).
 *
 * A panel whose partitions are on several shards (decision 0038): each shard holds a mirror of
 * the segments (decision 0041) and its own contacts' memberships, and every check runs on the
 * shard of the contacts it checks, with the definitions and the catalog (attributes,
 * activities) of the home. A panel without a map runs everything on its home, as before.
 */

export type SegmentChange = "attributes" | "lists" | "events" | "sends";

/** Contacts of one build page: each page is two statements per segment, of a few probes per contact. */
export const BUILD_PAGE = 2_000;
/** Time one cron run spends on builds and on sliding windows, each. */
const CRON_BUDGET_MS = 20_000;

/** Segments to re-check, each for its own contacts. */
export interface Recheck {
  segment: Segment;
  contactIds: readonly number[];
}

/**
 * Brings the memberships that `changes` can affect up to date for the given contacts of the
 * panel; returns how many memberships began. `on`: the shard holding the contacts (their
 * partition's); without it, each shard of the panel checks them (one read each: ids are unique
 * across shards, so a shard not holding a contact finds nothing to change for it).
 */
export async function refreshContacts(env: Env, panelId: string, contactIds: readonly number[], changes: readonly SegmentChange[], now: number, on?: ShardDb): Promise<number> {
  const ids = [...new Set(contactIds)];
  if (ids.length === 0) return 0;
  const { panel, db: home } = await panelHome(env, panelId);
  const segments = (await panelSegments(home, panelId)).filter((s) => changes.some((change) => s.dependencies[change]));
  const work = segments.map((segment) => ({ segment, contactIds: ids }));
  const shards = on ? [on] : panelShardPlaces(env, panel).map((p) => p.db);
  // No segment reads the change (most panels, most writes): no shard has anything to re-check.
  if (work.length === 0) return 0;
  const entered = await Promise.all(shards.map((db) => recheckMembers(home, db, panelId, work, now)));
  return entered.reduce((sum, n) => sum + n, 0);
}

/**
 * After events were recorded: each contact is re-checked against the segments its events
 * concern (an activity or email event a condition reads), not against every segment that
 * reads events. `on`: the shard that stored the events, and so holds their contacts (the home
 * when absent). Returns how many memberships began.
 */
export async function refreshAfterEvents(
  env: Env,
  panelId: string,
  events: ReadonlyArray<{ contactId: number | null; channel: string; name: string }>,
  now: number,
  on?: ShardDb,
): Promise<number> {
  const home = await panelDb(env, panelId);
  return refreshForEvents(home, on ?? home, panelId, events, now);
}

/**
 * The same on shard `db` (the home's definitions and catalog from `home`), for events recorded
 * or archived there: behaviour conditions count the events in the shard only
 * (docs/api/segments.md), so when retention moves a contact's events to R2 its memberships are
 * re-checked as when events arrive, and the stored members stay equal to the count (a "did"
 * segment loses the contact, a "did not" one gains it).
 */
export async function refreshForEvents(
  home: ShardDb,
  db: ShardDb,
  panelId: string,
  events: ReadonlyArray<{ contactId: number | null; channel: string; name: string }>,
  now: number,
): Promise<number> {
  const segments = (await panelSegments(home, panelId)).filter((s) => s.dependencies.events);
  const work = segments.map((segment) => ({
    segment,
    contactIds: [...new Set(events.flatMap((e) => (e.contactId !== null && readsEvent(segment.match, e) ? [e.contactId] : [])))],
  }));
  return recheckMembers(home, db, panelId, work, now);
}

/** Compiled SQL one statement carries at most (D1 takes statements up to 100 KB). */
const STATEMENT_SQL_BUDGET = 50_000;

interface PairGroup {
  segments: Segment[];
  compiled: { wheres: string[]; values: string };
  pairs: SegmentPair[];
}

/**
 * The work in groups of segments whose compiled matches fit one statement, each with its
 * (segment, contact) pairs. Compiled once when all fit one statement (the common case); else
 * grouped by the size of each compiled match and compiled again per group.
 */
function pairGroups(work: readonly Recheck[], catalog: SegmentCatalog, now: number): PairGroup[] {
  const group = (part: readonly Recheck[], compiled = compileSegments(part.map((w) => w.segment.match), catalog, now, "probe")): PairGroup => ({
    segments: part.map((w) => w.segment),
    compiled,
    pairs: part.flatMap((w, i) => w.contactIds.map((id) => [i, id] as const)),
  });
  const whole = compileSegments(work.map((w) => w.segment.match), catalog, now, "probe");
  const sizes = whole.wheres.map((where) => where.length);
  if (sizes.reduce((sum, size) => sum + size, 0) <= STATEMENT_SQL_BUDGET) return [group(work, whole)];
  const parts: Recheck[][] = [];
  let size = Infinity;
  work.forEach((w, i) => {
    if (size + sizes[i]! > STATEMENT_SQL_BUDGET) {
      parts.push([]);
      size = 0;
    }
    parts.at(-1)!.push(w);
    size += sizes[i]!;
  });
  return parts.map((part) => group(part));
}

/**
 * Re-checks memberships in two rounds. First one read: which (segment, contact) pairs' match
 * differs from their membership (a statement per group of segments, each pair evaluated under
 * its own segment only); most changes change nothing, and then nothing is written. Then, for
 * those pairs only, the writes, which evaluate the match again under the segment's current
 * version (a change between the two rounds is seen, an edited segment is left to its build).
 * On shard `db`, with the catalog of the panel's `home` (its mirrors hold no activities).
 */
async function recheckMembers(home: ShardDb, db: ShardDb, panelId: string, recheck: readonly Recheck[], now: number): Promise<number> {
  const work = recheck.filter((w) => w.contactIds.length > 0);
  if (work.length === 0) return 0;
  const catalog = await panelCatalog(home, panelId, work.map((w) => w.segment.match));
  const groups = pairGroups(work, catalog, now);
  const reads = await db.batch<{ i: number; cid: number; matches: number }>(groups.map((g) => differingPairsStatement(db, panelId, g.segments, g.compiled, g.pairs)));
  const statements = groups.flatMap((group, k) => {
    const rows = reads[k]!.results;
    const pairsOf = (matches: number) => rows.filter((r) => r.matches === matches).map((r) => [r.i, r.cid] as const);
    const entering = pairsOf(1);
    return refreshPairsStatements(db, panelId, group.segments, group.compiled, entering, pairsOf(0), now).map((statement, j) => ({ statement, entering: j === 0 && entering.length > 0 }));
  });
  if (statements.length === 0) return 0;
  const results = await db.batch(statements.map((s) => s.statement));
  return results.reduce((sum, result, i) => sum + (statements[i]!.entering ? result.meta.changes : 0), 0);
}

/**
 * One page of a segment's build on shard `on` (the home when absent), over that shard's
 * contacts, from its own cursor (`segment` as that shard has it); returns the cursor the build
 * reached, null when it is complete.
 */
export async function buildSegmentPage(env: Env, segment: Segment, now: number, pageSize = BUILD_PAGE, on?: ShardDb): Promise<number | null> {
  const home = await panelDb(env, segment.panelId);
  const db = on ?? home;
  const from = segment.buildCursor ?? 0;
  const upto = await contactPageEnd(db, segment.panelId, from, pageSize);
  const compiled = compileSegment(segment.match, await panelCatalog(home, segment.panelId, [segment.match]), now, "probe");
  // The last page reaches past the last contact, so members whose contact is gone leave too.
  const scope = { afterId: from, uptoId: upto ?? Number.MAX_SAFE_INTEGER };
  await db.batch([
    ...refreshMembersStatements(db, segment, compiled, scope, now),
    buildCursorStatement(db, segment, from, upto, now, PANEL_SEGMENTS_CACHE_MS),
    ...(upto === null ? [checkedAtStatement(db, segment, now), forgetBuiltMembersStatement(db, segment.panelId, segment.id)] : []),
  ]);
  return upto;
}

/**
 * One page of a built segment's re-check on shard `on` (the home when absent), from the top of
 * what its build reached while isolates could still miss the version (recheck_upto): the
 * page's contacts are checked as a build page checks them, by now known to every isolate, so a
 * contact one of them wrote unchecked after the build passed it gets its membership. Returns
 * where the re-check goes on from, null when it is done.
 */
export async function recheckSegmentPage(env: Env, segment: Segment, upto: number, now: number, pageSize = BUILD_PAGE, on?: ShardDb): Promise<number | null> {
  const home = await panelDb(env, segment.panelId);
  const db = on ?? home;
  const start = await contactPageEnd(db, segment.panelId, upto, pageSize, true);
  const next = start === null || start <= 1 ? null : start - 1;
  const compiled = compileSegment(segment.match, await panelCatalog(home, segment.panelId, [segment.match]), now, "probe");
  // The page down to its first contact; the last one down to 0, so members whose contact is gone leave too.
  const scope = { afterId: next ?? 0, uptoId: upto };
  await db.batch([...refreshMembersStatements(db, segment, compiled, scope, now), recheckCursorStatement(db, segment, upto, next)]);
  return next;
}

/** Builds a segment on shard `on` (the home when absent) as far as `budgetMs` allows (after a create or an edit); the cron goes on from there. */
export async function buildSegment(env: Env, segment: Segment, now: number, budgetMs: number, on?: ShardDb): Promise<void> {
  const deadline = Date.now() + budgetMs;
  let cursor: number | null = segment.buildCursor ?? 0;
  while (cursor !== null && Date.now() < deadline) cursor = await buildSegmentPage(env, { ...segment, buildCursor: cursor }, now, BUILD_PAGE, on);
}

/**
 * Re-checks a segment whose windows slide on shard `on` (the home when absent), for the
 * contacts whose events or dates crossed a window's edge between its last check there and `now`.
 */
export async function slideSegment(env: Env, segment: Segment, now: number, on?: ShardDb): Promise<void> {
  const home = await panelDb(env, segment.panelId);
  const db = on ?? home;
  const compiled = compileSegment(segment.match, await panelCatalog(home, segment.panelId, [segment.match]), now, "probe", segment.checkedAt);
  const statements = compiled.candidates ? refreshMembersStatements(db, segment, compiled, { candidates: compiled.candidates }, now) : [];
  await db.batch([...statements, checkedAtStatement(db, segment, now)]);
}

/**
 * Cron: moves segment builds on, and re-checks sliding windows, within a time budget each; per
 * shard, each segment as this shard has it (a home's or a mirror's row, over this shard's contacts).
 */
export const segmentsCron = shardTask("segments", async (env, db, index, now) => {
  // The shard's row is built over the shard's contacts when it holds a partition of the panel;
  // otherwise (a panel without a map, a row left by a move) over the home's, as before maps.
  const on = async (segment: Segment) => namedPanelShard(env, (await panelHome(env, segment.panelId)).panel, index).db;
  const deadline = Date.now() + CRON_BUDGET_MS;
  for (const segment of await segmentsToBuild(db, 20)) {
    if (Date.now() > deadline) break;
    // The task's `now` is its tick's, and a queue may deliver it late: a segment saved since is
    // built from its save on, never over a window ending before it (which counts events gone by then).
    await buildSegment(env, segment, Math.max(now, segment.updatedAt), Math.max(0, deadline - Date.now()), await on(segment));
  }
  // Built segments whose build ran while some isolate did not know them yet: re-checked once all do.
  for (const segment of await segmentsToRecheck(db, now, PANEL_SEGMENTS_CACHE_MS, 20)) {
    const place = await on(segment);
    let upto: number | null = segment.recheckUpto;
    while (upto !== null && Date.now() < deadline) upto = await recheckSegmentPage(env, segment, upto, now, BUILD_PAGE, place);
  }
  const slideDeadline = Date.now() + CRON_BUDGET_MS;
  for (const segment of await slidingSegmentsDue(db, now - 30_000, 50)) {
    if (Date.now() > slideDeadline) break;
    await slideSegment(env, segment, now, await on(segment));
  }
});
