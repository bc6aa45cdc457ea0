import type { ShardDb } from "./shards";
import type { BucketRanges } from "../domain/partitions";
import { fencedCopyHere } from "./panel-move/triggers";

/** A panel's push setup as stored; private keys stay encrypted here. */
export interface PushSettingsRecord {
  panelId: string;
  vapidSubject: string | null;
  vapidPublicKey: string | null;
  vapidPrivateEnc: string | null;
  fcmProjectId: string | null;
  fcmClientEmail: string | null;
  fcmPrivateKeyEnc: string | null;
  updatedAt: number;
}

interface SettingsRow {
  panel_id: string;
  vapid_subject: string | null;
  vapid_public_key: string | null;
  vapid_private_enc: string | null;
  fcm_project_id: string | null;
  fcm_client_email: string | null;
  fcm_private_key_enc: string | null;
  updated_at: number;
}

export async function getPushSettings(db: ShardDb, panelId: string): Promise<PushSettingsRecord | null> {
  const row = await db.prepare("SELECT * FROM push_settings WHERE panel_id = ?").bind(panelId).first<SettingsRow>();
  if (!row) return null;
  return {
    panelId: row.panel_id,
    vapidSubject: row.vapid_subject,
    vapidPublicKey: row.vapid_public_key,
    vapidPrivateEnc: row.vapid_private_enc,
    fcmProjectId: row.fcm_project_id,
    fcmClientEmail: row.fcm_client_email,
    fcmPrivateKeyEnc: row.fcm_private_key_enc,
    updatedAt: row.updated_at,
  };
}

export async function putPushSettings(db: ShardDb, s: PushSettingsRecord): Promise<void> {
  await db
    .prepare(
      `INSERT INTO push_settings (panel_id, vapid_subject, vapid_public_key, vapid_private_enc, fcm_project_id, fcm_client_email, fcm_private_key_enc, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (panel_id) DO UPDATE SET vapid_subject = excluded.vapid_subject, vapid_public_key = excluded.vapid_public_key,
         vapid_private_enc = excluded.vapid_private_enc, fcm_project_id = excluded.fcm_project_id, fcm_client_email = excluded.fcm_client_email,
         fcm_private_key_enc = excluded.fcm_private_key_enc, updated_at = excluded.updated_at`,
    )
    .bind(s.panelId, s.vapidSubject, s.vapidPublicKey, s.vapidPrivateEnc, s.fcmProjectId, s.fcmClientEmail, s.fcmPrivateKeyEnc, s.updatedAt)
    .run();
}

export type PushKind = "web" | "app";

/** A browser's subscription (web) or an app install's FCM token (app), and whose it is. */
export interface PushSubscription {
  panelId: string;
  kind: PushKind;
  /** The web subscription's endpoint, or the FCM token. */
  address: string;
  p256dh: string | null;
  auth: string | null;
  platform: string | null;
  contactKey: string | null;
  uniqueid: string | null;
}

/**
 * A subscription as written: with the bucket of the key its shard was chosen by (the contact's
 * key, else the uniqueid; decision 0038), so a partition move carries it with its contact.
 */
export type StoredPushSubscription = PushSubscription & { bucket: number };

/**
 * Records the subscription; one seen before (the same endpoint or token) takes the new keys and
 * owner. A row keeps its contact's key, and with it that key's bucket, when a later call names
 * only a uniqueid (the back-fill's choice too: store/buckets.ts).
 */
export async function putPushSubscription(db: ShardDb, s: StoredPushSubscription, now: number): Promise<void> {
  await db
    .prepare(
      `INSERT INTO push_subscriptions (panel_id, kind, address, p256dh, auth, platform, contact_key, uniqueid, bucket, created_at, updated_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10)
       ON CONFLICT (panel_id, kind, address) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth, platform = excluded.platform,
         bucket = CASE WHEN excluded.contact_key IS NOT NULL OR contact_key IS NULL THEN excluded.bucket ELSE bucket END,
         contact_key = COALESCE(excluded.contact_key, contact_key), uniqueid = COALESCE(excluded.uniqueid, uniqueid), updated_at = excluded.updated_at`,
    )
    .bind(s.panelId, s.kind, s.address, s.p256dh, s.auth, s.platform, s.contactKey, s.uniqueid, s.bucket, now)
    .run();
}

/** Removes a subscription (the device left, or the push service said it is gone); true when there was one. */
/**
 * Deletes the panel's device `address` on `db`; true when there was one. With `buckets` (the
 * shard's in the panel's map) a row outside them that a fence holds here is left alone: it is a
 * split's source's copy of a moved device (decision 0047), the target's row is the device, and
 * cleaning deletes the copy. Deleting it would meet the fence and undo the target's delete's
 * answer; a row outside them that no fence holds (none should be) still goes.
 */
