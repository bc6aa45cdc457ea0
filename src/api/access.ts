import type { ActivityCatalog } from "../store/activities";
import type { Panel } from "../store/panels";
import { bearerToken, notAuthenticated } from "../lib/http/credentials";
import { notFound } from "../lib/http/errors";
import { activityCatalog } from "../services/access/activity-catalogs";
import { findCaller, type Caller } from "../services/access/api-keys";

/** The caller an API key names; 401 alike for every reason it names none (CONTRACT 2.1). */
export async function authenticateApiKey(db: D1Database, apiKey: unknown): Promise<Caller> {
  const caller = await findCaller(db, apiKey);
  if (!caller) throw notAuthenticated();
  return caller;
}

/** The activity catalog of the panel a public client id names; 404 for an unknown id. */
export async function catalogOfClient(db: D1Database, clientId: string): Promise<ActivityCatalog> {
  const catalog = await activityCatalog(db, clientId);
  if (!catalog) throw notFound("client_id: no panel has this client id", [{ field: "client_id", message: "unknown client id" }]);
  return catalog;
}

/**
 * For routes that name their panel by client id: the panel must be in API mode (as for every
 * API call), and a key given in the Authorization header or the `apikey` query parameter must
 * be a valid key of this panel.
 */
export async function checkAccess(request: Request, db: D1Database, panel: Panel): Promise<void> {
  if (!panel.apiMode) throw notAuthenticated();
  const queryKey = new URL(request.url).searchParams.get("apikey");
  for (const key of [bearerToken(request), queryKey ?? undefined]) {
    if (key === undefined) continue;
    const caller = await authenticateApiKey(db, key);
    if (caller.panel.id !== panel.id) throw notAuthenticated();
  }
}
