import { refused, refusedField, succeeded, type Result } from "../../lib/problems";
import { newId, randomHex } from "../../lib/random";
import { sendAll, type CronTask } from "../../lib/tasks";
import { getPanel, type Panel } from "../../store/panels";
import { allShards, shardByIndex, shardOf, type ShardDb } from "../../store/shards";
import { LAST_BUCKET, partitionOfBucket, wholePanelPartition } from "../../domain/partitions";
import { splitPanelPartition } from "../../store/panel-partitions";
import { recountMembersStatement } from "../../store/lists";
import { recountPushStatement } from "../../store/push";
import { recountWaitingStatements } from "../../store/journeys/points";
import { freeListEntryLeases } from "../../store/list-entries";
import { nudgeListEntries } from "../journeys/list-entries";
import { forgetStoredStatement, recountStoredStatement } from "../../store/panel-counts";
import { dropMovedExitsStatement } from "../../store/segments";
import { campaignStillPublishing } from "../../store/campaigns/parts";
import {
  getPanelMove,
  insertPanelMove,
  leasePanelMove,
  releasePanelMove,
  saveMoveProgress,
  stalledPanelMoves,
  switchPanelShard,
  idRangesLeft,
  takeIdRange,
  type MoveProgress,
  type PanelMove,
} from "../../store/panel-moves";
import { FIRST_MOVE_RANGE, LAST_MOVE_RANGE } from "../../store/id-ranges";
import { MOVED_TABLES, partitionTables, type MovedTable } from "../../store/panel-move/tables";
import { copyStops } from "../../store/panel-move/stops";
import { copyArchiveOwners } from "../../store/panel-move/archive-owners";
import {
  changedRowsDiffer,
  copyDiffers,
  deleteSome,
  idsAboveTarget,
  idsAheadOfCounter,
  liftIdFloor,
  rowsAfter,
  rowsByKey,
  rowsTiedAcross,
  writeChanges,
  type RowChange,
} from "../../store/panel-move/rows";
import {
  changesAfter,
  clearInTransit,
  forgetChanges,
  liftFence,
  markInTransit,
  campaignHoldMark,
  raiseFence,
  safePanelId,
  splitTransitMark,
  startCapture,
  stopCapture,
  type CapturedChange,
} from "../../store/panel-move/triggers";
import { CALLER_CACHE_MS } from "../access/api-keys";
import { CATALOG_CACHE_MS } from "../access/activity-catalogs";
import { forgetPanelPlaces } from "../access/shards";
import { copyConfiguration, dropConfiguration, refreshConfiguration, scheduleStopCopies } from "../access/partitions";
import { resyncMirrors } from "./mirror-resync";
import { carryListEmptyings } from "../lists/clear";
import { carryCampaignsToTarget, nudgeMovedCampaigns, settleSplitSource, type SplitPlaces } from "../broadcasts/split-target";

/**
 * Moving a panel to another shard (issue 16, decision 0031), a background job on the IMPORTS
 * queue in steps, each holding the move by a lease:
 * 1. copying: triggers on the source record every change to the panel's rows from now on; the
 *    panel's rows are copied table by table, in pages, to the target, where the panel is "in
 *    transit" (no trigger counts its rows again).
 * 2. catching_up: changed rows are copied again as they are now (or deleted) until few remain;
 *    then each table's rows are counted on both sides, the keys changed since left out; a fence
 *    refuses the panel's writes on the source, the last changes are copied, the rows of every
 *    key changed since the count are compared one by one, and the directory switches. The pause
 *    is the fence's time, bounded by fenceMaxMs (past it the fence is lifted and catching up goes on).
 * 3. cleaning: once every isolate reads the new directory entry (settleMs), the old rows are
 *    deleted in pages, then the fence goes.
 * Anything failing before the switch, a mismatch or too many failed steps, leaves the panel
 * where it was: the source's triggers go, the target's copy is deleted, the move is failed.
 *
 * A partition move (decision 0047, the split of decision 0038 step 5) runs the same steps over
 * the contact-keyed tables only, each narrowed to the moving buckets (partitionTables): the
 * panel's configuration is mirrored onto the target first (decision 0041) and refreshed before
 * each catch-up, the fence refuses writes to the moving buckets only, the switch splits the
 * partition in the map, and the old rows are deleted with the shard's triggers acting (the
 * source keeps serving its other buckets; its list counters, waiting gauges and push counters
 * lost the members, waits and devices that left at the switch, and the fenced deletes count
 * nothing; the exits this logs in its segments' history are removed, and its stored figures are
 * counted again).
 */

