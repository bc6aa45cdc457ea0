import { refused, succeeded, type Result } from "../../lib/problems";
import type { CampaignAudience } from "../../store/campaigns/definitions";
import { countMatchingUpTo } from "../../store/segments";
import { panelContactsFigure, panelMemberFigures } from "../overview/counts";
import type { OwningShards } from "../access/partitions";
import { summedMemberCounts } from "../lists/counts";
import { audienceProblems, compileAudience } from "./audience";
import { distinctSuppressions } from "./distinct-suppressions";

/**
 * How many contacts an audience reaches before it is scheduled (issue 43, item 2): counted
 * exactly, with the very condition publishing resolves (compileAudience), up to `exactUpTo`
 * matches; the scan stops at that match, so a big audience costs at most that many. Past it,
 * an estimate from stored figures: the lists' member counters (shard migration 0061) and the
 * segments' stored counts (0062), less the exclusions and the panel's suppressed addresses
 * (each once, however many shards hold it), never below the cap the exact count reached nor above the panel's contacts.
 */
export const AUDIENCE_ESTIMATE = {
  /** Below this many the figure is exact. */
  exactUpTo: 100_000,
  /**
   * When the lists and segments included hold at most this many (by their stored counts), the
   * count reads only their members; past it, the panel's contacts in order until the cap.
   */
  readMembersUpTo: 250_000,
  /** Suppressed addresses counted for the estimate, on each shard (the count is bounded; more reads as this many). */
  suppressionsUpTo: 1_000_000,
  /**
   * On a panel over several shards, each shard past the home compares up to this many of its
   * stopped addresses with the shards before it, so an address stopped on several counts once
   * (distinct-suppressions.ts); past it, the overlap is extrapolated.
   */
  suppressionsComparedUpTo: 10_000,
};

export type AudienceEstimateTuning = typeof AUDIENCE_ESTIMATE;

export interface AudienceEstimate {
  count: number;
  exact: boolean;
  /** When the oldest figure the count rests on was counted (now for an exact count). */
  countedAt: number;
  exactUpTo: number;
}

const sum = (ns: number[]) => ns.reduce((a, b) => a + b, 0);

/**
 * `shards`: the home first (the audience's lists and segments, the compiled condition), then the
 * other shards holding the panel's partitions, each with the buckets the map gives it
 * (panelOwningShards, decision 0038): the exact count and every figure are summed over them,
 * each read bounded as on one shard and kept to its shard's buckets (a split's source still
 * holds copies of the moved contacts until cleaning, decision 0047).
 */
export async function estimateAudience(
  shards: OwningShards,
  panelId: string,
  audience: CampaignAudience,
  now: number,
  tuning: AudienceEstimateTuning = AUDIENCE_ESTIMATE,
): Promise<Result<AudienceEstimate>> {
  const db = shards[0].db;
  const dbs = shards.map((shard) => shard.db);
  const problems = await audienceProblems(db, panelId, audience);
  if (problems.length) return refused("invalid", problems);
  const cap = tuning.exactUpTo;
  // The lists' counters leave a split's moved members to their target from the switch (decision 0047).
  const [lists, segments, compiled] = await Promise.all([
    summedMemberCounts(dbs, panelId, [...audience.lists, ...audience.exclude_lists]),
    panelMemberFigures(shards, panelId, [...audience.segments, ...audience.exclude_segments], now),
    compileAudience(db, panelId, audience, now, "probe"),
  ]);
  let countedAt = now;
  const segmentSize = (id: string) => {
    const figure = segments.get(id)!;
    countedAt = Math.min(countedAt, figure.countedAt);
    return figure.n;
  };
  // Overlaps between the included lists and segments are not known: their sum is an upper bound.
  const included = sum([...audience.lists.map((id) => lists.get(id) ?? 0), ...audience.segments.map(segmentSize)]);
  const floorOnly = audience.segments.some((id) => segments.get(id)!.atLeast);
  const among = !floorOnly && included <= tuning.readMembersUpTo ? { lists: audience.lists, segments: audience.segments } : undefined;
  // Each shard counts its own contacts up to the cap (contact ids and list numbers are the same everywhere the condition runs).
  const counted = sum(await Promise.all(shards.map((shard) => countMatchingUpTo(shard.db, panelId, compiled, cap, among, shard.buckets))));
  if (counted < cap) return succeeded({ count: counted, exact: true, countedAt: now, exactUpTo: cap });

  const [contacts, suppressed] = await Promise.all([
    panelContactsFigure(shards, panelId, now),
    distinctSuppressions(dbs, panelId, { countUpTo: tuning.suppressionsUpTo, compareUpTo: tuning.suppressionsComparedUpTo }),
  ]);
  countedAt = Math.min(countedAt, contacts.countedAt);
  const reach = contacts.atLeast ? included : Math.min(included, contacts.n);
  const excluded = sum([...audience.exclude_lists.map((id) => lists.get(id) ?? 0), ...audience.exclude_segments.map(segmentSize)]);
  return succeeded({ count: Math.max(cap, reach - excluded - suppressed), exact: false, countedAt, exactUpTo: cap });
}
