import { mergedPage, panelOwningShards } from "../access/partitions";
import type { JourneyPanel } from "./mirror";
import { getJourney, listJourneys, type Journey } from "../../store/journeys/definitions";
import { journeyCounters, type JourneyCounters } from "../../store/journeys/instances";
import { listMessages, type JourneyMessage } from "../../store/journeys/messages";
import { listVersions, type JourneyVersion } from "../../store/journeys/versions";
import type { ShardDb } from "../../store/shards";
import { compareStoredText } from "../../store/sql";

/**
 * A journey's counters over the panel's shards (decision 0038 step 6): the home's (`db`) and
 * each partition shard's, where its contacts' instances are, summed; one batch a shard, each
 * kept to the buckets the map gives it (a split's source holds copies of the moved rows until
 * cleaning, decision 0047). A panel without a map: the home's alone, as before.
 */
export async function countersAcross(env: Env, db: ShardDb, panel: JourneyPanel, journeyId: string): Promise<JourneyCounters> {
  const each = await Promise.all(panelOwningShards(env, panel, db).map((shard) => journeyCounters(shard.db, panel.id, journeyId, shard.buckets)));
  return each.reduce(addCounters);
}

function addCounters(a: JourneyCounters, b: JourneyCounters): JourneyCounters {
  const steps = { ...a.steps };
  for (const [id, step] of Object.entries(b.steps)) {
    const sum = steps[id] ?? { acted: 0, waiting: 0 };
    steps[id] = { acted: sum.acted + step.acted, waiting: sum.waiting + step.waiting };
  }
  return { entered: a.entered + b.entered, active: a.active + b.active, completed: a.completed + b.completed, exited: a.exited + b.exited, converted: a.converted + b.converted, steps };
}

/** The panel's journeys, each with its counters. */
export async function journeysWithCounters(env: Env, db: ShardDb, panel: JourneyPanel): Promise<{ journey: Journey; counters: JourneyCounters }[]> {
  const journeys = await listJourneys(db, panel.id);
  const counters = await Promise.all(journeys.map((j) => countersAcross(env, db, panel, j.id)));
  return journeys.map((journey, i) => ({ journey, counters: counters[i]! }));
}

/** A journey with its counters; null when the panel has no such journey. */
export async function journeyWithCounters(env: Env, db: ShardDb, panel: JourneyPanel, journeyId: string): Promise<{ journey: Journey; counters: JourneyCounters } | null> {
  const journey = await getJourney(db, panel.id, journeyId);
  return journey ? { journey, counters: await countersAcross(env, db, panel, journey.id) } : null;
}

/** A journey's versions, newest first; null when the panel has no such journey. */
export async function versionsOfJourney(db: ShardDb, panelId: string, journeyId: string): Promise<JourneyVersion[] | null> {
  const journey = await getJourney(db, panelId, journeyId);
  return journey ? listVersions(db, panelId, journey.id) : null;
}

/**
 * The panel's newest journey messages (on `channel` when given): each message is on its
 * contact's shard, so each shard's newest are merged, in the order one shard lists them. Each
 * shard answers only the buckets its map gives it (panelOwningShards): until a split's cleaning
 * its source's copies of the moved messages were listed beside the target's (decision 0047).
 */
export async function newestJourneyMessages(env: Env, db: ShardDb, panel: JourneyPanel, channel: string | undefined, limit: number): Promise<JourneyMessage[]> {
  const newestFirst = (a: JourneyMessage, b: JourneyMessage) => b.createdAt - a.createdAt || compareStoredText(a.msgid, b.msgid);
  return mergedPage(panelOwningShards(env, panel, db), (shard) => listMessages(shard.db, panel.id, channel, limit, shard.buckets), newestFirst, limit);
}