export interface MoveTuning {
  stepMs: number;
  leaseMs: number;
  pageRows: number;
  /** Fewer changes left than this: fence and switch. */
  fenceBelow: number;
  fenceMaxMs: number;
  /** The same for a partition move (decision 0047): issue 42 asks a split to pause writes at most a second. */
  partitionFenceMaxMs: number;
  /** After the switch, how long before the old rows go: every cached directory entry is renewed by then. */
  settleMs: number;
  maxAttempts: number;
  /**
   * A move no step holds (its lease ran out, or was released) and not saved for this long lost
   * its nudge. At most a cron tick, as leaseMs is: a step that died leaves its lease at most a
   * tick past its last save, so the cron resumes it at the second tick after the service is
   * healthy at the latest; longer than settleMs and a failed step's 5 s pause, so a move waiting
   * for its own delayed nudge is not nudged twice. The lease, not this, keeps two steps apart.
   */
  stallMs: number;
}

export const MOVE_TUNING: MoveTuning = {
  stepMs: 10_000,
  leaseMs: 60_000,
  pageRows: 500,
  fenceBelow: 500,
  fenceMaxMs: 5_000,
  partitionFenceMaxMs: 1_000,
  settleMs: 3 * Math.max(CALLER_CACHE_MS, CATALOG_CACHE_MS),
  maxAttempts: 3,
  stallMs: 50_000,
};

export type MoveStepOutcome = { next: "now" } | { next: "later"; ms: number } | { next: "none" };

export function moveNudge(moveId: string) {
  return { type: "panel_move", moveId };
}

export function readMoveNudge(body: unknown): string | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, moveId } = body as Record<string, unknown>;
  return type === "panel_move" && typeof moveId === "string" ? moveId : null;
}

async function nudgeMove(env: Pick<Env, "IMPORTS">, moveId: string, delayMs = 0): Promise<void> {
  const delaySeconds = Math.ceil(delayMs / 1000);
  await env.IMPORTS.send(moveNudge(moveId), delaySeconds ? { delaySeconds } : undefined);
}

/** Starts moving `panel` to shard `to`: checks it can (else refused on `shard`: invalid, or a conflict with a move under way or ids the target may hand out), records the move and nudges its first step. */
export async function startPanelMove(env: Env, panel: Panel, to: number, now: number): Promise<Result<PanelMove>> {
  const refuse = (kind: "invalid" | "conflict", message: string) => refusedField<PanelMove>(kind, "shard", message);
  const target = shardByIndex(env, to);
  if (!target) return refuse("invalid", `this deployment has no shard ${to} (shards 0 to ${allShards(env).length - 1})`);
  if (to === panel.shard) return refuse("invalid", `the panel is on shard ${to} already`);
  // The map names shards by number and its mirrors copy the home (decision 0041): moving such a
  // panel is the partition move of decision 0038 step 5, not built.
  if (panel.partitions.length) return refuse("conflict", "the panel has a partition map (decision 0038): it moves by partition (give split_at, decision 0047)");
  const source = shardByIndex(env, panel.shard);
  if (!source) throw new Error(`the directory places panel ${panel.id} on shard ${panel.shard}, which this deployment does not bind`);
  if (!safePanelId(panel.id)) return refuse("invalid", `panel id "${panel.id}" cannot be moved: it is not made of letters, digits, - and _`);
  const collision = await idsAheadOfCounter(source, target, to, MOVED_TABLES, panel.id);
  if (collision) return refuse("conflict", `the panel's ${collision} rows hold ids shard ${to} may still hand out (rows made before their shard had its id range, decision 0030)`);
  if ((await idsAboveTarget(source, target, MOVED_TABLES, panel.id)) && (await idRangesLeft(env.DB)) === 0) return refuse("conflict", ID_RANGES_USED_UP);
  const move = { id: newId("mov"), panelId: panel.id, fromShard: panel.shard, toShard: to, createdAt: now };
  if (!(await insertPanelMove(env.DB, move))) return refuse("conflict", "a move of this panel is under way");
  await nudgeMove(env, move.id).catch((error) => console.error(`panel move ${move.id}: nudge not sent; the cron sends it`, error));
  return succeeded((await getPanelMove(env.DB, panel.id, move.id))!);
}

