import { mirrorShards, type MirrorShard } from "../access/partitions";
import { bucketRangesOn } from "../../domain/partitions";
import type { Panel } from "../../store/panels";
import { journeysToMirror, mirrorJourneysStatements, stopInstancesStatements } from "../../store/journeys/definitions";
import type { ShardDb } from "../../store/shards";

/**
 * Journey definitions on a panel's partition shards (decision 0038 step 3, 0041): a contact's
 * instances, points, messages and split entries live on its partition's shard, where the
 * engine reads the journey and the version its instance walks, and where `journey_instances`
 * names `journeys` by foreign key and the membership trigger reads running list journeys. So
 * every shard holding a partition other than the home keeps a copy of the panel's journeys
 * and their versions, written here in the service call that changed the home, after it.
 */

/** The panel as the journey services need it: its id and where its partitions are. */
export type JourneyPanel = Pick<Panel, "id" | "shard" | "partitions">;

/**
 * Copies journeys `ids` as the home `db` has them now onto every mirror of the panel, one
 * batch each; a journey now stopped also ends its instances there, as its stop did on the
 * home. Returns the mirrors. A panel without a map: nothing read or written.
 */
export async function mirrorJourneys(env: Env, db: ShardDb, panel: JourneyPanel, ids: readonly string[], stopped: readonly string[] = [], now = Date.now()): Promise<MirrorShard[]> {
  const mirrors = mirrorShards(env, panel);
  if (mirrors.length === 0 || ids.length === 0) return mirrors;
  const journeys = await journeysToMirror(db, panel.id, ids);
  await Promise.all(
    mirrors.map((m) => {
      // Within the mirror's buckets: a split's source's fenced copies are cleaning's (stopInstancesStatements).
      const buckets = bucketRangesOn(panel.partitions, m.shard);
      return m.db.batch([...mirrorJourneysStatements(m.db, panel.id, journeys), ...stopped.flatMap((id) => stopInstancesStatements(m.db, panel.id, id, now, buckets))]);
    }),
  );
  return mirrors;
}
