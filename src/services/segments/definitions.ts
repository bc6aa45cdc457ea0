import { panelHome } from "../access/shards";
import { mirrorSegments, mirrorShards, panelOwningShards, panelShardPlaces, type OwningShard, type OwningShards } from "../access/partitions";
import { refused, succeeded, type Result } from "../../lib/problems";
import { dependenciesOf, type SegmentDefinition, type SegmentNode } from "../../domain/segments";
import { newId } from "../../lib/random";
import { compileSegment } from "../../store/segment-sql";
import { countMatchingInSample, getSegment, insertSegment, loadSegmentCatalog, updateSegment, type Segment } from "../../store/segments";
import type { CompiledSegment } from "../../store/segment-sql";
import { COUNT_REQUEST_CAP } from "../../domain/overview";
import { contactsFigure } from "../overview/counts";
import { recordAudit, type Auditor } from "../audit/record";
import { checkSegmentMatch } from "./check";
import { buildSegment } from "./membership";
import { forgetPanelSegments } from "./panel-segments";

/** Time a create or an edit spends building membership after answering; the cron goes on from there. */
const BUILD_AFTER_SAVE_MS = 20_000;

/** Who matches now: exact for a panel of fewer contacts than COUNT_REQUEST_CAP; else `estimated` from the first of them. */
export interface MatchCount {
  n: number;
  estimated: boolean;
}

export type SegmentOutcome = Result<{ segment: Segment; count: MatchCount }>;

/**
 * Counts in a request read at most COUNT_REQUEST_CAP contacts (issue 42: never a COUNT over the
 * panel): below it the count is exact; past it the share that matched in a sample of that many
 * (spread over the panel's ids), times the panel's contacts as last counted
 * (services/overview/counts.ts), rounded: an estimate.
 * `shards` are the panel's (panelOwningShards, the home first; decision 0038 step 6): each counts
 * its own contacts so, those of the buckets the map gives it (a split's source keeps copies of
 * the moved ones until cleaning, decision 0047), one bounded read each, and the counts are
 * summed; estimated when any is.
 */
async function boundedCount(shards: readonly OwningShard[], panelId: string, compiled: CompiledSegment, now: number, cap = COUNT_REQUEST_CAP): Promise<MatchCount> {
  const counts = await Promise.all(
    shards.map(async ({ db, buckets }): Promise<MatchCount> => {
      const { examined, hits, exact } = await countMatchingInSample(db, panelId, compiled, cap, buckets);
      if (exact) return { n: hits, estimated: false };
      const contacts = await contactsFigure(db, panelId, now, undefined, buckets);
      return { n: examined ? Math.round((hits / examined) * contacts.n) : 0, estimated: true };
    }),
  );
  return { n: counts.reduce((sum, c) => sum + c.n, 0), estimated: counts.some((c) => c.estimated) };
}

/**
 * How many of the panel's contacts match `match` now (a preview, or a saved segment's count),
 * bounded (boundedCount); `shards` as there, the home's configuration checking the match.
 */
export async function countSegment(shards: OwningShards, panelId: string, match: SegmentNode, now = Date.now(), cap = COUNT_REQUEST_CAP): Promise<Result<MatchCount>> {
  const home = shards[0].db;
  const catalog = await loadSegmentCatalog(home, panelId);
  const checked = await checkSegmentMatch(home, panelId, catalog, match);
  if (!checked.ok) return refused("invalid", checked.problems);
  return succeeded(await boundedCount(shards, panelId, compileSegment(checked.match, catalog, now, "probe"), now, cap));
}

/**
 * A saved segment's count now, as its build reads its definition: unchecked, since what it names
 * may have gone since it was saved (a list deleted through the API, a draft campaign deleted),
 * and a condition on what is gone matches as its build makes it (`in` a deleted list: no one).
 */
export async function countSavedSegment(shards: OwningShards, panelId: string, match: SegmentNode, now = Date.now(), cap = COUNT_REQUEST_CAP): Promise<MatchCount> {
  const catalog = await loadSegmentCatalog(shards[0].db, panelId);
  return boundedCount(shards, panelId, compileSegment(match, catalog, now, "probe"), now, cap);
}

/** The segments services' refusal for a segment the panel does not have. */
export const noSuchSegment = (segmentId: string) => refused("not_found", [], `No segment with id "${segmentId}" in this panel`);

/**
 * Creates a segment (no `id`) or replaces one's definition, then counts it; its membership is
 * built after the answer (`defer`), page by page, and by the cron past the time given to it.
 * The definition is the home's; a panel whose partitions reach other shards gets it mirrored on
 * each in the same call (decision 0041), and each shard builds its own contacts' membership.
 */
export async function saveSegment(
  env: Env,
  panelId: string,
  definition: SegmentDefinition,
  options: { id?: string; now: number; defer: (work: Promise<unknown>) => void; by: Auditor },
): Promise<SegmentOutcome> {
  const { panel, db } = await panelHome(env, panelId);
  if (options.id !== undefined && !(await getSegment(db, panelId, options.id))) return noSuchSegment(options.id);
  const catalog = await loadSegmentCatalog(db, panelId);
  const checked = await checkSegmentMatch(db, panelId, catalog, definition.match);
  if (!checked.ok) return refused("invalid", checked.problems);
  const change = { name: definition.name, match: checked.match, dependencies: dependenciesOf(checked.match) };
  const segment =
    options.id === undefined
      ? await insertSegment(db, { id: newId("seg"), panelId, ...change }, options.now)
      : await updateSegment(db, panelId, options.id, change, options.now);
  forgetPanelSegments(panelId);
  if (!segment) return noSuchSegment(String(options.id));
  await mirrorSegments(mirrorShards(env, panel), panelId, [segment], options.now);
  const count = await boundedCount(panelOwningShards(env, panel, db), panelId, compileSegment(segment.match, catalog, options.now, "probe"), options.now);
  for (const place of panelShardPlaces(env, panel)) {
    options.defer(
      buildSegment(env, segment, options.now, BUILD_AFTER_SAVE_MS, place.db).catch((error: unknown) =>
        console.error(`segments: building ${segment.id} on shard ${place.shard} failed; the cron goes on with it`, error),
      ),
    );
  }
  await recordAudit(db, panelId, options.by, options.id === undefined ? "segment.created" : "segment.edited", segment.id, { name: segment.name });
  return succeeded({ segment, count });
}