/**
 * Starts splitting the panel's partition holding bucket `at`: buckets `at` to the partition's
 * last move to shard `to` while the panel serves (decision 0047); a panel without a map is one
 * partition of every bucket on its home. Refused on `split_at` (not inside a partition: a split point
 * is past a partition's first bucket), on `shard` (unbound, the home, already holding a
 * partition of the panel, ids it may hand out), or as a conflict for a campaign still publishing
 * and a move under way.
 */
export async function startPartitionSplit(env: Env, panel: Panel, at: number, to: number, now: number): Promise<Result<PanelMove>> {
  const refuse = (kind: "invalid" | "conflict", field: "split_at" | "shard", message: string) => refusedField<PanelMove>(kind, field, message);
  if (!Number.isInteger(at) || at < 1 || at > LAST_BUCKET) return refuse("invalid", "split_at", `a split point is a bucket from 1 to ${LAST_BUCKET}`);
  const target = shardByIndex(env, to);
  if (!target) return refuse("invalid", "shard", `this deployment has no shard ${to} (shards 0 to ${allShards(env).length - 1})`);
  const map = panel.partitions.length ? panel.partitions : wholePanelPartition(panel.shard);
  const partition = partitionOfBucket(map, at);
  if (partition.firstBucket === at) return refuse("invalid", "split_at", `bucket ${at} starts a partition already (buckets ${at}–${partition.lastBucket} on shard ${partition.shard}): a split point lies inside a partition`);
  if (to === panel.shard) return refuse("conflict", "shard", `shard ${to} is the panel's home, which keeps its configuration`);
  const held = map.find((p) => p.shard === to);
  if (held) return refuse("conflict", "shard", `shard ${to} holds a partition of the panel already (buckets ${held.firstBucket}–${held.lastBucket})`);
  if (!safePanelId(panel.id)) return refuse("invalid", "shard", `panel id "${panel.id}" cannot be moved: it is not made of letters, digits, - and _`);
  const source = shardByIndex(env, partition.shard);
  if (!source) throw new Error(`the partition map places buckets ${partition.firstBucket}–${partition.lastBucket} of panel ${panel.id} on shard ${partition.shard}, which this deployment does not bind`);
  // Saved segments and journeys are mirrored, and their contacts' rows move with them. A segment
  // journey's copy on the target scans from the switch on (journeysToScan skips a panel in transit),
  // and the source's scan skips the contacts the map places elsewhere (scanSegment).
  // A campaign still publishing walks its map's buckets: the moving buckets' contacts not yet
  // inserted would be nobody's. One sending or paused with every part published goes on: its
  // recipients move with their contacts and the target takes its part (carryCampaignsToTarget).
  // A campaign starting after this check is held or found by the first step (holdCampaigns).
  const publishing = await campaignStillPublishing(shardOf(env, panel), panel.id);
  if (publishing) return refused("conflict", [], stillPublishing(publishing));
  const buckets = { first: at, last: partition.lastBucket };
  const tied = await rowsTiedAcross(source, panel.id, buckets);
  if (tied) return refuse("conflict", "split_at", `buckets ${at}–${partition.lastBucket} cannot move apart: ${tied}`);
  const tables = partitionTables(buckets);
  const collision = await idsAheadOfCounter(source, target, to, tables, panel.id);
  if (collision) return refuse("conflict", "shard", `the panel's ${collision} rows hold ids shard ${to} may still hand out (rows made before their shard had its id range, decision 0030)`);
  if ((await idsAboveTarget(source, target, tables, panel.id)) && (await idRangesLeft(env.DB)) === 0) return refuse("conflict", "shard", ID_RANGES_USED_UP);
  const move = { id: newId("mov"), panelId: panel.id, fromShard: partition.shard, toShard: to, buckets, createdAt: now };
  if (!(await insertPanelMove(env.DB, move))) return refuse("conflict", "shard", "a move of this panel is under way");
  await nudgeMove(env, move.id).catch((error) => console.error(`panel move ${move.id}: nudge not sent; the cron sends it`, error));
  return succeeded((await getPanelMove(env.DB, panel.id, move.id))!);
}

interface Step {
  env: Env;
  move: PanelMove;
  /** The tables the move copies: every one, or a partition move's, narrowed to its buckets. */
  tables: readonly MovedTable[];
  lease: string;
  source: ShardDb;
  target: ShardDb;
  tuning: MoveTuning;
  now: () => number;
  deadline: number;
}

