import type { Key } from "../../store/panel-move/rows";
import { copyStopPage, type StopTable } from "../../store/panel-move/stops";
import { getPanel, type Panel } from "../../store/panels";
import { dropStopCopyPass, dueStopCopyPass, postponeStopCopyPass, saveStopCopyPass, type StopCopyPass } from "../../store/stop-copy-passes";
import { panelShardPlaces, type PanelShard } from "../access/partitions";
import { shardTask } from "../access/shards";

/**
 * The stops a partitioned panel's shards lack, copied by the cron (decision 0061). A stop the
 * home records is written on each of the panel's other shards by its writer (copyHomeStops; an
 * SMS stop on every shard), and a new map or a split copies the home's: but a stop recorded
 * before that was the rule stayed where it was written (the home's email stops; a contact's own
 * SMS stop, on its shard), and a writer holding an older map (an isolate's cached directory
 * entry) copies to the old map's shards only. Each shard's segment conditions and SMS sends read
 * their own shard's stops alone, so such a contact was counted `reachable` and never sent to.
 *
 * A pass copies, in bounded pages, the home's email stops onto each other shard of the panel,
 * then each shard's SMS stops onto every other (stops by number hold panel wide), adding only
 * those a shard lacks (copyStopPage: a stop the source lost meanwhile is taken off again, so a
 * lift is not undone). Passes are due (stop_copy_passes, control migration 0077) for every panel
 * mapped before this (by the migration), after each map change or split once every writer holding
 * the old map is done (scheduleStopCopies), and again every STOP_COPY_PASS_EVERY_MS.
 */

/** Stops read per page from the source. */
const PAGE_ROWS = 500;
/** Stops read per shard per cron run, over as many due passes as it takes: a long pass goes on at the next run. */
export const STOP_COPY_ROWS_PER_RUN = 5_000;
/** A finished pass is due again after this (a safety net: every known gap is marked when it opens). */
export const STOP_COPY_PASS_EVERY_MS = 7 * 86_400_000;
/** A pass whose run failed (a shard not answering, a split's fence) waits this long, so the shard's other due passes are not held behind it. */
const RETRY_AFTER_MS = 5 * 60_000;

/** One part of a pass: the stops of `table` on shard `source`. */
interface Step {
  table: StopTable;
  source: number;
}

/** Where a pass stands (the cursor's JSON). */
interface Position {
  table: StopTable;
  source: number;
  after: Key | null;
}

/** The home's email stops, then each shard's SMS stops (home first), in the map's order. */
function stepsOf(places: readonly PanelShard[]): Step[] {
  return [{ table: "email_suppressions", source: places[0]!.shard }, ...places.map((p): Step => ({ table: "sms_suppressions", source: p.shard }))];
}

/** The step a saved cursor names, or the first (none saved, or the map changed so that it names no step now). */
function resume(cursor: string | null, steps: readonly Step[]): { step: number; after: Key | null } {
  const at: Position | null = cursor ? (JSON.parse(cursor) as Position) : null;
  const step = at ? steps.findIndex((s) => s.table === at.table && s.source === at.source) : -1;
  return step < 0 ? { step: 0, after: null } : { step, after: at!.after };
}

/** Runs the panel's due pass on for about `budget` stops read; how many it read (at least 1, so a caller's budget always shrinks). */
async function runPass(env: Env, pass: StopCopyPass, shard: number, budget: number, now: number): Promise<number> {
  const panel: Panel | null = await getPanel(env.DB, pass.panelId);
  const places = panel ? panelShardPlaces(env, panel) : [];
  // A map taken away, or the panel moved whole meanwhile (the next map or split marks it again).
  if (!panel || panel.shard !== shard || places.length < 2) {
    await dropStopCopyPass(env.DB, pass.panelId);
    return 1;
  }
  const steps = stepsOf(places);
  let { step, after } = resume(pass.cursor, steps);
  let read = 0;
  while (read < budget) {
    const { table, source } = steps[step]!;
    // Email: the home's onto the others (a stop another shard records is its own contacts' only). SMS: every shard's onto every other.
    const targets = places.filter((p) => p.shard !== source).map((p) => p.db);
    const from = places.find((p) => p.shard === source)!.db;
    const page = await copyStopPage(from, targets, table, panel.id, after, PAGE_ROWS);
    read += page.read;
    if (page.next !== null) {
      after = page.next;
    } else if (step + 1 < steps.length) {
      [step, after] = [step + 1, null];
    } else {
      await saveStopCopyPass(env.DB, panel.id, null, now + STOP_COPY_PASS_EVERY_MS, now);
      return Math.max(read, 1);
    }
  }
  const position: Position = { ...steps[step]!, after };
  // Still due: the next run goes on from here.
  await saveStopCopyPass(env.DB, panel.id, JSON.stringify(position), now, now);
  return read;
}

/**
 * The cron's share on shard `index`: the due passes of panels homed there, one after another,
 * until STOP_COPY_ROWS_PER_RUN stops are read; one that fails waits RETRY_AFTER_MS while the
 * others run. One control read when none is due.
 */
export async function copyStopsInTurn(env: Env, index: number, now: number): Promise<void> {
  const failures: unknown[] = [];
  for (let budget = STOP_COPY_ROWS_PER_RUN; budget > 0; ) {
    const pass = await dueStopCopyPass(env.DB, index, now);
    if (!pass) break;
    try {
      budget -= await runPass(env, pass, index, budget, now);
    } catch (error) {
      // It goes on later from where its last run saved it; a failure costs a page of the budget, so a shard down fails a few passes a run.
      await postponeStopCopyPass(env.DB, pass.panelId, now + RETRY_AFTER_MS, now);
      failures.push(error);
      budget -= PAGE_ROWS;
    }
  }
  // The task logs it.
  if (failures.length) throw failures[0];
}

/** Per shard, every minute: copyStopsInTurn. */
export const stopCopiesTask = shardTask("partitions.stop-copies", (env, _db, index, now) => copyStopsInTurn(env, index, now));
