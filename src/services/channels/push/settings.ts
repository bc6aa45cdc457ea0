import type { pushSettingsAnswer } from "../../../domain/answers/channels";
import type { z } from "../../../lib/z";
import type { PushSettingsBody } from "../../../domain/push";
import { decryptSecret, encryptSecret } from "../../../lib/crypto";
import { TtlCache } from "../../../lib/ttl-cache";
import { countPushSubscriptions, getPushSettings, putPushSettings, type PushSettingsRecord } from "../../../store/push";
import type { ShardDb } from "../../../store/shards";
import type { FcmAccount } from "./fcm";
import { generateVapidKeys, type VapidKeys } from "./web-push";
import { config } from "../../../lib/config";

/**
 * A panel's push setup (admin `PUT /panels/{panel}/push`), private keys decrypted: web push
 * sends bpn messages when `web` is set, FCM sends apn messages when `fcm` is; a channel not set
 * leaves its messages in the outbox (recorded, reported through `POST /v1/events/{channel}`).
 */
export interface PanelPush {
  web: VapidKeys | null;
  fcm: FcmAccount | null;
  /** The VAPID public key browsers subscribe with; kept when web push is turned off, since subscriptions are bound to it. */
  vapidPublicKey: string | null;
  record: PushSettingsRecord | null;
}

/** Settings an isolate trusts for this long; admin writes in the same isolate drop them at once. */
const SETTINGS_CACHE_MS = 10_000;
const cache = new TtlCache<Promise<PanelPush>>(SETTINGS_CACHE_MS, 500);

export function panelPush(env: Pick<Env, "SECRETS_KEY">, db: ShardDb, panelId: string): Promise<PanelPush> {
  let entry = cache.get(panelId);
  if (!entry) {
    entry = (async () => {
      const record = await getPushSettings(db, panelId);
      if (!record) return { web: null, fcm: null, vapidPublicKey: null, record: null };
      const [vapidPrivate, fcmPrivate] = await Promise.all([
        record.vapidSubject && record.vapidPrivateEnc ? decryptSecret(config(env).secretsKey, record.vapidPrivateEnc) : null,
        record.fcmPrivateKeyEnc ? decryptSecret(config(env).secretsKey, record.fcmPrivateKeyEnc) : null,
      ]);
      return {
        web: vapidPrivate ? { subject: record.vapidSubject!, publicKey: record.vapidPublicKey!, privateKey: vapidPrivate } : null,
        fcm: fcmPrivate ? { projectId: record.fcmProjectId!, clientEmail: record.fcmClientEmail!, privateKey: fcmPrivate } : null,
        vapidPublicKey: record.vapidPublicKey,
        record,
      };
    })();
    entry.catch(() => cache.delete(panelId));
    cache.set(panelId, entry);
  }
  return entry;
}

/**
 * Stores the panel's push setup. Web push gets its VAPID key pair the first time it is set,
 * and keeps it afterwards (turning web push off and on again keeps the browsers subscribed).
 */
export async function savePushSettings(env: Pick<Env, "SECRETS_KEY">, db: ShardDb, panelId: string, body: PushSettingsBody, now: number): Promise<void> {
  cache.delete(panelId);
  const previous = await getPushSettings(db, panelId);
  const next: PushSettingsRecord = previous ?? {
    panelId,
    vapidSubject: null,
    vapidPublicKey: null,
    vapidPrivateEnc: null,
    fcmProjectId: null,
    fcmClientEmail: null,
    fcmPrivateKeyEnc: null,
    updatedAt: now,
  };
  if (body.web_push !== undefined) {
    next.vapidSubject = body.web_push?.subject ?? null;
    if (body.web_push && !next.vapidPublicKey) {
      const keys = await generateVapidKeys();
      next.vapidPublicKey = keys.publicKey;
      next.vapidPrivateEnc = await encryptSecret(config(env).secretsKey, keys.privateKey);
    }
  }
  if (body.fcm !== undefined) {
    const account = body.fcm?.service_account;
    next.fcmProjectId = account?.project_id ?? null;
    next.fcmClientEmail = account?.client_email ?? null;
    next.fcmPrivateKeyEnc = account ? await encryptSecret(config(env).secretsKey, account.private_key) : null;
  }
  next.updatedAt = now;
  await putPushSettings(db, next);
  cache.delete(panelId);
}

/** What the admin API shows of a panel's push setup: never a private key. */
export async function pushSettingsView(env: Pick<Env, "PUBLIC_BASE_URL">, shards: readonly ShardDb[], panelId: string, push: PanelPush, clientId: string): Promise<z.input<typeof pushSettingsAnswer>> {
  // A subscription is kept on its owner's partition (decision 0038): each shard counts its own.
  const counts = (await Promise.all(shards.map((db) => countPushSubscriptions(db, panelId)))).reduce((sum, n) => ({ web: sum.web + n.web, app: sum.app + n.app }));
  const base = config(env).publicBaseUrl;
  return {
    web_push: push.web
      ? { sends: true, subject: push.web.subject, public_key: push.web.publicKey, subscribe_url: `${base}/v1/push/web/${encodeURIComponent(clientId)}`, subscriptions: counts.web }
      : { sends: false, subscriptions: counts.web },
    fcm: push.fcm
      ? { sends: true, project_id: push.fcm.projectId, client_email: push.fcm.clientEmail, credential_set: true, register_url: `${base}/v1/push/app/${encodeURIComponent(clientId)}`, tokens: counts.app }
      : { sends: false, tokens: counts.app },
    updated_at: push.record ? new Date(push.record.updatedAt).toISOString() : null,
  };
}
