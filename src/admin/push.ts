import { pushSettingsAnswer } from "../domain/answers/channels";
import { NEEDS } from "../domain/permissions";
import { pushSettingsBody } from "../domain/push";
import { changePushSettings, readPushSettings } from "../services/channels/push/panel-settings";
import { panelShards } from "../services/access/partitions";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

// A panel's push channels (issue 19): web push with the panel's VAPID keys, and app push through
// FCM with a service account whose private key is stored encrypted and never shown.

const readSettings = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/push",
  role: NEEDS.channels,
  response: pushSettingsAnswer,
  summary: "The panel's push channels: web push (VAPID subject and public key, the subscribe URL for sites) and FCM (project, client email, the token URL for apps); never a private key",
  async handle({ env, panel, db }) {
    return readPushSettings(env, panelShards(env, panel, db), panel.id, panel.clientId);
  },
});

const putSettings = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/push",
  role: NEEDS.channelSettings,
  response: pushSettingsAnswer,
  summary: "Set up web push (web_push: {subject}) and app push (fcm: {service_account}); null turns a channel off, an absent one stays as it is",
  body: pushSettingsBody,
  async handle({ env, caller, body, panel, db }) {
    await changePushSettings(env, db, panel.id, body, auditorOf(caller));
    return readPushSettings(env, panelShards(env, panel, db), panel.id, panel.clientId);
  },
});

export const pushRoutes = [readSettings, putSettings];
