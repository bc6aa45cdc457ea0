import { ApiError } from "../lib/http/errors";
import { adminFailure, envelopeFailure, newRequestId } from "../lib/http/respond";
import { invalidLinkAnswer } from "../api/tracking";

/**
 * What answers a request no route took. wrangler.toml runs the Worker first for every path but
 * the panel's hashed files (/assets/*), so this decides between the panel's HTML and a JSON
 * Failed body: a client that mistyped an API path (`/apiv3`, `/APIV2`, `/v2/activity/...`,
 * `/health/x`) must read a 404 it can parse, never the panel's index.html with a 200.
 */

// Case-insensitive: `/APIV2` and `/V1/...` are mistyped API paths, not panel routes.
const API_PREFIX = /^\/(api|v\d|health|openapi|admin|auth|t\/|f\/|hooks|s\/|__scheduled)/i;
// The admin API's own error shape (CONTRACT 4) under its prefixes; the envelope's everywhere else.
const ADMIN_PREFIX = /^\/(admin|auth)(\/|$)/i;
// The links a visitor opens from a message or a site: tracking, short links, signup forms.
const VISITOR_LINK_PREFIX = /^\/(t|s|f)\//i;

export type Destination = "panel" | "invalid_link" | "not_found" | "method_not_allowed";

/** Whether a path is under one of the Worker's API prefixes, in any case (a mistyped one included). */
export function isApiPath(path: string): boolean {
  return API_PREFIX.test(path);
}

/** Whether a path is under the prefixes of a visitor's links (`/t/`, `/s/`, `/f/`). */
export function isVisitorLinkPath(path: string): boolean {
  return VISITOR_LINK_PREFIX.test(path);
}

/**
 * Only a GET or HEAD navigation to a path outside the API prefixes gets the panel; one to a
 * visitor's link that a mail client cut short or ran on gets the page of a link not valid.
 */
export function destinationOf(request: Request): Destination {
  const path = new URL(request.url).pathname;
  if (isVisitorLinkPath(path) && (request.method === "GET" || request.method === "HEAD") && isNavigation(request)) return "invalid_link";
  if (isApiPath(path)) return "not_found";
  if (request.method !== "GET" && request.method !== "HEAD") return "method_not_allowed";
  return isNavigation(request) ? "panel" : "not_found";
}

/** A browser opening a page: it asks for HTML (a script's fetch or curl's `*\/*` does not). */
function isNavigation(request: Request): boolean {
  if (request.headers.get("sec-fetch-mode") === "navigate") return true;
  return (request.headers.get("accept") ?? "").toLowerCase().includes("text/html");
}

export async function answerUnrouted(request: Request, env: Env): Promise<Response> {
  const path = new URL(request.url).pathname;
  const destination = destinationOf(request);
  if (destination === "panel") return env.ASSETS.fetch(request);
  if (destination === "invalid_link") return invalidLinkAnswer();
  if (destination === "method_not_allowed") return refuseMethod(request, "GET, HEAD", `${path} is a page of the panel, read with GET`);
  const missing = new ApiError(404, `path: no route ${request.method} ${path}`, [{ field: "path", message: `unknown path ${path}` }]);
  return ADMIN_PREFIX.test(path) ? adminFailure(missing) : envelopeFailure(newRequestId(), missing);
}

/** 405 in the envelope's Failed body, naming the methods the path takes (`allow`, as HTTP asks). */
export function refuseMethod(request: Request, allow: string, what: string): Response {
  const refused = envelopeFailure(newRequestId(), new ApiError(405, `method: ${what}, not ${request.method}`));
  refused.headers.set("allow", allow);
  return refused;
}
