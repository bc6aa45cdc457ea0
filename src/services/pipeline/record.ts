import { panelHome } from "../access/shards";
import { panelShardPlaces, splitByShard, type PanelPlace, type ShardPart } from "../access/partitions";
import { shardOf, type ShardDb } from "../../store/shards";
import { contactsByIds } from "../../store/contacts";
import { contactBucket, type Partition } from "../../domain/partitions";
import { EVENT_CHANNELS, MAX_GUID_LENGTH, type NewEvent } from "../../domain/events";
import { uuidV7 } from "../../lib/random";
import { appendEventBatches, type EventToRecord } from "../../store/event-batches";
import { logNotEnqueued, nudgeEventBatches, nudgeEventBatchesSoon } from "./nudge";
import { metrics } from "../../lib/observability/metrics";

export interface RecordResult {
  /** Each event's guid, in the order of the events: the one given, or the one generated. */
  guids: string[];
  /** Events that will be stored (and run through the pipeline). */
  recorded: number;
  /** Events not stored because the panel already had their guid (or the call repeated it). */
  duplicates: number;
  /** Which of the events, by position, were duplicates. */
  duplicateAt: boolean[];
}

export interface RecordOptions {
  /** One clock reading for the whole call (received_at). */
  now?: number;
  /**
   * Where to hand the queue send, e.g. `(p) => exec.waitUntil(p)`, so the caller answers once
   * the events are stored without waiting for the queue; the send then gathers the batches of
   * other calls of the isolate (nudgeEventBatchesSoon). Without it the send is awaited. A
   * send that fails is logged, not thrown: the events are stored, and the re-drive cron
   * enqueues them again (src/services/pipeline/redrive.ts).
   */
  defer?: (work: Promise<unknown>) => void;
}

function assertRecordable(event: NewEvent): void {
  // Programming errors of a caller, not client input: callers validate what clients send.
  if (!(EVENT_CHANNELS as readonly string[]).includes(event.channel)) throw new Error(`recordEvents: unknown channel ${event.channel}`);
  if (event.contactId === undefined && !event.identity && !event.uniqueid) throw new Error("recordEvents: an event needs contactId, identity or uniqueid");
  if (event.guid !== undefined && (event.guid === "" || event.guid.length > MAX_GUID_LENGTH)) throw new Error("recordEvents: guid must be 1 to 255 characters");
  if (!Number.isFinite(event.occurredAt)) throw new Error("recordEvents: occurredAt must be epoch milliseconds");
}

/**
 * THE entry of every event of the service (CONTRACT 7). Records the events of one panel as
 * one batch in D1 (all or none) and returns once that is durably stored; then nudges the
 * EVENTS queue, whose consumer stores them as event rows (creating the contacts of unknown
 * identities and joining anonymous histories) and runs the pipeline steps. An event whose
 * guid the panel already has, or that the call repeats, is not stored twice: it counts as a
 * duplicate.
 *
 * Why a batch and not a row per event: the request then writes one row whatever its size
 * (a row per event would make a 1,000-event post insert 1,000 indexed rows and their contacts
 * before answering),
 * and every later stage works per batch (bench:activity).
 */