/** A move that cannot go on and must leave the panel where it was. */
class MoveMismatch extends Error {}

const ID_RANGES_USED_UP = `the target shard must count ids from a fresh range above the panel's, and the region's id ranges for moves (${FIRST_MOVE_RANGE} to ${LAST_MOVE_RANGE}, decision 0037) are used up`;

/** Runs one step of a move; what comes next. */
export async function runMoveStep(env: Env, moveId: string, tuning: MoveTuning = MOVE_TUNING, now: () => number = Date.now): Promise<MoveStepOutcome> {
  const lease = randomHex(8);
  const move = await leasePanelMove(env.DB, moveId, lease, now(), now() + tuning.leaseMs);
  if (move === null || move === "held") return { next: "none" };
  const source = shardByIndex(env, move.fromShard);
  const target = shardByIndex(env, move.toShard);
  if (!source || !target) {
    const error = `shard ${source ? move.toShard : move.fromShard} is no longer bound`;
    await saveMoveProgress(env.DB, move.id, lease, now(), now(), { state: "failed", error, finishedAt: now() });
    return { next: "none" };
  }
  const tables = move.buckets ? partitionTables(move.buckets) : MOVED_TABLES;
  const step: Step = { env, move, tables, lease, source, target, tuning, now, deadline: now() + tuning.stepMs };
  try {
    // A step that died between the switch and its save: never aborted (that would delete rows the switch made the panel's).
    if (move.state === "catching_up" && (await switchMade(step))) return await afterSwitch(step, move.switchedAt ?? now(), move.pauseMs);
    if (move.state !== "cleaning" && move.attempts >= tuning.maxAttempts) return await abort(step, move.error ?? "too many failed steps");
    if (move.state === "copying") return await copy(step);
    if (move.state === "catching_up") return await catchUp(step);
    return await clean(step);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof MoveMismatch) return await abort(step, message).catch(() => ({ next: "later" as const, ms: 5_000 }));
    console.error(`panel move ${move.id} (${move.state}): step failed`, error);
    await save(step, { attempts: move.attempts + 1, error: message }).catch(() => undefined);
    return { next: "later", ms: 5_000 };
  } finally {
    await releasePanelMove(env.DB, move.id, lease).catch(() => undefined);
  }
}

async function save(step: Step, progress: MoveProgress): Promise<void> {
  const now = step.now();
  if (!(await saveMoveProgress(step.env.DB, step.move.id, step.lease, now, now + step.tuning.leaseMs, progress))) {
    throw new Error("the move's lease was lost to another step");
  }
  Object.assign(step.move, progress);
}

async function copy(step: Step): Promise<MoveStepOutcome> {
  const { move, source, target, tuning } = step;
  if (move.tableIndex === 0 && move.cursor === null) {
    // Changes are recorded before the first row is read, so none made while copying is missed.
    // A partition's rows name the panel's lists and attributes: the target mirrors them first (it holds none of the panel's contacts).
    if (move.buckets) {
      const home = await homeOf(step);
      await holdCampaigns(home, move.panelId);
      await copyConfiguration(home, target, move.panelId);
    }
    const ready = await readyTargetIds(step.env, source, target, move.panelId, step.tables);
    if (!ready) throw new MoveMismatch(ID_RANGES_USED_UP);
    await markInTransit(target, move.panelId);
    await startCapture(source, move.panelId, step.tables);
  }
  while (step.now() < step.deadline) {
    const table = step.tables[move.tableIndex];
    if (!table) {
      await save(step, { state: "catching_up" });
      return { next: "now" };
    }
    const { rows, next } = await rowsAfter(source, table, move.panelId, move.cursor, tuning.pageRows);
    await writeChanges(target, rows.map((row) => ({ table, row })));
    await save(step, {
      tableIndex: next === null ? move.tableIndex + 1 : move.tableIndex,
      cursor: next,
      rowsCopied: move.rowsCopied + rows.length,
    });
  }
  return { next: "now" };
}

/**
 * Before the panel's rows reach the target: a target whose counters lie below the panel's ids
 * first takes a fresh range above them (decision 0031), from the bounded pool (decision 0037).
 * False when it needs one and the pool is used up.
 */
export async function readyTargetIds(env: Pick<Env, "DB">, source: ShardDb, target: ShardDb, panelId: string, tables: readonly MovedTable[] = MOVED_TABLES): Promise<boolean> {
  if (!(await idsAboveTarget(source, target, tables, panelId))) return true;
  const range = await takeIdRange(env.DB);
  if (range === null) return false;
  await liftIdFloor(target, range);
  return true;
}

