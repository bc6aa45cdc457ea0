import { panelDb } from "../access/shards";
import { nudgeListEntries } from "../journeys/list-entries";
import type { PipelineStep } from "../pipeline/steps";
import { refreshContacts } from "./membership";
import { panelSegments } from "./panel-segments";

/**
 * The segments stage of the event pipeline: the contacts the events are about are checked
 * again against the panel's segments that read events (behaviour and engagement), so
 * membership is current within the pipeline's delay. Entering a segment leaves its journeys'
 * entries (migration 0030), which the JOURNEYS queue takes up. Idempotent: re-running it for
 * the same events finds the memberships already as they should be.
 */
export const segmentsPipelineStep: PipelineStep = {
  name: "segments",
  async hasWork(env, panelId) {
    return (await panelSegments(await panelDb(env, panelId), panelId)).some((s) => s.dependencies.events);
  },
  async run(env, events) {
    const first = events[0];
    if (!first) return;
    const contacts = events.flatMap((e) => (e.contactId === null ? [] : [e.contactId]));
    const entered = await refreshContacts(env, first.panelId, contacts, ["events"], Date.now());
    if (entered > 0) await nudgeListEntries(env, first.panelId);
  },
};
