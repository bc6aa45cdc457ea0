import { COUNT_REQUEST_CAP } from "../../domain/overview";
import { DAY_MS } from "../../domain/time";
import type { BucketRanges } from "../../domain/partitions";
import { CONTACTS, contactsUpTo, countStep, ensureCountRows, membersUpTo, pruneReceivedSlots, storedCounts, type CountedUpTo, type StoredCount } from "../../store/panel-counts";
import { panelFigures, todayFigures, type PanelFigures } from "../../store/overview";
import type { ShardDb } from "../../store/shards";
import type { OwningShard } from "../access/partitions";

/**
 * Counts screens read (issue 42): a panel's contacts and its segments' members are counted in
 * the background, a bounded chunk per statement, and stored with the time of the count
 * (shard migration 0062); a request counts at most a bounded number and reads the stored
 * figure past it. Nothing is added to contact or
 * membership writes (a trigger per contact cost contact add 10 points of a bare insert).
 */
export const PANEL_COUNTS = {
  /** A figure older than this is counted again. */
  refreshMs: 10 * 60_000,
  /** Rows (a panel's contacts, a segment's members) one statement steps. */
  rowsPerStatement: 20,
  /** Index entries one row's step counts: a statement reads at most rowsPerStatement x 2 x chunk. */
  chunk: 50_000,
  /** Statements per shard and housekeeping run: 3 x 20 x 50,000, 3 M entries a minute at most. */
  statementsPerRun: 3,
  /** Below it a request's figure is exact and current; past it the stored figure, or this as a floor if none is. */
  requestCap: COUNT_REQUEST_CAP,
  /** Receipt slots kept: Home reads today's in any time zone. */
  receivedKeepMs: 2 * DAY_MS,
  /**
   * Panel ids bound as one JSON value: a shard's whole list would pass D1's 2 MB per value near
   * 60,000 panels; 5,000 ids are about 120 KB.
   */
  panelsPerStatement: 5_000,
};

export type CountTuning = typeof PANEL_COUNTS;

/** A figure as a screen shows it: `n`, counted at `countedAt`; `atLeast` when `n` is a floor (counted up to a cap). */
export interface CountFigure {
  n: number;
  countedAt: number;
  atLeast: boolean;
}

/**
 * Housekeeping, per shard: counts what is due among `panelIds` (the panels the directory
 * places on this shard), at most `statementsPerRun` bounded statements, and drops the counted
 * panels' old receipt slots. The ids go to D1 a page of `panelsPerStatement` at a time; the
 * page a run starts with turns each minute, so a busy page does not keep the others waiting.
 */
export async function refreshPanelCounts(db: ShardDb, panelIds: readonly string[], now: number, tuning: CountTuning = PANEL_COUNTS): Promise<void> {
  if (panelIds.length === 0) return;
  const pages: (readonly string[])[] = [];
  for (let i = 0; i < panelIds.length; i += tuning.panelsPerStatement) pages.push(panelIds.slice(i, i + tuning.panelsPerStatement));
  const first = Math.floor(now / 60_000) % pages.length;
  let statements = tuning.statementsPerRun;
  for (let p = 0; p < pages.length && statements > 0; p++) {
    const page = pages[(first + p) % pages.length]!;
    await ensureCountRows(db, page);
    while (statements > 0) {
      statements--;
      const stepped = await countStep(db, page, now - tuning.refreshMs, now, tuning.rowsPerStatement, tuning.chunk);
      await pruneReceivedSlots(db, [...new Set(stepped)], now - tuning.receivedKeepMs);
      if (stepped.length < tuning.rowsPerStatement) break;
    }
  }
}

/**
 * What a request answers: a count up to the cap, exact and current below it (a few
 * milliseconds of index at most); past it the stored figure when it is at least the cap, else
 * the cap as a floor (never counted, or counted before the panel grew past it).
 */
function figure(upToCap: CountedUpTo, stored: StoredCount | undefined, now: number, cap: number): CountFigure {
  if (upToCap.read < cap) return { n: upToCap.n, countedAt: now, atLeast: false };
  if (stored?.n != null && stored.countedAt != null && stored.n >= cap) return { n: stored.n, countedAt: stored.countedAt, atLeast: false };
  return { n: cap, countedAt: now, atLeast: true };
}