/** Copies each changed row as it is now on the source (or its absence), in the order the changes first came. */
async function applyChanges(step: Step, changes: readonly CapturedChange[]): Promise<void> {
  const firsts = new Map<string, CapturedChange>();
  for (const change of changes) {
    const id = `${change.table.name} ${JSON.stringify(change.key)}`;
    if (!firsts.has(id)) firsts.set(id, change);
  }
  const ordered = [...firsts.values()];
  const current = new Map<CapturedChange, RowChange>();
  const byTable = new Map<MovedTable, CapturedChange[]>();
  for (const change of ordered) {
    const group = byTable.get(change.table);
    if (group) group.push(change);
    else byTable.set(change.table, [change]);
  }
  for (const [table, group] of byTable) {
    const rows = await rowsByKey(step.source, table, step.move.panelId, group.map((c) => c.key));
    group.forEach((change, i) => current.set(change, rows[i] ? { table, row: rows[i] } : { table, gone: change.key }));
  }
  await writeChanges(step.target, ordered.map((change) => current.get(change)!));
}

/**
 * A campaign's shards' parts are laid out by the map as it publishes, so a split waits for one
 * still publishing (decision 0047): from its first step to its end no campaign of the panel starts
 * (campaignHoldMark, read by startPublish on the home), and one that started after the start's
 * check, before the hold, fails the split here before any row is copied. Campaigns under way and
 * published go on (the target takes its part at the switch).
 */
async function holdCampaigns(home: ShardDb, panelId: string): Promise<void> {
  await markInTransit(home, campaignHoldMark(panelId));
  const publishing = await campaignStillPublishing(home, panelId);
  if (publishing) throw new MoveMismatch(stillPublishing(publishing));
}

const stillPublishing = (campaignId: string) =>
  `campaign ${campaignId} of the panel is still publishing its recipients: split once it has published them (it may go on sending meanwhile; decision 0047)`;

/**
 * The places a split's campaigns under way are carried between (decision 0047); null when the
 * panel is gone. Read after the switch: no mismatch is thrown (a failed step after the switch
 * is retried, never aborted).
 */
async function campaignPlaces(step: Step): Promise<SplitPlaces | null> {
  const panel = await getPanel(step.env.DB, step.move.panelId);
  if (!panel) return null;
  const { move } = step;
  return {
    panelId: move.panelId,
    home: { shard: panel.shard, db: shardOf(step.env, panel) },
    source: { shard: move.fromShard, db: step.source },
    target: { shard: move.toShard, db: step.target },
    startedAt: move.createdAt,
  };
}

/** The panel's home shard (a partition move's configuration source). */
async function homeOf(step: Step): Promise<ShardDb> {
  const panel = await getPanel(step.env.DB, step.move.panelId);
  if (!panel) throw new MoveMismatch("the panel is gone");
  return shardOf(step.env, panel);
}

async function catchUp(step: Step): Promise<MoveStepOutcome> {
  const { move, source, tuning } = step;
  // Lists made since the mirror was copied: changed memberships naming them wait for their row.
  if (move.buckets) await refreshConfiguration(await homeOf(step), step.target, move.panelId);
  while (step.now() < step.deadline) {
    const changes = await changesAfter(source, move.panelId, move.changeSeq, tuning.fenceBelow, step.tables);
    if (changes.length < tuning.fenceBelow) return await fenceAndSwitch(step);
    await applyChanges(step, changes);
    await save(step, { changeSeq: changes[changes.length - 1]!.seq, changesApplied: move.changesApplied + changes.length });
  }
  return { next: "now" };
}

