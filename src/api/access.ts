import type { ControlDb } from "../store/shards";
import type { ActivityCatalog } from "../store/activities";
import { anyPanelAllowsOrigin, type Panel } from "../store/panels";
import { headerApiKeys, notAuthenticated, requestApiKey } from "../lib/http/credentials";
import { notFound } from "../lib/http/errors";
import { activityCatalog } from "../services/access/activity-catalogs";
import { cachedCaller, findCaller, type Caller } from "../services/access/api-keys";
import { decodeOrKeep } from "../lib/uri";

/** The caller an API key names; 401 alike for every reason it names none (CONTRACT 2.1). */
export async function authenticateApiKey(env: Env, apiKey: unknown): Promise<Caller> {
  const caller = await findCaller(env, apiKey);
  if (!caller) throw notAuthenticated();
  return caller;
}

/**
 * The activity catalog of the panel a public client id names; 404 for an unknown id. Every
 * route naming its panel so records events or push subscriptions, each routed to its contact's
 * partition (decision 0038): recordEvents, push subscriptions by key.
 */
export async function catalogOfClient(env: Env, clientId: string): Promise<ActivityCatalog> {
  const catalog = await activityCatalog(env, clientId);
  if (!catalog) throw notFound("client_id: no panel has this client id", [{ field: "client_id", message: "unknown client id" }]);
  return catalog;
}

/**
 * For routes that name their panel by client id: the panel must be in API mode (as for every
 * API call), and a key given in a header (Authorization, api-key) or the `apikey` query
 * parameter must be a valid key of this panel; two keys that disagree are refused.
 */
export async function checkAccess(request: Request, env: Env, panel: Panel): Promise<void> {
  if (accessKnown(request, env, panel)) return;
  const caller = await authenticateApiKey(env, requestApiKey(request));
  if (caller.panel.id !== panel.id) throw notAuthenticated();
}

/**
 * checkAccess without a wait: true when this isolate can tell the call may go on (no key, or
 * a key it knows, of this panel), a 401 thrown as checkAccess throws it, false when the key
 * has to be looked up.
 */
export function accessKnown(request: Request, env: Env, panel: Panel): boolean {
  if (!panel.apiMode) throw notAuthenticated();
  const key = requestApiKey(request);
  if (key === undefined) return true;
  const caller = cachedCaller(env, key);
  if (!caller) return false;
  if (caller.panel.id !== panel.id) throw notAuthenticated();
  return true;
}

/** Public routes that name their panel by client id in the path (activity, channel events). */
const CLIENT_ID_PATH = /^\/(?:v1|apiv2)\/(?:activity\/(?:singleactivity|batch|batchactivity)|events\/[^/]+|push\/(?:web|app))\/([^/]+)\/?$/;

/**
 * The panel a public API call is for, as far as the request shows it without running it: the
 * client id in the path, else the API key (`apikey` in the query or the body's parameters,
 * else a key header). Undefined when the request names none, or none that exists (CORS
 * answers such a call without its headers; the call itself refuses it).
 */
export async function panelOfCall(env: Env, request: Request, bodyKey?: () => Promise<unknown>): Promise<Panel | undefined> {
  const url = new URL(request.url);
  const clientId = CLIENT_ID_PATH.exec(url.pathname)?.[1];
  if (clientId !== undefined) return (await activityCatalog(env, decodeOrKeep(clientId)))?.panel;
  const key = url.searchParams.get("apikey") ?? (bodyKey ? await bodyKey() : undefined) ?? headerApiKeys(request)[0];
  return (await findCaller(env, key))?.panel;
}

/** Whether some panel lets `origin` call from a browser (a preflight that names no panel). */
export function originAllowedSomewhere(db: ControlDb, origin: string): Promise<boolean> {
  return anyPanelAllowsOrigin(db, origin);
}
