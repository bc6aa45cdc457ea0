import { ownerOf, type IngestPanel } from "../../../domain/activity";
import { contactBucket } from "../../../domain/partitions";
import type { FieldProblem } from "../../../domain/problems";
import { refused, refusedField, succeeded, type Result } from "../../../lib/problems";
import type { AppTokenBody, WebSubscribeBody } from "../../../domain/push";
import { allowsPrivateFetch } from "../../../lib/outbound";
import { checkOutboundUrl } from "../../../lib/outbound-address";
import { deletePushSubscription, putPushSubscription, type PushKind, type PushSubscription } from "../../../store/push";
import type { ShardDb } from "../../../store/shards";
import { panelPush } from "./settings";
import type { OwningShard } from "../../access/partitions";

/**
 * Where sites and apps tell the panel a device can receive push (`/v1/push/web|app/{client_id}`):
 * a browser's subscription or an app install's FCM token, for a contact (its primary-key
 * value) or an anonymous visitor (uniqueid, joined to the contact once the visitor is known).
 */

export type SubscribeOutcome = Result<void>;

type Owner = Pick<IngestPanel, "primaryKey" | "primaryKeyType"> & {
  /**
   * The database a device's row goes to, by its owner's key (the contact's primary-key value,
   * else the uniqueid): the key's partition for a panel with a partition map (decision 0038,
   * contactPlace). Absent: `db`, the home.
   */
  rowDb?: (key: string) => ShardDb;
};

export async function subscribeBrowser(
  env: Pick<Env, "SECRETS_KEY" | "ALLOW_PRIVATE_FETCH">,
  db: ShardDb,
  panel: { id: string } & Owner,
  body: WebSubscribeBody,
  now: number,
): Promise<SubscribeOutcome> {
  const problems: FieldProblem[] = [];
  const owner = ownerOf(body, panel, problems);
  const endpoint = checkOutboundUrl(body.subscription.endpoint, allowsPrivateFetch(env));
  if (!endpoint.ok) problems.push({ field: "subscription.endpoint", message: endpoint.reason });
  else if (endpoint.url.protocol !== "https:" && !allowsPrivateFetch(env)) problems.push({ field: "subscription.endpoint", message: "must be an https URL (RFC 8030)" });
  if (problems.length) return refused("invalid", problems);
  if (!(await panelPush(env, db, panel.id)).web) {
    return refusedField("conflict", "client_id", "web push is not set up for this panel (admin PUT /panels/{panel}/push)");
  }
  await putDevice(db, panel, {
    panelId: panel.id,
    kind: "web",
    address: body.subscription.endpoint,
    p256dh: body.subscription.keys.p256dh,
    auth: body.subscription.keys.auth,
    platform: null,
    contactKey: owner.identity ?? null,
    uniqueid: owner.uniqueid ?? null,
  }, now);
  return succeeded(undefined);
}

export async function registerAppToken(env: Pick<Env, "SECRETS_KEY">, db: ShardDb, panel: { id: string } & Owner, body: AppTokenBody, now: number): Promise<SubscribeOutcome> {
  const problems: FieldProblem[] = [];
  const owner = ownerOf(body, panel, problems);
  if (problems.length) return refused("invalid", problems);
  if (!(await panelPush(env, db, panel.id)).fcm) {
    return refusedField("conflict", "client_id", "app push (FCM) is not set up for this panel (admin PUT /panels/{panel}/push)");
  }
  await putDevice(db, panel, { panelId: panel.id, kind: "app", address: body.token, p256dh: null, auth: null, platform: body.platform ?? null, contactKey: owner.identity ?? null, uniqueid: owner.uniqueid ?? null }, now);
  return succeeded(undefined);
}

/**
 * Writes a device's row to the database of its owner's key (the contact's, else the uniqueid),
 * with that key's bucket: the same key chooses both, so a partition move carries the row with
 * its contact (decision 0038).
 */
async function putDevice(db: ShardDb, panel: { id: string } & Owner, s: PushSubscription, now: number): Promise<void> {
  const key = s.contactKey ?? s.uniqueid!;
  await putPushSubscription(panel.rowDb?.(key) ?? db, { ...s, bucket: contactBucket(panel.id, key) }, now);
}

/**
 * The device left; true when the panel had it. The call names no owner, so each shard that may
 * hold the panel's devices (`shards`, panelOwningShards: the home, and each partition's shard for
 * a panel with a map) is asked, with the buckets its map gives it: between a split's switch and
 * its cleaning the source's fenced copy of a moved device is cleaning's to delete (decision 0047);
 * before, it met the fence and the call answered 503 "nothing was changed" after the target's
 * delete, and again on every retry until cleaning.
 */
export async function unsubscribeDevice(shards: readonly OwningShard[], panelId: string, kind: PushKind, address: string): Promise<boolean> {
  return (await Promise.all(shards.map((shard) => deletePushSubscription(shard.db, panelId, kind, address, shard.buckets)))).some(Boolean);
}