async function fenceAndSwitch(step: Step): Promise<MoveStepOutcome> {
  const { move, source, target, tuning } = step;
  // The copy is compared while the panel still takes writes: every row outside the keys changed
  // since `verifiedSeq` by count now, those keys one by one under the fence.
  const verifiedSeq = move.changeSeq;
  const differ = await copyDiffers(source, target, step.tables, move.panelId, verifiedSeq);
  if (differ.length) throw new MoveMismatch(`the copy differs from the panel's rows: ${differ.map((d) => `${d.table.name} ${d.had} on shard ${move.fromShard}, ${d.has} on shard ${move.toShard}`).join("; ")}`);
  const fencedAt = step.now();
  await raiseFence(source, move.panelId, step.tables, transitMark(move), move.buckets ?? undefined);
  try {
    for (;;) {
      const changes = await changesAfter(source, move.panelId, move.changeSeq, tuning.pageRows, step.tables);
      if (changes.length === 0) break;
      await applyChanges(step, changes);
      await save(step, { changeSeq: changes[changes.length - 1]!.seq, changesApplied: move.changesApplied + changes.length });
      if (step.now() - fencedAt > (move.buckets ? tuning.partitionFenceMaxMs : tuning.fenceMaxMs)) {
        await liftFence(source, move.panelId);
        return { next: "now" };
      }
    }
    const changed = await changesSince(source, move.panelId, verifiedSeq, tuning.pageRows, step.tables);
    const rowsDiffer = await changedRowsDiffer(source, target, move.panelId, changed);
    if (rowsDiffer.length) throw new MoveMismatch(`the copy differs from the panel's rows: ${rowsDiffer.slice(0, 10).join("; ")}`);
    if (move.buckets) await refreshConfiguration(await homeOf(step), target, move.panelId);
    await clearInTransit(target, move.panelId);
  } catch (error) {
    await liftFence(source, move.panelId);
    throw error;
  }
  const switchedAt = step.now();
  if (!(await switchPlace(step, switchedAt))) {
    await markInTransit(target, move.panelId);
    await liftFence(source, move.panelId);
    throw new MoveMismatch(move.buckets ? `the partition map no longer holds buckets ${move.buckets.first}–${move.buckets.last} on shard ${move.fromShard}` : `the directory no longer places the panel on shard ${move.fromShard}`);
  }
  return await afterSwitch(step, switchedAt, switchedAt - fencedAt);
}

/**
 * What follows the switch, up to the `cleaning` state saved. A step that died in it (after the
 * directory or map named the target, before the save) leaves the move `catching_up`: its next
 * step finds the switch made (switchMade) and runs this again, every part of it safe to repeat;
 * catching up again would compare the copy with a source that no longer takes the writes and
 * abort, deleting the target's rows the map now names.
 */
async function afterSwitch(step: Step, switchedAt: number, pauseMs: number | null): Promise<MoveStepOutcome> {
  const { move, source, target, tuning } = step;
  forgetPanelPlaces();
  // The campaigns under way, first (the target's A/B counters rows count its moved recipients'
  // opens from then on): the target's part of each and its batches nudged; a whole panel's new
  // home's unsent batches nudged. Outside the pause; a failure is retried by the resumed step or
  // the cleaning steps, which write the parts again.
  const places = move.buckets ? await campaignPlaces(step) : null;
  if (places) await carryCampaignsToTarget(step.env, places, step.now(), true);
  else await nudgeMovedCampaigns(step.env, target, move.panelId, move.fromShard);
  if (move.buckets) {
    await recountMembers(step);
    await uncountMovedOnSource(step);
    // The moved contacts' sends read the target's stops from now on: it takes the source's, once
    // (outside the pause). A stop of a moved contact recorded on the source later meets the fence
    // with its message or contact; copied again at a cleaning step, it could take back a lift
    // made on the target meanwhile.
    await copyStops(source, target, move.panelId, tuning.pageRows);
    // A writer holding the map from before the switch copies a home stop to the old shards only (decision 0061).
    await scheduleStopCopies(step.env, move.panelId, step.now());
    // The archive's index of the moved contacts' days archived on the source: their erasure there rewrites them.
    await copyArchiveOwners(source, target, move.panelId, tuning.pageRows);
    // Lists being emptied on the source: their moved members are the target's to remove now.
    await carryListEmptyings(step.env, source, { shard: move.toShard, db: target }, move.panelId, step.now());
  }
  // From here the panel lives on the target; the fence stays up for writers still holding the old entry.
  await save(step, { state: "cleaning", switchedAt, pauseMs, cursor: null, tableIndex: step.tables.length - 1 });
  await stopCapture(source, move.panelId);
  // Journey entries a consumer held on the source come over held: freed, and their shard nudged (the target is the home of a whole panel moved).
  if ((await freeListEntryLeases(target, move.panelId, step.now())) > 0) await nudgeListEntries(step.env, move.panelId, move.buckets ? move.toShard : undefined);
  return { next: "later", ms: tuning.settleMs };
}

