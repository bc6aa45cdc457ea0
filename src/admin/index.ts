import { decodeOrKeep } from "../lib/uri";
import { Router, type IRequest } from "itty-router";
import { forgetPanelPlaces } from "../services/access/shards";
import { ApiError, asApiError, notFound } from "../lib/http/errors";
import { adminCaller, type AdminCaller } from "./auth";
import { isSameOrigin } from "../lib/http/cookies";
import { roleAllows } from "../domain/permissions";
import { csrfMatches } from "../services/operators/sessions";
import { adminFailure, json, newRequestId } from "../lib/http/respond";
import { getOfHead } from "../lib/http/methods";
import { activityRoutes } from "./activities";
import { attributeRoutes } from "./attributes";
import { auditRoutes } from "./audit";
import { eventRoutes } from "./events";
import { journeyRoutes } from "./journeys";
import { journeyReportRoutes } from "./journey-report";
import { campaignRoutes } from "./campaigns";
import { deadLetterRoutes } from "./dead-letters";
import { opsRoutes } from "./ops";
import { emailTemplateRoutes } from "./email-templates";
import { topicRoutes } from "./topics";
import { signupFormRoutes } from "./forms";
import { consentRoutes } from "./consent";
import { jobRoutes } from "./jobs";
import { notificationRoutes } from "./notifications";
import { operatorRoutes } from "./operators";
import { invitationRoutes } from "./invitations";
import { contactRoutes } from "./contacts";
import { listRoutes } from "./lists";
import { overviewRoutes } from "./overview";
import { panelRoutes } from "./panels";
import { panelMoveRoutes } from "./panel-moves";
import { parseAdminBody, parseAdminQuery, type AdminRoute } from "./route";
import { senderDomainRoutes } from "./sender-domains";
import { trackingDomainRoutes } from "./tracking-domain";
import { userRoutes } from "./users";
import { segmentRoutes } from "./segments";
import { pushRoutes } from "./push";
import { smsRoutes } from "./sms";
import { notePanel } from "../lib/observability/context";
import { webhookRoutes } from "./webhooks";
import { webhookReplayRoutes } from "./webhook-replays";

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
  ...webhookReplayRoutes,
  ...journeyRoutes,
  ...journeyReportRoutes,
  ...jobRoutes,
  ...campaignRoutes,
  ...emailTemplateRoutes,
  ...topicRoutes,
  ...signupFormRoutes,
  ...consentRoutes,
  ...senderDomainRoutes,
  ...trackingDomainRoutes,
  ...operatorRoutes,
  ...invitationRoutes,
  ...auditRoutes,
  ...overviewRoutes,
  ...contactRoutes,
  ...listRoutes,
  ...deadLetterRoutes,
  ...opsRoutes,
  ...segmentRoutes,
  ...smsRoutes,
  ...pushRoutes,
  ...panelMoveRoutes,
];

/**
 * Refuses an operator what the route's role does not allow. A panel the operator holds no role
 * in answers 404 as an unknown panel does, so a session learns nothing of other panels.
 */
export function authorize(route: AdminRoute, caller: AdminCaller, path: Record<string, string>): void {
  if (caller.kind === "admin") return;
  const held = path.panel === undefined ? undefined : caller.session.roles.find((role) => role.panelId === path.panel)?.role;
  if (path.panel !== undefined && !held) throw notFound(`No panel with id "${path.panel}"`);
  // A panel role means nothing off a panel's path: such a route is the admin token's, whatever it declares.
  if (route.role === "admin" || !held) throw new ApiError(403, "Only the deployment's admin token may do this");
  if (!roleAllows(held, route.role)) throw new ApiError(403, `This needs the ${route.role} role in the panel; you are ${held}`);
}

const router = Router<IRequest, [Env, ExecutionContext, AdminCaller]>({ base: ADMIN_BASE });
for (const route of ADMIN_ROUTES) {
  router[route.method.toLowerCase()]!(route.path, async (request: IRequest, env: Env, exec: ExecutionContext, caller: AdminCaller) => {
    const path = decodePathParams(request.params);
    authorize(route, caller, path);
    if (path.panel !== undefined) notePanel(path.panel);
    const body = await parseAdminBody(route, request, env);
    const query = parseAdminQuery(route, request);
    const result = await route.handle({ request, env, exec, caller, path, body, query });
    // Any admin write may change what an API key may do (rotation, API mode, schema), or
    // what activity ingest knows of a panel (time zone, API mode, definitions), or a public
    // form (the form, its panel's schema and form settings): the same caches a panel's switch drops.
    if (route.method !== "GET") forgetPanelPlaces();
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

/**
 * The admin API (CONTRACT 4): JSON in and out, `{"error","errors"}` on failure. Callers are the
 * admin bearer token or an operator's panel session cookie; a cookie-authenticated write must
 * come from the panel's own origin and carry the session's CSRF token.
 */
export async function handleAdmin(request: Request, env: Env, exec: ExecutionContext): Promise<Response> {
  try {
    const caller = await adminCaller(request, env);
    if (!caller) return adminFailure(new ApiError(401, "The admin token is missing or wrong"));
    // Reads, and OPTIONS (no route runs for it), need no CSRF token.
    if (caller.kind === "operator" && !["GET", "HEAD", "OPTIONS"].includes(request.method)) {
      if (!isSameOrigin(request) || !csrfMatches(caller.session, request.headers.get("x-csrf-token"))) {
        return adminFailure(new ApiError(403, "Cross-site request refused: a write needs the panel's origin and its CSRF token"));
      }
    }
    const response: Response | undefined = await router.fetch(request, env, exec, caller);
    return response ?? (await answerOtherMethod(request, env, exec, caller));
  } catch (error) {
    return adminFailure(asApiError(error, newRequestId()));
  }
}

/** Each route's method and its whole path as a pattern (`:name` one segment), to tell an unknown path from a method its path does not take. */
const ROUTE_PATTERNS = ADMIN_ROUTES.map((route) => ({
  method: route.method,
  // `/*$`: a trailing slash routes, as itty-router takes it.
  pattern: new RegExp(`^${ADMIN_BASE}${route.path.replace(/\./g, "\\.").replace(/:\w+/g, "[^/]+")}/*$`),
}));

/**
 * A request no route took: 404 for a path no route has; for a path that has routes, HEAD is
 * answered as GET, OPTIONS names the methods, and any other
 * method is refused with 405 and an `allow` header, as HTTP asks.
 */
async function answerOtherMethod(request: Request, env: Env, exec: ExecutionContext, caller: AdminCaller): Promise<Response> {
  const path = new URL(request.url).pathname;
  const routed = ROUTE_PATTERNS.filter((route) => route.pattern.test(path)).map((route) => route.method);
  if (routed.length === 0) return adminFailure(notFound(`No admin route ${request.method} ${path}`));
  if (request.method === "HEAD" && routed.includes("GET")) {
    const asGet: Response | undefined = await router.fetch(getOfHead(request), env, exec, caller);
    if (asGet) return asGet;
  }
  const allow = [...routed, ...(routed.includes("GET") ? ["HEAD"] : []), "OPTIONS"].join(", ");
  if (request.method === "OPTIONS") return new Response(null, { status: 204, headers: { allow } });
  const refused = adminFailure(new ApiError(405, `method: ${path} takes ${allow}, not ${request.method}`));
  refused.headers.set("allow", allow);
  return refused;
}
