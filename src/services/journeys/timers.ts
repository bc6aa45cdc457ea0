import { shardTask } from "../access/shards";
import { fireDuePoints, takeFreePoints } from "../../store/journeys/points";
import { journeysToRescan, journeysToScan } from "../../store/journeys/scans";
import { rescanSegmentPage, scanSegment } from "./contact-triggers";
import { LIVE_JOURNEYS_CACHE_MS } from "./live-journeys";
import { continuePoints, POINT_LEASE_MS } from "./engine";
import { redriveFreePoints } from "./points";

/** Points ended this long ago and still not continued were held (a pause) or lost (a crash). */
export const LEFT_BEHIND_MS = POINT_LEASE_MS;
/**
 * Points the cron continues itself per run, of those left behind and of due timers each (they
 * are usually few, and then go on at once); the rest go to the JOURNEYS queue.
 */
const POINTS_INLINE = 200;
/** Further due timers are fired in pages this size and handed to the JOURNEYS queue. */
const FIRE_PAGE = 1000;
const FIRE_PAGES = 20;
const SCANS_PER_RUN = 5;

/**
 * The per-minute cron of journeys: fires due waits (timeout) and delays (ended), continuing a
 * first page itself and handing the rest to the JOURNEYS queue; continues a first page of
 * points left behind (their holder died, or a pause held them) and hands the rest to the queue
 * in pages (points.ts); moves segment entry scans on (each shard's, of the journeys' rows and
 * copies there). Timers are rows in D1 with a due time,
 * so they survive restarts and fire within a minute of due time. Each part runs even when
 * another failed.
 */
export const journeyTimers = shardTask("journey-timers", async (env, db, index, now) => {
  const failures: unknown[] = [];
  const part = async (work: () => Promise<unknown>) => {
    try {
      await work();
    } catch (error) {
      failures.push(error);
    }
  };
  // Left behind first, so that timers this run ends free below go to the queue.
  await part(async () => continuePoints(env, db, await takeFreePoints(db, {}, now, now + POINT_LEASE_MS, POINTS_INLINE), now));
  await part(async () => {
    const fired = await fireDuePoints(db, now, POINTS_INLINE, now + POINT_LEASE_MS);
    // More are due than a run continues itself: the rest are ended free, for the queue.
    for (let page = 0; fired.length === POINTS_INLINE && page < FIRE_PAGES; page++) {
      if ((await fireDuePoints(db, now, FIRE_PAGE, now)).length < FIRE_PAGE) break;
    }
    await continuePoints(env, db, fired, now);
  });
  await part(() => redriveFreePoints(env, db, index, now));
  // Each scan a part of its own: one refused (a split's fence meeting a writer holding the old map) leaves the others going.
  await part(async () => {
    for (const journey of await journeysToScan(db, SCANS_PER_RUN)) await part(() => scanSegment(env, journey, now, { shard: index, db }));
  });
  // Finished scans that passed contacts while some isolate did not know the journey: a page of those again, once all do.
  await part(async () => {
    for (const journey of await journeysToRescan(db, now, LIVE_JOURNEYS_CACHE_MS, SCANS_PER_RUN)) await part(() => rescanSegmentPage(env, journey, journey.rescanUpto, now, { shard: index, db }));
  });
  if (failures.length) throw failures[0];
});