/** Whether the directory (a whole panel) or the map (a split's buckets) already names this move's target: only this move switches it. */
async function switchMade(step: Step): Promise<boolean> {
  const { move } = step;
  const panel = await getPanel(step.env.DB, move.panelId);
  if (!panel) return false;
  if (!move.buckets) return panel.shard === move.toShard;
  const partition = partitionOfBucket(panel.partitions.length ? panel.partitions : wholePanelPartition(panel.shard), move.buckets.first);
  return partition.shard === move.toShard && partition.firstBucket === move.buckets.first;
}

/** What the fence lets delete on the source while the old rows go: the panel, or a partition move's own mark (the rows that stay keep their triggers). */
function transitMark(move: PanelMove): string {
  return move.buckets ? splitTransitMark(move.panelId) : move.panelId;
}

/**
 * The switch: the directory names the target (a whole panel), or the map splits the partition
 * holding the moving buckets (a partition move), conditionally on the place read being current.
 */
async function switchPlace(step: Step, now: number): Promise<boolean> {
  const { env, move } = step;
  if (!move.buckets) return await switchPanelShard(env.DB, move.panelId, move.fromShard, move.toShard, now);
  const panel = await getPanel(env.DB, move.panelId);
  if (!panel) return false;
  const map = panel.partitions.length ? panel.partitions : wholePanelPartition(panel.shard);
  const partition = partitionOfBucket(map, move.buckets.first);
  if (partition.shard !== move.fromShard || partition.lastBucket !== move.buckets.last || partition.firstBucket >= move.buckets.first) return false;
  return await splitPanelPartition(env.DB, move.panelId, move.fromShard, partition.firstBucket, partition.lastBucket, move.buckets.first, move.toShard);
}

/** Every change of the panel after `afterSeq`, read in pages. */
async function changesSince(source: ShardDb, panelId: string, afterSeq: number, pageRows: number, tables: readonly MovedTable[]): Promise<CapturedChange[]> {
  const all: CapturedChange[] = [];
  for (let seq = afterSeq; ; ) {
    const page = await changesAfter(source, panelId, seq, pageRows, tables);
    all.push(...page);
    if (page.length < pageRows) return all;
    seq = page[page.length - 1]!.seq;
  }
}

/**
 * The target's list rows counted none of the memberships copied in transit, nor its journeys'
 * waiting gauges the waits, nor its stored figures the contacts and segment members, nor its
 * push counters the subscriptions: one batch (a transaction) sets them to what it holds.
 * Outside the pause, after the switch, where the target's triggers count every write and the
 * batch is exact whenever it runs; run again by the cleaning steps, so a step that died after
 * the switch leaves no counter short.
 */
async function recountMembers(step: Step): Promise<void> {
  const { target, move } = step;
  await target.batch([
    recountMembersStatement(target, move.panelId),
    // The journeys' waiting gauges and the stored figures (contacts, segment members) likewise.
    ...recountWaitingStatements(target, move.panelId),
    recountStoredStatement(target, move.panelId, step.now()),
    // Its push counters, likewise (a split copies devices with their bucket, shard migration 0110).
    recountPushStatement(target, move.panelId),
  ]);
}

/**
 * The source's figures lose the moved rows at the switch, not as cleaning deletes them: its list
 * rows, its journeys' waiting gauges and its push counters are recounted without the moved
 * buckets (the fenced deletes that follow count nothing, shard migrations 0117 and 0118), and its
 * stored figures are made due, which housekeeping leaves alone while the fence stands
 * (countStep), so a request past the cap reads a floor until cleaning rather than the moved rows
 * on both shards. Safe to repeat (a step that died after the switch).
 */
async function uncountMovedOnSource(step: Step): Promise<void> {
  const { source, move } = step;
  if (!move.buckets) return;
  await source.batch([
    recountMembersStatement(source, move.panelId, move.buckets),
    ...recountWaitingStatements(source, move.panelId, move.buckets),
    recountPushStatement(source, move.panelId, move.buckets),
    forgetStoredStatement(source, move.panelId),
  ]);
}

