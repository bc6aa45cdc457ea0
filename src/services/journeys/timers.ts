import type { CronTask } from "../../lib/tasks";
import { fireDuePoints, pointsLeftBehind } from "../../store/journeys/points";
import { journeysToScan } from "../../store/journeys/scans";
import { scanSegment } from "./contact-triggers";
import { continuePoints } from "./engine";

/** Points ended this long ago and still not continued were held (a pause) or lost (a crash). */
export const LEFT_BEHIND_MS = 60_000;
const POINTS_PER_ROUND = 200;
const ROUNDS = 10;
const SCANS_PER_RUN = 5;

/**
 * The per-minute cron of journeys: fires due waits (timeout) and delays (ended), continues
 * points left behind, and moves segment entry scans on. Timers are rows in D1 with a due
 * time, so they survive restarts and fire within a minute of due time.
 */
export const journeyTimers: CronTask = {
  name: "journey-timers",
  async run(env, now) {
    for (let round = 0; round < ROUNDS; round++) {
      const fired = await fireDuePoints(env.DB, now, POINTS_PER_ROUND);
      await continuePoints(env, fired, now);
      if (fired.length < POINTS_PER_ROUND) break;
    }
    await continuePoints(env, await pointsLeftBehind(env.DB, now - LEFT_BEHIND_MS, POINTS_PER_ROUND), now);
    for (const journey of await journeysToScan(env.DB, SCANS_PER_RUN)) await scanSegment(env, journey, now);
  },
};