export async function deletePushSubscription(db: ShardDb, panelId: string, kind: PushKind, address: string, buckets: BucketRanges | null = null): Promise<boolean> {
  const result = await db
    .prepare(
      `DELETE FROM push_subscriptions WHERE panel_id = ?1 AND kind = ?2 AND address = ?3
       AND NOT ${fencedCopyHere("push_subscriptions", "?4")}`,
    )
    .bind(panelId, kind, address, buckets && JSON.stringify(buckets))
    .run();
  return result.meta.changes > 0;
}

export function deletePushSubscriptionStatement(db: ShardDb, panelId: string, kind: PushKind, address: string): D1PreparedStatement {
  return db.prepare("DELETE FROM push_subscriptions WHERE panel_id = ? AND kind = ? AND address = ?").bind(panelId, kind, address);
}

interface SubscriptionRow {
  panel_id: string;
  kind: PushKind;
  address: string;
  p256dh: string | null;
  auth: string | null;
  platform: string | null;
  contact_key: string | null;
  uniqueid: string | null;
  contact_id: number;
}

/**
 * The subscriptions of `kind` of these contacts, in one read: those recorded with the contact's
 * key, and those of anonymous visitor ids joined to the contact since.
 */
export async function pushSubscriptionsOf(db: ShardDb, panelId: string, kind: PushKind, contactIds: readonly number[]): Promise<Map<number, PushSubscription[]>> {
  const byContact = new Map<number, PushSubscription[]>();
  if (contactIds.length === 0) return byContact;
  const { results } = await db
    .prepare(
      `SELECT s.*, c.id AS contact_id FROM contacts c JOIN push_subscriptions s ON s.panel_id = c.panel_id AND s.kind = ?3 AND s.contact_key = c.pk_value
       WHERE c.panel_id = ?1 AND c.id IN (SELECT value FROM json_each(?2))
       UNION
       SELECT s.*, ap.contact_id FROM anon_profiles ap JOIN push_subscriptions s ON s.panel_id = ap.panel_id AND s.kind = ?3 AND s.uniqueid = ap.uniqueid
       WHERE ap.panel_id = ?1 AND ap.contact_id IN (SELECT value FROM json_each(?2))`,
    )
    .bind(panelId, JSON.stringify([...new Set(contactIds)]), kind)
    .all<SubscriptionRow>();
  for (const r of results) {
    const list = byContact.get(r.contact_id) ?? [];
    if (!list.some((s) => s.address === r.address)) {
      list.push({ panelId: r.panel_id, kind: r.kind, address: r.address, p256dh: r.p256dh, auth: r.auth, platform: r.platform, contactKey: r.contact_key, uniqueid: r.uniqueid });
    }
    byContact.set(r.contact_id, list);
  }
  return byContact;
}

/**
 * How many browsers and app installs of the panel this shard holds: its counters (push_counts,
 * shard migration 0109, kept by triggers on push_subscriptions), one read of at most two rows.
 */
export async function countPushSubscriptions(db: ShardDb, panelId: string): Promise<Record<PushKind, number>> {
  const { results } = await db.prepare("SELECT kind, n FROM push_counts WHERE panel_id = ?").bind(panelId).all<{ kind: PushKind; n: number }>();
  const counts: Record<PushKind, number> = { web: 0, app: 0 };
  for (const r of results) counts[r.kind] = r.n;
  return counts;
}

/**
 * Sets the panel's push counters on `db` to the subscriptions it holds, or with `leaving` to those
 * outside those buckets, as recountMembersStatement does for the list counters: without it for
 * the shard that took a partition in transit (a split, decision 0047), whose triggers counted
 * none of the rows copied then; with it for the shard the partition left, from the switch until
 * cleaning has deleted its copies of the moved devices (their deletes count nothing, shard
 * migration 0118). A background step's statement over the panel's rows there, never a request's.
 */
export function recountPushStatement(db: ShardDb, panelId: string, leaving?: { first: number; last: number }): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO push_counts (panel_id, kind, n)
       SELECT ?1, k.value, (SELECT COUNT(*) FROM push_subscriptions s WHERE s.panel_id = ?1 AND s.kind = k.value AND (?2 IS NULL OR s.bucket NOT BETWEEN ?2 AND ?3))
       FROM json_each('["web","app"]') k WHERE true
       ON CONFLICT (panel_id, kind) DO UPDATE SET n = excluded.n`,
    )
    .bind(panelId, leaving?.first ?? null, leaving?.last ?? null);
}