async function clean(step: Step): Promise<MoveStepOutcome> {
  const { move, source, tuning } = step;
  if (move.buckets) await recountMembers(step);
  const due = (move.switchedAt ?? 0) + tuning.settleMs;
  if (step.now() < due) return { next: "later", ms: due - step.now() };
  await stopCapture(source, move.panelId);
  // Before any old row goes: the target holds its part of each campaign under way (once; the
  // source's old rows kept the campaign from being sent without it until now).
  const places = move.buckets ? await campaignPlaces(step) : null;
  if (places) await carryCampaignsToTarget(step.env, places, step.now(), false);
  // Again, for an emptying started on the source after the switch (a caller holding the old map).
  if (move.buckets) await carryListEmptyings(step.env, source, { shard: move.toShard, db: step.target }, move.panelId, step.now());
  await markInTransit(source, transitMark(move));
  const finished = await deleteRows(step, source);
  if (!finished) return { next: "now" };
  // Nothing of the moved recipients is left on the source: its part, or the campaign, may be done.
  if (places) await settleSplitSource(places, step.now());
  // Once, at the end: a configuration change whose copies went out by the map from before the
  // switch (read just before it, or cached until the settle time) missed the target.
  const panel = move.buckets ? await getPanel(step.env.DB, move.panelId) : null;
  if (panel) await resyncMirrors(step.env, panel, step.now());
  // Its stored figures still count the rows that left: counted again by the refresh. Its list
  // counts, waiting gauges and push counters are recounted again (exact now): a split that
  // switched before the switch recounted them (shard migrations 0117, 0118 deployed meanwhile)
  // would keep the moved rows counted.
  await uncountMovedOnSource(step);
  await liftFence(source, move.panelId);
  await forgetChanges(source, move.panelId);
  await clearInTransit(source, transitMark(move));
  if (panel) await clearInTransit(shardOf(step.env, panel), campaignHoldMark(move.panelId));
  await save(step, { state: "done", finishedAt: step.now(), error: null });
  return { next: "none" };
}

/** Deletes the panel's rows on `db`, children first, until the step's time is up; true once none is left. */
async function deleteRows(step: Step, db: ShardDb): Promise<boolean> {
  const { move, tuning } = step;
  for (let index = move.tableIndex; index >= 0; ) {
    if (step.now() >= step.deadline) return false;
    const table = step.tables[index]!;
    const deleted = await deleteSome(db, table, move.panelId, tuning.pageRows);
    // A split's source logged each moved membership's delete as an exit from its segment (its triggers act).
    if (move.buckets && move.switchedAt !== null && table.name === "segment_members" && db === step.source) {
      await dropMovedExitsStatement(db, move.panelId, move.buckets, move.switchedAt).run();
    }
    if (deleted < tuning.pageRows) index--;
    await save(step, { tableIndex: Math.max(index, 0), rowsDeleted: move.rowsDeleted + deleted });
    if (index < 0) return true;
  }
  return true;
}

/** Leaves the panel where it was: no fence or capture on the source, no copy on the target. */
async function abort(step: Step, reason: string): Promise<MoveStepOutcome> {
  const { move, source, target } = step;
  await liftFence(source, move.panelId);
  await stopCapture(source, move.panelId);
  await forgetChanges(source, move.panelId);
  await markInTransit(target, move.panelId);
  await save(step, { tableIndex: step.tables.length - 1 });
  step.deadline = Number.POSITIVE_INFINITY;
  await deleteRows(step, target);
  await clearInTransit(target, move.panelId);
  // The mirror made for the split goes too, unless the map came to name the target meanwhile.
  if (move.buckets) {
    const panel = await getPanel(step.env.DB, move.panelId);
    if (panel && panel.shard !== move.toShard && !panel.partitions.some((p) => p.shard === move.toShard)) await dropConfiguration(target, move.panelId);
    if (panel) await clearInTransit(shardOf(step.env, panel), campaignHoldMark(move.panelId));
  }
  await save(step, { state: "failed", error: reason, finishedAt: step.now() });
  return { next: "none" };
}

/** Runs the step a nudge names and sends the next one. */
export async function handleMoveNudge(env: Env, moveId: string): Promise<void> {
  const outcome = await runMoveStep(env, moveId);
  if (outcome.next === "now") await nudgeMove(env, moveId);
  if (outcome.next === "later") await nudgeMove(env, moveId, outcome.ms);
}

/** A move whose nudge was lost or whose step died (no lease holds it, no save for stallMs) is nudged again. */
export const panelMovesRedrive: CronTask = {
  name: "panel-moves.redrive",
  async run(env, now) {
    const stalled = await stalledPanelMoves(env.DB, now, MOVE_TUNING.stallMs);
    await sendAll(env.IMPORTS, stalled.map(moveNudge));
  },
};
