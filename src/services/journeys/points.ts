import type { ShardDb } from "../../store/shards";
import { panelHome } from "../access/shards";
import { namedPanelShard } from "../access/partitions";
import { sendAll } from "../../lib/tasks";
import type { Journey } from "../../store/journeys/definitions";
import { panelsWithFreePoints, takeFreePoints } from "../../store/journeys/points";
import { continuePoints, POINT_LEASE_MS, type EngineEnv } from "./engine";

/**
 * Points whose continuation nobody holds: their holder died (a crash after instances were
 * written, mid-continuation, mid-cron), or they were ended while the journey was paused, or the
 * cron ended more timers than it continues itself. The cron hands them to the JOURNEYS queue
 * in pages, several messages per panel at once, so a backlog drains at the consumers' speed.
 */

/** Points one JOURNEYS message continues: a page, as for list entries (about 5 to 20 D1 statements each). */
export const POINTS_PER_MESSAGE = 50;
/** Messages a panel's backlog gets from one re-drive; each passes the work on while its pages come back full. */
export const CHAINS_PER_PANEL = 5;
const PANELS_PER_SWEEP = 100;

export interface PointsNudge {
  type: "points";
  panel: string;
  /** The shard holding the points (a partition's, decision 0038); absent or the home's: the home. */
  shard?: number;
}

export function pointsNudge(panelId: string, shard?: number): PointsNudge {
  return { type: "points", panel: panelId, ...(shard === undefined ? {} : { shard }) };
}

/** Continues one leased page of the panel's free points on `shard` (absent: its home); returns how many the page held. */
export async function continueFreePoints(env: EngineEnv, panelId: string, now: number, shard?: number): Promise<number> {
  const { panel } = await panelHome(env, panelId);
  const { db } = namedPanelShard(env, panel, shard);
  const points = await takeFreePoints(db, { panelId }, now, now + POINT_LEASE_MS, POINTS_PER_MESSAGE);
  // A failure leaves the page leased; its points come back when the lease runs out.
  await continuePoints(env, db, points, now);
  return points.length;
}

/**
 * Cron: nudges every panel with free points on shard `index`, one message per page of its
 * backlog (up to CHAINS_PER_PANEL), each naming the shard (a partition's points are there).
 */
export async function redriveFreePoints(env: Pick<Env, "JOURNEYS">, db: ShardDb, index: number, now: number): Promise<void> {
  const panels = await panelsWithFreePoints(db, now, POINTS_PER_MESSAGE * CHAINS_PER_PANEL, PANELS_PER_SWEEP);
  const nudges = panels.flatMap(({ panelId, free }) => Array.from({ length: Math.min(CHAINS_PER_PANEL, Math.ceil(free / POINTS_PER_MESSAGE)) }, () => pointsNudge(panelId, index)));
  if (nudges.length) await sendAll(env.JOURNEYS, nudges);
}

/**
 * A journey running again: its held points on `at` (the home, or a partition's shard) go on, a
 * first page at once and the rest through the queue.
 */
export async function resumeHeldPoints(env: EngineEnv & Pick<Env, "JOURNEYS">, journey: Pick<Journey, "id" | "panelId">, now: number, at: { shard: number; db: ShardDb }): Promise<void> {
  const { db } = at;
  const page = 500;
  const points = await takeFreePoints(db, { journeyId: journey.id }, now, now + POINT_LEASE_MS, page);
  if (points.length === page) await sendAll(env.JOURNEYS, Array.from({ length: CHAINS_PER_PANEL }, () => pointsNudge(journey.panelId, at.shard)));
  await continuePoints(env, db, points, now);
}
