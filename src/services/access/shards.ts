import { TtlCache } from "../../lib/ttl-cache";
import { getPanel, panelsOnShard, panelsPerShard, type Panel } from "../../store/panels";
import { allShards, shardByIndex, shardOf, shardSize, type ShardDb } from "../../store/shards";
import { duePanels, PANELS_PER_CRON_BATCH, type CronTask, type PanelOnShard } from "../../lib/tasks";
import { onPanelMoving } from "../../lib/moving";
import { forgetActivityCatalogs } from "./activity-catalogs";
import { CALLER_CACHE_MS, forgetCallers } from "./api-keys";
import { forgetPublicForms } from "./forms";

/** A panel as the directory has it, with the database of its shard. */
export interface PanelHome {
  panel: Panel;
  db: ShardDb;
}

/**
 * Directory entries an isolate trusts, for work that names a panel by id (queue consumers,
 * cron, the webhook Durable Object). Same freshness as the key lookup, which carries the
 * directory entry with the panel for API calls: a panel moved to another shard is found there
 * by every isolate within this time.
 */
const homes = new TtlCache<Panel>(CALLER_CACHE_MS, 1000);

/** Drops every cached directory entry (forgetPanelPlaces drops it with the other caches). */
function forgetPanelHomes(): void {
  homes.clear();
}

// A write refused by a switching panel's fence: this isolate's next look reads the directory.
onPanelMoving(forgetPanelPlaces);

/** Drops every cache of this isolate that holds a panel's facts or shard: what a panel's switch and every admin write call. */
export function forgetPanelPlaces(): void {
  forgetPanelHomes();
  forgetCallers();
  forgetActivityCatalogs();
  forgetPublicForms();
}

/** Drops the one panel's cached directory entry: its next look reads the directory. */
export function forgetPanelHome(panelId: string): void {
  homes.delete(panelId);
}

/** The panel `panelId` names and its shard's database; null for an unknown panel. */
export async function findPanelHome(env: Env, panelId: string): Promise<PanelHome | null> {
  let panel = homes.get(panelId);
  if (!panel) {
    const loaded = await getPanel(env.DB, panelId);
    if (!loaded) return null;
    homes.set(panelId, loaded);
    panel = loaded;
  }
  return { panel, db: shardOf(env, panel) };
}

/** As findPanelHome, for work recorded for a panel that must exist (its data names it). */
export async function panelHome(env: Env, panelId: string): Promise<PanelHome> {
  const home = await findPanelHome(env, panelId);
  if (!home) throw new Error(`no panel with id "${panelId}" in the directory`);
  return home;
}

/** The database of the panel's shard. */
export async function panelDb(env: Env, panelId: string): Promise<ShardDb> {
  return (await panelHome(env, panelId)).db;
}

/**
 * The shard a new panel goes to: the one holding the least data, then the one with fewest
 * panels, then the lowest number.
 */
export async function shardForNewPanel(env: Env): Promise<number> {
  const shards = allShards(env);
  if (shards.length === 0) throw new Error("the deployment has no shard database bound");
  const [sizes, counts] = await Promise.all([Promise.all(shards.map((s) => shardSize(s.db))), panelsPerShard(env.DB)]);
  const ranked = shards
    .map((shard, i) => ({ index: shard.index, size: sizes[i]!, panels: counts.get(shard.index) ?? 0 }))
    .sort((a, b) => a.size - b.size || a.panels - b.panels || a.index - b.index);
  return ranked[0]!.index;
}

/**
 * Runs a cron sweep on every shard, one after the other. A shard whose sweep fails does not
 * stop the others; the first failure is thrown once all have run, so the task still reports it.
 */
export async function forEachShard(env: Env, task: string, sweep: (db: ShardDb, index: number) => Promise<void>): Promise<void> {
  const failures: unknown[] = [];
  for (const shard of allShards(env)) {
    try {
      await sweep(shard.db, shard.index);
    } catch (error) {
      console.error(`${task}: shard ${shard.index} failed; the other shards are swept`, error);
      failures.push(error);
    }
  }
  if (failures.length) throw failures[0];
}

function shardNumbered(env: Env, index: number): ShardDb {
  const db = shardByIndex(env, index);
  if (!db) throw new Error(`the cron names shard ${index}, which has no SHARD_${index} binding`);
  return db;
}

type ShardSweep = (env: Env, db: ShardDb, index: number, now: number) => Promise<void>;
type PanelsSweep = (env: Env, db: ShardDb, index: number, panels: readonly PanelOnShard[], now: number) => Promise<void>;
type DueCheck = (env: Env, db: ShardDb, index: number, panels: readonly PanelOnShard[], now: number) => Promise<ReadonlySet<string>>;

/** A cron task whose work is per shard: `run` sweeps every shard in turn; the cron hands each shard its own message. */
export function shardTask(name: string, sweep: ShardSweep): CronTask {
  return {
    name,
    run: (env, now) => forEachShard(env, name, (db, index) => sweep(env, db, index, now)),
    shard: (env, index, now) => sweep(env, shardNumbered(env, index), index, now),
  };
}

/**
 * A cron task whose work is per panel: `shard` (optional) first, then `panels` on the shard's
 * panels in batches of PANELS_PER_CRON_BATCH, only those `due` (optional, one query per
 * PANELS_PER_DUE_CHECK panels) finds with work. `run` does it all here; the cron hands the
 * shard part to a message whose consumer sends one message per batch of due panels.
 */
export function panelTask(name: string, sweep: { shard?: ShardSweep; panels: PanelsSweep; due?: DueCheck }): CronTask {
  const shardPart = sweep.shard;
  const due = sweep.due;
  return {
    name,
    run: (env, now) =>
      forEachShard(env, name, async (db, index) => {
        await shardPart?.(env, db, index, now);
        const panels = await duePanels(await panelsOnShard(env.DB, index), due && ((chunk) => due(env, db, index, chunk, now)));
        for (let i = 0; i < panels.length; i += PANELS_PER_CRON_BATCH) await sweep.panels(env, db, index, panels.slice(i, i + PANELS_PER_CRON_BATCH), now);
      }),
    ...(shardPart ? { shard: (env: Env, index: number, now: number) => shardPart(env, shardNumbered(env, index), index, now) } : {}),
    panels: (env, index, panels, now) => sweep.panels(env, shardNumbered(env, index), index, panels, now),
    ...(due ? { due: (env: Env, index: number, panels: readonly PanelOnShard[], now: number) => due(env, shardNumbered(env, index), index, panels, now) } : {}),
  };
}
