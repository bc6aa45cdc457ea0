import { decodeOrKeep } from "../lib/uri";
import { Router, type IRequest } from "itty-router";
import { forgetActivityCatalogs } from "../services/access/activity-catalogs";
import { forgetCallers } from "../services/access/api-keys";
import { ApiError, asApiError, notFound } from "../lib/http/errors";
import { isAdmin } from "./auth";
import { adminFailure, json, newRequestId } from "../lib/http/respond";
import { activityRoutes } from "./activities";
import { attributeRoutes } from "./attributes";
import { eventRoutes } from "./events";
import { journeyRoutes } from "./journeys";
import { campaignRoutes } from "./campaigns";
import { jobRoutes } from "./jobs";
import { notificationRoutes } from "./notifications";
import { panelRoutes } from "./panels";
import { parseAdminBody, parseAdminQuery, type AdminRoute } from "./route";
import { userRoutes } from "./users";
import { webhookRoutes } from "./webhooks";

export const ADMIN_BASE = "/admin/v1";

/** Every admin route; /openapi.json is generated from this list. */
export const ADMIN_ROUTES: AdminRoute[] = [
  ...panelRoutes,
  ...userRoutes,
  ...attributeRoutes,
  ...notificationRoutes,
  ...activityRoutes,
  ...eventRoutes,
  ...webhookRoutes,
  ...journeyRoutes,
  ...jobRoutes,
  ...campaignRoutes,
];

const router = Router<IRequest, [Env, ExecutionContext]>({ base: ADMIN_BASE });
for (const route of ADMIN_ROUTES) {
  router[route.method.toLowerCase()]!(route.path, async (request: IRequest, env: Env, exec: ExecutionContext) => {
    const body = await parseAdminBody(route, request, env);
    const query = parseAdminQuery(route, request);
    const result = await route.handle({ request, env, exec, path: decodePathParams(request.params), body, query });
    // Any admin write may change what an API key may do (rotation, API mode, schema), or
    // what activity ingest knows of a panel (time zone, API mode, definitions).
    if (route.method !== "GET") {
      forgetCallers();
      forgetActivityCatalogs();
    }
    return result instanceof Response ? result : json(result, route.status ?? 200);
  });
}

// itty-router leaves path parameters percent-encoded.
function decodePathParams(params: Record<string, string>): Record<string, string> {
  const decoded: Record<string, string> = {};
  for (const [name, value] of Object.entries(params)) {
    decoded[name] = decodeOrKeep(value);
  }
  return decoded;
}

/** The admin API (CONTRACT 4): bearer token, JSON in and out, `{"error","errors"}` on failure. */
export async function handleAdmin(request: Request, env: Env, exec: ExecutionContext): Promise<Response> {
  if (!isAdmin(request, env)) return adminFailure(new ApiError(401, "The admin token is missing or wrong"));
  try {
    const response: Response | undefined = await router.fetch(request, env, exec);
    return response ?? adminFailure(notFound(`No admin route ${request.method} ${new URL(request.url).pathname}`));
  } catch (error) {
    return adminFailure(asApiError(error, newRequestId()));
  }
}