export async function recordEvents(
  env: Env,
  /**
   * With its directory entry (shard and partition map) when the caller has it (an API call's
   * panel), else found by id.
   */
  panel: { id: string; shard?: number; partitions?: readonly Partition[] },
  events: readonly NewEvent[],
  options: RecordOptions = {},
): Promise<RecordResult> {
  if (events.length === 0) return { guids: [], recorded: 0, duplicates: 0, duplicateAt: [] };
  events.forEach(assertRecordable);
  const now = options.now ?? Date.now();
  const seen = new Set<string>();
  const duplicateAt: boolean[] = [];
  const toRecord: EventToRecord[] = [];
  const guids = events.map((event) => {
    // Time-ordered, so guids of one panel sort by when they were recorded.
    const guid = event.guid ?? uuidV7(now);
    const repeated = event.guid !== undefined && seen.has(guid);
    // Only a caller's guid can repeat; generated ones are random (hashing those was a few % of a batch).
    if (event.guid !== undefined) seen.add(guid);
    duplicateAt.push(repeated);
    // Written out, not spread: a spread of each event was a large share of recording's CPU.
    if (!repeated) {
      toRecord.push({
        channel: event.channel,
        name: event.name,
        occurredAt: event.occurredAt,
        activityId: event.activityId,
        contactId: event.contactId,
        identity: event.identity,
        uniqueid: event.uniqueid,
        source: event.source,
        params: event.params,
        guid,
        claimed: event.guid !== undefined,
        msgid: event.msgid,
        campaignId: event.campaignId,
        journeyId: event.journeyId,
        assetId: event.assetId,
      });
    }
    return guid;
  });
  const home = panel.shard !== undefined && panel.partitions !== undefined ? { id: panel.id, shard: panel.shard, partitions: panel.partitions } : (await panelHome(env, panel.id)).panel;
  // A panel without a map (every panel made before them): one batch on its home, as always;
  // no event is looked at again for its partition.
  const groups = home.partitions.length === 0 ? [{ shard: home.shard, db: shardOf(env, home), items: toRecord }] : await byPartitionShard(env, home, toRecord);
  const taken = new Set<string>();
  const recordOn = async ({ shard: number, db, items }: { shard: number; db: ShardDb; items: EventToRecord[] }) => {
    const shard = number === home.shard ? undefined : number;
    const appended = await appendEventBatches(db, panel.id, items, now);
    for (const guid of appended.taken) taken.add(guid);
    const { batchIds, sizes } = appended;
    if (batchIds.length && options.defer) nudgeEventBatchesSoon(env.EVENTS, panel.id, batchIds, sizes, options.defer, shard);
    else if (batchIds.length) await nudgeEventBatches(env.EVENTS, panel.id, batchIds, sizes, shard).catch(logNotEnqueued(panel.id, batchIds));
  };
  // One shard (every panel without a map) is awaited alone, without Promise.all's arrays and promises.
  await (groups.length === 1 ? recordOn(groups[0]!) : Promise.all(groups.map(recordOn)));
  let duplicates = 0;
  events.forEach((event, index) => {
    if (event.guid !== undefined && taken.has(event.guid)) duplicateAt[index] = true;
    if (duplicateAt[index]) duplicates++;
  });
  if (events.length > duplicates) metrics(env).events(events[0]!.channel, events.length - duplicates);
  return { guids, recorded: events.length - duplicates, duplicates, duplicateAt };
}

/**
 * The events of a panel with a partition map, grouped by the shard of their contact's partition
 * (decision 0038 step 3), the home's first: an event naming an identity goes to that key's
 * partition, one naming only a uniqueid to the uniqueid's (where the anonymous profile lives),
 * the bucket event-batches.ts records as `b`. An event naming its contact by id only (email
 * tracking, journey and channel reports: the caller holds the contact's id, not its key) goes
 * to the shard that holds that contact: ids are unique in the region (decision 0030), so it is
 * on exactly one, found by one read per shard of the panel; an id no shard holds goes to the
 * home, stored without a contact as an unknown id always was. Two partitions on one shard
 * share its batch.
 */
async function byPartitionShard(env: Env, panel: PanelPlace & { id: string }, events: readonly EventToRecord[]): Promise<ShardPart<EventToRecord>[]> {
  const keyed: EventToRecord[] = [];
  const byId: EventToRecord[] = [];
  for (const event of events) (event.identity ?? event.uniqueid) == null ? byId.push(event) : keyed.push(event);
  const { home, elsewhere } = splitByShard(env, panel, keyed, (event) => contactBucket(panel.id, (event.identity ?? event.uniqueid)!));
  const groups: ShardPart<EventToRecord>[] = [{ shard: panel.shard, db: shardOf(env, panel), items: [...home] }, ...elsewhere];
  if (byId.length) {
    const shards = panelShardPlaces(env, panel);
    const ids = byId.map((event) => event.contactId!);
    const found = await Promise.all(shards.map(async (place) => new Set((await contactsByIds(place.db, panel.id, ids)).keys())));
    for (const event of byId) {
      const place = shards.find((_, i) => found[i]!.has(event.contactId!)) ?? shards[0]!;
      const group = groups.find((g) => g.shard === place.shard);
      if (group) group.items.push(event);
      else groups.push({ shard: place.shard, db: place.db, items: [event] });
    }
  }
  return groups.filter((group) => group.items.length > 0);
}
