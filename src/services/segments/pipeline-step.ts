import { panelDb } from "../access/shards";
import { nudgeListEntries } from "../journeys/list-entries";
import type { PipelineStep } from "../pipeline/steps";
import { refreshAfterEvents } from "./membership";
import { panelSegments } from "./panel-segments";

/**
 * The segments stage of the event pipeline: each contact the events are about is checked
 * again against the panel's segments that its events concern (a behaviour condition on that
 * activity, an engagement condition counting that email event), so membership is current
 * within the pipeline's delay. Entering a segment leaves its journeys'
 * entries (migration 0030), which the JOURNEYS queue takes up. Idempotent: re-running it for
 * the same events finds the memberships already as they should be. Routed (decision 0038): the
 * events of a partition's batch are checked on its shard, which holds their contacts and a mirror
 * of the segments; the definitions are the home's.
 */
export const segmentsPipelineStep: PipelineStep = {
  name: "segments",
  // A piece costs the same few statements whatever its size (one read of the pairs whose match
  // changed, then their writes): 1,000 events (one upload call) per piece.
  piece: 1_000,
  partitioned: true,
  async hasWork(env, panelId) {
    return (await panelSegments(await panelDb(env, panelId), panelId)).some((s) => s.dependencies.events);
  },
  async run(env, events, place) {
    const first = events[0];
    if (!first) return;
    const entered = await refreshAfterEvents(env, first.panelId, events, Date.now(), place?.db);
    // The entries are left on the shard the members were written on.
    if (entered > 0) await nudgeListEntries(env, first.panelId, place && !place.home ? place.shard : undefined);
  },
};
