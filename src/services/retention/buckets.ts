import { contactBucket } from "../../domain/partitions";
import {
  anonProfilesAfter,
  anonymousEventsAfter,
  contactKeysAfter,
  fillContactBuckets,
  pushDevicesAfter,
  setAnonProfileBuckets,
  setEventBuckets,
  setPushDeviceBuckets,
  type DeviceKey,
  type ProfileKey,
} from "../../store/buckets";
import { bucketFill, saveBucketFill, type BucketFill, type BucketFillPhase } from "../../store/panel-partitions";
import type { ShardDb } from "../../store/shards";

/**
 * The back-fill of contact buckets (decision 0038 step 1): rows written before shard migration
 * 0070 hold bucket 0. Housekeeping runs a few bounded steps per shard and minute, in key order,
 * saving the cursor in the control database after each; a step run twice sets the same
 * buckets again. Phases: contacts (and their child rows) by contact id, then events recorded
 * anonymously by event id, then anonymous profiles by key and push devices by key (shard
 * migration 0110; the same phase, its cursor `{"devices": key}`, as the control database's
 * phases are fixed); then the shard is done and costs one read a run.
 */
export const BUCKET_FILL = {
  /** Contacts per step: their child rows are updated in the same batch, by contact. */
  contacts: 500,
  /** Events read per step (a window of the table; the anonymous ones among them are updated). */
  events: 5000,
  /** Anonymous profiles, then push devices, per step. */
  profiles: 1000,
  /** Steps per shard per run. */
  steps: 8,
};
export type BucketFillTuning = typeof BUCKET_FILL;

/** One step of the phase from `fill`; answers where the next starts. */
async function step(db: ShardDb, fill: BucketFill, tuning: BucketFillTuning): Promise<BucketFill> {
  switch (fill.phase) {
    case "contacts": {
      const page = await contactKeysAfter(db, fill.cursor === null ? 0 : (JSON.parse(fill.cursor) as number), tuning.contacts);
      await fillContactBuckets(db, page.map((c) => [c.id, c.panelId, contactBucket(c.panelId, c.key)] as const));
      return page.length < tuning.contacts ? { phase: "anonymous", cursor: null } : { phase: "contacts", cursor: JSON.stringify(page.at(-1)!.id) };
    }
    case "anonymous": {
      const { events, lastId } = await anonymousEventsAfter(db, fill.cursor === null ? 0 : (JSON.parse(fill.cursor) as number), tuning.events);
      await setEventBuckets(db, events.map((e) => [e.id, contactBucket(e.panelId, e.uniqueid)] as const));
      return lastId === null ? { phase: "profiles", cursor: null } : { phase: "anonymous", cursor: JSON.stringify(lastId) };
    }
    case "profiles": {
      const cursor = fill.cursor === null ? null : (JSON.parse(fill.cursor) as ProfileKey | { devices: DeviceKey | null });
      if (cursor !== null && "devices" in cursor) return devicesStep(db, cursor.devices, tuning);
      const page = await anonProfilesAfter(db, cursor, tuning.profiles);
      await setAnonProfileBuckets(db, page.map(([panelId, uniqueid]) => [panelId, uniqueid, contactBucket(panelId, uniqueid)] as const));
      return { phase: "profiles", cursor: JSON.stringify(page.length < tuning.profiles ? { devices: null } : page.at(-1)) };
    }
    case "done":
      return fill;
  }
}

/**
 * A page of push devices: each takes the bucket of the key its shard was chosen by, the
 * contact's when it has one, else the uniqueid's (services/channels/push/subscriptions.ts).
 */
async function devicesStep(db: ShardDb, after: DeviceKey | null, tuning: BucketFillTuning): Promise<BucketFill> {
  const page = await pushDevicesAfter(db, after, tuning.profiles);
  await setPushDeviceBuckets(db, page.flatMap(({ key: [panelId, kind, address], owner }) => (owner === null ? [] : [[panelId, kind, address, contactBucket(panelId, owner)] as const])));
  return page.length < tuning.profiles ? { phase: "done", cursor: null } : { phase: "profiles", cursor: JSON.stringify({ devices: page.at(-1)!.key }) };
}

/** Runs up to `tuning.steps` steps of the back-fill on shard `shard`; answers the phase it reached. */
export async function fillBuckets(env: Env, db: ShardDb, shard: number, now: number, tuning: BucketFillTuning = BUCKET_FILL): Promise<BucketFillPhase> {
  let fill = await bucketFill(env.DB, shard);
  for (let i = 0; i < tuning.steps && fill.phase !== "done"; i++) {
    fill = await step(db, fill, tuning);
    await saveBucketFill(env.DB, shard, fill, now);
  }
  return fill.phase;
}
