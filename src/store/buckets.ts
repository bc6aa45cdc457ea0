import { contactBucketsStatement } from "./contacts";
import type { ShardDb } from "./shards";

/**
 * The back-fill of contact buckets on one shard (decision 0038 step 1, shard migration 0070):
 * rows written before buckets hold 0. Each function is one bounded statement (or batch) over a
 * page in key order, across the shard's panels, and setting a bucket again changes nothing.
 */

/** A contact as the back-fill reads it: enough to compute its bucket. */
export interface ContactKey {
  id: number;
  panelId: string;
  key: string;
}

/** The shard's contacts after id `afterId`, in id order. */
export async function contactKeysAfter(db: ShardDb, afterId: number, limit: number): Promise<ContactKey[]> {
  const { results } = await db
    .prepare("SELECT id, panel_id, pk_value FROM contacts WHERE id > ? ORDER BY id LIMIT ?")
    .bind(afterId, limit)
    .all<{ id: number; panel_id: string; pk_value: string }>();
  return results.map((r) => ({ id: r.id, panelId: r.panel_id, key: r.pk_value }));
}

/** Child tables indexed by contact_id first: their rows of the page's contacts. */
const BY_CONTACT = ["list_members", "segment_members", "uniqueid_contacts"] as const;
/** Child tables indexed by (panel_id, contact_id). */
const BY_PANEL_CONTACT = ["campaign_messages", "journey_instances", "journey_points", "journey_messages", "journey_split_entries", "journey_conversions", "push_optouts"] as const;
const CONTACT_BUCKET = (table: string) => `(SELECT c.bucket FROM contacts c WHERE c.id = ${table}.contact_id)`;

/**
 * Sets the buckets of a page of contacts (`[id, panel, bucket]`) and, in the same batch, copies
 * each contact's bucket to its rows in the contact-keyed tables. Events take the contact's
 * bucket unless they were recorded anonymously (a uniqueid and no identity: those take the
 * uniqueid's bucket, fillAnonymousEvents). Event guids are not filled: they expire with their
 * window (retention `eventGuids`).
 */
export async function fillContactBuckets(db: ShardDb, page: ReadonlyArray<readonly [number, string, number]>): Promise<void> {
  if (page.length === 0) return;
  const ids = JSON.stringify(page.map(([id]) => id));
  const panelsAndIds = JSON.stringify(page.map(([id, panelId]) => [panelId, id]));
  const changed = (table: string) => `bucket IS NOT ${CONTACT_BUCKET(table)}`;
  await db.batch([
    contactBucketsStatement(db, JSON.stringify(page.map(([id, , bucket]) => [id, bucket]))),
    ...BY_CONTACT.map((table) =>
      db.prepare(`UPDATE ${table} SET bucket = ${CONTACT_BUCKET(table)} WHERE contact_id IN (SELECT value FROM json_each(?1)) AND ${changed(table)}`).bind(ids),
    ),
    ...BY_PANEL_CONTACT.map((table) =>
      db
        .prepare(
          `UPDATE ${table} SET bucket = ${CONTACT_BUCKET(table)}
           WHERE (panel_id, contact_id) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1)) AND ${changed(table)}`,
        )
        .bind(panelsAndIds),
    ),
    db
      .prepare(
        `UPDATE events SET bucket = ${CONTACT_BUCKET("events")}
         WHERE contact_id IN (SELECT value FROM json_each(?1)) AND (identity IS NOT NULL OR uniqueid IS NULL) AND ${changed("events")}`,
      )
      .bind(ids),
  ]);
}

/** An event recorded with a uniqueid and no identity, whose bucket is the uniqueid's. */
export interface AnonymousEvent {
  id: number;
  panelId: string;
  uniqueid: string;
}

/**
 * The next `limit` events of the shard after id `afterId`, in id order: the anonymous ones
 * among them, and the last id read (null when none was left). Reads a window of the table,
 * whatever share of it is anonymous.
 */
export async function anonymousEventsAfter(db: ShardDb, afterId: number, limit: number): Promise<{ events: AnonymousEvent[]; lastId: number | null }> {
  const { results } = await db
    .prepare("SELECT id, panel_id, identity IS NULL AND uniqueid IS NOT NULL AS anonymous, uniqueid FROM events WHERE id > ? ORDER BY id LIMIT ?")
    .bind(afterId, limit)
    .all<{ id: number; panel_id: string; anonymous: number; uniqueid: string | null }>();
  return {
    events: results.filter((r) => r.anonymous).map((r) => ({ id: r.id, panelId: r.panel_id, uniqueid: r.uniqueid! })),
    lastId: results.at(-1)?.id ?? null,
  };
}