/**
 * The panel's contacts: counted now when fewer than the cap, else as last counted. With
 * `buckets` (the shard's in the map) the count keeps to them (contactsUpTo).
 */
export async function contactsFigure(db: ShardDb, panelId: string, now: number, tuning: CountTuning = PANEL_COUNTS, buckets: BucketRanges | null = null): Promise<CountFigure> {
  const [upToCap, stored] = await Promise.all([contactsUpTo(db, panelId, tuning.requestCap, buckets), storedCounts(db, panelId, [CONTACTS])]);
  return figure(upToCap, stored.get(CONTACTS), now, tuning.requestCap);
}

/**
 * The panel's contacts over the shards holding its partitions (`shards`, the home first:
 * panelOwningShards, decision 0038 step 6): each shard's figure of its own buckets, a bounded
 * read each, summed; as old as the oldest of them, and a floor when any is. A panel without a
 * map: its home's figure.
 */
export async function panelContactsFigure(shards: readonly OwningShard[], panelId: string, now: number, tuning: CountTuning = PANEL_COUNTS): Promise<CountFigure> {
  return summedFigure(await Promise.all(shards.map((shard) => contactsFigure(shard.db, panelId, now, tuning, shard.buckets))));
}

/** Figures of one subject on several shards as one: summed, as old as the oldest, a floor when any is. */
function summedFigure(figures: readonly CountFigure[]): CountFigure {
  if (figures.length === 1) return figures[0]!;
  return {
    n: figures.reduce((sum, f) => sum + f.n, 0),
    countedAt: Math.min(...figures.map((f) => f.countedAt)),
    atLeast: figures.some((f) => f.atLeast),
  };
}

/**
 * The Home screen's small figures: the configuration's (lists, journeys, webhooks) from the
 * home (`shards[0]`), the day's events and sends summed over every shard, whose slots count
 * what was recorded there.
 */
export async function overviewFigures(shards: readonly [ShardDb, ...ShardDb[]], panelId: string, dayStart: number): Promise<PanelFigures> {
  const [home, ...mirrors] = shards;
  const [figures, ...days] = await Promise.all([panelFigures(home, panelId, dayStart), ...mirrors.map((db) => todayFigures(db, panelId, dayStart))]);
  return days.reduce((sum: PanelFigures, day) => ({ ...sum, eventsToday: sum.eventsToday + day.eventsToday, sendsToday: sum.sendsToday + day.sendsToday }), figures!);
}

/** Each segment's members by segment id: counted now when fewer than the cap (of `buckets`, as contactsFigure), else as last counted. */
export async function memberFigures(db: ShardDb, panelId: string, segmentIds: readonly string[], now: number, tuning: CountTuning = PANEL_COUNTS, buckets: BucketRanges | null = null): Promise<Map<string, CountFigure>> {
  const [upToCap, stored] = await Promise.all([Promise.all(segmentIds.map((id) => membersUpTo(db, id, tuning.requestCap, buckets))), storedCounts(db, panelId, segmentIds)]);
  return new Map(segmentIds.map((id, i) => [id, figure(upToCap[i]!, stored.get(id), now, tuning.requestCap)]));
}

/**
 * Each segment's members over the shards holding the panel's partitions (`shards`, the home
 * first: panelOwningShards, decision 0038 step 6), each shard counting its own members (one
 * bounded read a segment, and one of the stored figures, per shard), summed as
 * panelContactsFigure sums. A panel without a map: its home's figures.
 */
export async function panelMemberFigures(shards: readonly OwningShard[], panelId: string, segmentIds: readonly string[], now: number, tuning: CountTuning = PANEL_COUNTS): Promise<Map<string, CountFigure>> {
  const perShard = await Promise.all(shards.map((shard) => memberFigures(shard.db, panelId, segmentIds, now, tuning, shard.buckets)));
  if (perShard.length === 1) return perShard[0]!;
  return new Map(segmentIds.map((id) => [id, summedFigure(perShard.map((m) => m.get(id)!))]));
}
