import type { PushSettingsBody } from "../../../domain/push";
import type { ShardDb } from "../../../store/shards";
import type { PanelShards } from "../../access/partitions";
import { recordAudit, type Auditor } from "../../audit/record";
import { panelPush, pushSettingsView, savePushSettings } from "./settings";

/** Changes the panel's push channels (web push, FCM); the audit log says which changed, never the service account's key. */
export async function changePushSettings(env: Pick<Env, "SECRETS_KEY">, db: ShardDb, panelId: string, body: PushSettingsBody, by: Auditor): Promise<void> {
  await savePushSettings(env, db, panelId, body, Date.now());
  const state = (value: unknown) => (value === undefined ? undefined : value === null ? "off" : "on");
  await recordAudit(db, panelId, by, "push.settings_changed", panelId, { web_push: state(body.web_push), fcm: state(body.fcm) });
}

/**
 * The panel's push settings as the operator sees them (never a private key), from its home
 * (`shards[0]`), with its subscription counts over `shards` (panelShards).
 */
export async function readPushSettings(env: Pick<Env, "SECRETS_KEY" | "PUBLIC_BASE_URL">, shards: PanelShards, panelId: string, clientId: string) {
  return pushSettingsView(env, shards, panelId, await panelPush(env, shards[0], panelId), clientId);
}
