import { originAllowedSomewhere, panelOfCall } from "../api/access";
import { allowOrigin } from "../domain/fields";
import { readBodyParams } from "../lib/http/body";
import { ApiError } from "../lib/http/errors";
import { envelopeFailure, newRequestId } from "../lib/http/respond";
import type { Panel } from "../store/panels";

/**
 * CORS for the public API (CONTRACT 8): browser pages of the origins a panel lists in its
 * `cors_origins` setting may call `/apiv2`, `/v1/activity/*`, `/v1/events/*` and `/v1/push/*`. The admin API
 * and everything else never answer with CORS headers. Work happens only for requests that
 * carry an Origin header (browsers), so server-to-server clients pay nothing.
 */

const PUBLIC_PATH = /^\/(?:apiv2(?:\/|$)|v1\/activity\/|v1\/events\/|v1\/push\/)/;
const PUSH_PATH = /^\/v1\/push\/(web|app)\//;
const ENVELOPE_PATH = /^\/apiv2\/?$/;

/** Headers browsers may send: the key, JSON bodies, idempotency and asset headers. */
const ALLOWED_HEADERS = "Authorization, Api-Key, Content-Type, Idempotency-Key, X-Netcore-Asset-Id";
/** How long a browser may reuse a preflight's answer, in seconds. */
const PREFLIGHT_MAX_AGE = "600";

export function isPublicApiPath(pathname: string): boolean {
  return PUBLIC_PATH.test(pathname);
}

function methodsOf(pathname: string): string {
  const push = PUSH_PATH.exec(pathname)?.[1];
  if (push) return push === "web" ? "GET, POST, DELETE, OPTIONS" : "POST, DELETE, OPTIONS";
  return ENVELOPE_PATH.test(pathname) ? "GET, POST, OPTIONS" : "POST, OPTIONS";
}

function withHeaders(response: Response, headers: Record<string, string>): Response {
  const copy = new Response(response.body, response);
  for (const [name, value] of Object.entries(headers)) copy.headers.set(name, value);
  return copy;
}

/**
 * A preflight: allowed when the panel the request names (client id in the path, `apikey` in the
 * query) lists the origin, or, when it names none a preflight can show (a Bearer key), when some
 * panel does; the call itself then answers with CORS headers only for its own panel's origins.
 */
async function preflight(request: Request, env: Env, origin: string): Promise<Response> {
  const { pathname } = new URL(request.url);
  const panel = await panelOfCall(env, request);
  const allowed = panel ? allowOrigin(panel.corsOrigins, origin) : (await originAllowedSomewhere(env.DB, origin)) ? origin : null;
  if (allowed === null) {
    const refusal = new ApiError(403, `origin: ${origin} may not call this API from a browser; the panel's cors_origins setting lists the origins that may`, [
      { field: "origin", message: "not in the panel's cors_origins" },
    ]);
    return withHeaders(envelopeFailure(newRequestId(), refusal), { Vary: "Origin" });
  }
  return new Response(null, {
    status: 204,
    headers: {
      "Access-Control-Allow-Origin": allowed,
      "Access-Control-Allow-Methods": methodsOf(pathname),
      "Access-Control-Allow-Headers": request.headers.get("access-control-request-headers") ?? ALLOWED_HEADERS,
      "Access-Control-Max-Age": PREFLIGHT_MAX_AGE,
      Vary: "Origin",
    },
  });
}

/**
 * Runs a public API call from a browser and adds Access-Control-Allow-Origin when its panel
 * allows the origin, or, when it names none, when some panel does (as its preflight was answered). An envelope call may carry its key in the body: a copy of the request is
 * kept to read it after the call (the body is read once by the call).
 */
export function withCors(request: Request, env: Env, route: (request: Request) => Promise<Response>): Promise<Response> {
  const origin = request.headers.get("origin");
  // A server's call (no Origin, most calls) is the route's answer as it is, not wrapped in another promise.
  return origin === null ? route(request) : withCorsOf(request, env, route, origin);
}

async function withCorsOf(request: Request, env: Env, route: (request: Request) => Promise<Response>, origin: string): Promise<Response> {
  if (request.method === "OPTIONS") return preflight(request, env, origin);
  const url = new URL(request.url);
  const bodyCopy = ENVELOPE_PATH.test(url.pathname) && request.method === "POST" && !url.searchParams.has("apikey") ? request.clone() : undefined;
  const response = await route(request);
  let panel: Panel | undefined;
  try {
    panel = await panelOfCall(env, request, bodyCopy && (async () => (await readBodyParams(bodyCopy)).apikey));
  } catch {
    panel = undefined;
  }
  // A call that names no panel (a wrong or rotated key) is refused: its 401 is readable where
  // its preflight was allowed, so the page can show why rather than a CORS error.
  const allowed = panel ? allowOrigin(panel.corsOrigins, origin) : (await originAllowedSomewhere(env.DB, origin)) ? origin : null;
  return withHeaders(response, allowed === null ? { Vary: "Origin" } : { "Access-Control-Allow-Origin": allowed, Vary: "Origin" });
}
