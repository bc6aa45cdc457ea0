import { partitionOfBucket } from "../../domain/partitions";
import { getPanel } from "../../store/panels";
import { shardOf } from "../../store/shards";
import { appendRecordedEvents, batchesToReroute, keepRecordedEvents, RECORDED_KEYS, type RecordedEvent } from "../../store/event-batches";
import type { PanelShard } from "../access/partitions";
import { logNotEnqueued, nudgeEventBatches } from "./nudge";

/**
 * Hands on the events of batches set apart on `from` (takeEventBatches' guard: an event's
 * bucket is not one of `from`'s) to the shard the panel's map gives their bucket now, read
 * from the directory, not the isolate's cache, since a cache may be what recorded them here
 * (decision 0047: a batch pending at a split's switch, or recorded by an isolate holding the
 * old map). Per batch: the events of each other shard become a new batch there, every event
 * claiming its guid, and nudged naming that shard; then the batch here keeps only its own
 * events (keepRecordedEvents). Exactly once across a crash or a retry: a hand-off repeated
 * before the batch was rewritten finds the guids claimed there and stores nothing twice.
 * An event is placed by `b`, the bucket of its identity (else its uniqueid), as recordEvents
 * places it; `ub` does not move it: the link of a uniqueid to an identity lives with the identity.
 * An event naming its contact by id only carries no bucket and stays.
 */
export async function rerouteBatches(env: Env, panelId: string, from: PanelShard, ids: readonly number[], lease: string, now: number): Promise<void> {
  const panel = await getPanel(env.DB, panelId);
  if (!panel) throw new Error(`no panel with id "${panelId}" in the directory`);
  const shardOfBucket = (bucket: number) => (panel.partitions.length ? partitionOfBucket(panel.partitions, bucket).shard : panel.shard);
  for (const batch of await batchesToReroute(from.db, panelId, ids, lease)) {
    const kept: RecordedEvent[] = [];
    const elsewhere = new Map<number, RecordedEvent[]>();
    for (const event of batch.events) {
      const bucket = event[RECORDED_KEYS.bucket];
      const shard = typeof bucket === "number" ? shardOfBucket(bucket) : from.shard;
      // A claimed event whose claim another batch holds is a duplicate, never stored: it stays and is skipped here.
      const duplicate = event[RECORDED_KEYS.claimed] !== undefined && !batch.claims.has(event[RECORDED_KEYS.guid] as string);
      if (shard === from.shard || duplicate) kept.push(event);
      else elsewhere.set(shard, [...(elsewhere.get(shard) ?? []), event]);
    }
    for (const [shard, events] of elsewhere) {
      const { batchIds, sizes } = await appendRecordedEvents(shardOf(env, { shard }), panelId, events, batch.receivedAt, now);
      // A send that fails leaves them to the re-drive, which sweeps every shard of the panel.
      await nudgeEventBatches(env.EVENTS, panelId, batchIds, sizes, shard === panel.shard ? undefined : shard).catch(logNotEnqueued(panelId, batchIds));
    }
    await keepRecordedEvents(from.db, panelId, batch.id, lease, kept);
  }
}