/** Sets events' buckets from `[id, bucket]` pairs. */
export async function setEventBuckets(db: ShardDb, idsAndBuckets: ReadonlyArray<readonly [number, number]>): Promise<void> {
  if (idsAndBuckets.length === 0) return;
  await db
    .prepare("UPDATE events SET bucket = v.value ->> 1 FROM json_each(?1) v WHERE events.id = v.value ->> 0 AND events.bucket IS NOT v.value ->> 1")
    .bind(JSON.stringify(idsAndBuckets))
    .run();
}

/** An anonymous profile's key: the panel and the uniqueid. */
export type ProfileKey = readonly [panelId: string, uniqueid: string];

/** The shard's anonymous profiles after `after`, in key order. */
export async function anonProfilesAfter(db: ShardDb, after: ProfileKey | null, limit: number): Promise<ProfileKey[]> {
  const query = after
    ? db.prepare("SELECT panel_id, uniqueid FROM anon_profiles WHERE (panel_id, uniqueid) > (?1, ?2) ORDER BY panel_id, uniqueid LIMIT ?3").bind(after[0], after[1], limit)
    : db.prepare("SELECT panel_id, uniqueid FROM anon_profiles ORDER BY panel_id, uniqueid LIMIT ?1").bind(limit);
  const { results } = await query.all<{ panel_id: string; uniqueid: string }>();
  return results.map((r) => [r.panel_id, r.uniqueid] as const);
}

/** Sets anonymous profiles' buckets from `[panel, uniqueid, bucket]` triples. */
export async function setAnonProfileBuckets(db: ShardDb, rows: ReadonlyArray<readonly [string, string, number]>): Promise<void> {
  if (rows.length === 0) return;
  await db
    .prepare(
      `UPDATE anon_profiles SET bucket = v.value ->> 2 FROM json_each(?1) v
       WHERE anon_profiles.panel_id = v.value ->> 0 AND anon_profiles.uniqueid = v.value ->> 1 AND anon_profiles.bucket IS NOT v.value ->> 2`,
    )
    .bind(JSON.stringify(rows))
    .run();
}

/** A device's key (push_subscriptions): the panel, the kind and the address. */
export type DeviceKey = readonly [panelId: string, kind: string, address: string];

/** A device as the back-fill reads it: its key and the key its bucket is of (the contact's, else the uniqueid). */
export interface DeviceOwner {
  key: DeviceKey;
  owner: string | null;
}

/** The shard's push devices after `after`, in key order. */
export async function pushDevicesAfter(db: ShardDb, after: DeviceKey | null, limit: number): Promise<DeviceOwner[]> {
  const columns = "SELECT panel_id, kind, address, COALESCE(contact_key, uniqueid) AS owner FROM push_subscriptions";
  const query = after
    ? db.prepare(`${columns} WHERE (panel_id, kind, address) > (?1, ?2, ?3) ORDER BY panel_id, kind, address LIMIT ?4`).bind(after[0], after[1], after[2], limit)
    : db.prepare(`${columns} ORDER BY panel_id, kind, address LIMIT ?1`).bind(limit);
  const { results } = await query.all<{ panel_id: string; kind: string; address: string; owner: string | null }>();
  return results.map((r) => ({ key: [r.panel_id, r.kind, r.address] as const, owner: r.owner }));
}

/** Sets push devices' buckets from `[panel, kind, address, bucket]` rows. */
export async function setPushDeviceBuckets(db: ShardDb, rows: ReadonlyArray<readonly [string, string, string, number]>): Promise<void> {
  if (rows.length === 0) return;
  await db
    .prepare(
      `UPDATE push_subscriptions SET bucket = v.value ->> 3 FROM json_each(?1) v
       WHERE push_subscriptions.panel_id = v.value ->> 0 AND push_subscriptions.kind = v.value ->> 1 AND push_subscriptions.address = v.value ->> 2
         AND push_subscriptions.bucket IS NOT v.value ->> 3`,
    )
    .bind(JSON.stringify(rows))
    .run();
}
