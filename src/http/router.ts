import { decodeOrKeep } from "../lib/uri";
import { config, ConfigError } from "../lib/config";
import { Router, type IRequest } from "itty-router";
import { handleAdmin } from "../admin";
import { handleAuth } from "../admin/sessions";
import { handleActivityBatch, handleActivityUpload, handleSingleActivity } from "../api/activity";
import { handleActivityCsv } from "../api/activity-csv";
import { handleChannelEvent } from "../api/channel-events";
import { handleAppPush, handleWebPush } from "../api/push";
import { handleErrorReportDownload } from "../api/bulk";
import { handleEnvelope } from "./envelope";
import { ApiError, onServiceFault, serviceFault } from "../lib/http/errors";
import { openApiDocument } from "./openapi";
import { answerUnrouted, isApiPath, isVisitorLinkPath, refuseMethod } from "./fallback";
import { isPublicApiPath, withCors } from "./cors";
import { handleClick, handleOpen, handleSesNotification, handlePreferences, handleTrackingHead, handleUnsubscribe } from "../api/tracking";
import { envelopeFailure, json, newRequestId } from "../lib/http/respond";
import { withSecurityHeaders } from "../lib/http/security-headers";
import { getOfHead } from "../lib/http/methods";
import { handleShortLink, handleSmsHook } from "../api/sms-hooks";
import { handleConfirm, handleForm } from "../api/forms";
import { LOCAL_MAILBOX_PATH, localMailboxPage } from "../services/channels/mailer";
import { noteFault, observing, type Observation } from "../lib/observability/context";
import { traceparentFor } from "../lib/observability/trace";
import { logLine, logLinesOn } from "../lib/observability/log";
import { countingD1 } from "../store/d1-count";
import { metrics } from "../lib/observability/metrics";
import { checkBindings } from "../services/operations/health";

export const API_VERSION = "apiv2";

function unknownVersion(version: string): Response {
  return envelopeFailure(
    newRequestId(),
    new ApiError(404, `version: unknown API version "${version}"; the current version is ${API_VERSION}`, [
      { field: "version", message: `unknown version "${version}"` },
    ]),
  );
}

/** Activity routes answer under `/v1/` (what real clients use) and under `/apiv2/` (CONTRACT 3). */
const ACTIVITY_VERSIONS = ["v1", API_VERSION];

type Handler = (request: IRequest, env: Env, exec: ExecutionContext) => Promise<Response>;

function activityRoute(handler: Handler): Handler {
  return async (request, env, exec) => {
    const version = request.params.version!;
    if (!ACTIVITY_VERSIONS.includes(version)) return unknownVersion(version);
    if (request.method !== "POST") {
      return envelopeFailure(newRequestId(), new ApiError(405, `method: activities are recorded with POST, not ${request.method}`));
    }
    return handler(request, env, exec);
  };
}

/** 200 with the region; 500 naming each var or secret that breaks its rule (the Worker cannot serve with it). */
function health(env: Env): Response {
  try {
    return json({ status: "ok", region: config(env).region });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const errors = error.problems.map((problem) => ({ field: problem.variable, message: problem.reason }));
    return json({ status: "misconfigured", message: error.message, errors }, 500);
  }
}

/**
 * 200 when every binding answers (the control database, each shard, R2); 503 naming each that
 * does not. A bad configuration answers as /health does. Probes change nothing and send no
 * queue message.
 */
async function deepHealth(env: Env): Promise<Response> {
  const shallow = health(env);
  if (shallow.status !== 200) return shallow;
  const checks = (await checkBindings(env)).map((c) => ({ binding: c.binding, ok: c.ok, ms: c.ms, error: c.error }));
  const failed = checks.filter((c) => !c.ok);
  if (failed.length === 0) return json({ status: "ok", region: config(env).region, checks });
  const errors = failed.map((c) => ({ field: c.binding, message: `unreachable: ${c.error}` }));
  return json({ status: "unavailable", message: `unreachable: ${failed.map((c) => c.binding).join(", ")}`, errors, checks }, 503);
}

onServiceFault(noteFault);

const router = Router<IRequest, [Env, ExecutionContext]>();

router
  .get("/health", (_request: IRequest, env: Env) => health(env))
  .get("/health/deep", (_request: IRequest, env: Env) => deepHealth(env))
  .get("/openapi.json", (request: IRequest) => json(openApiDocument(new URL(request.url).origin)))
  // The envelope is most calls: matched third, not after every other route's pattern (a few % of
  // a contact add's CPU, bench:api). It takes one-segment paths only, as the two above.
  .all("/:version", (request: IRequest, env: Env, exec: ExecutionContext) => {
    if (request.params.version !== API_VERSION) {
      // A one-segment page of the panel (`/reset-password`) goes on to answerUnrouted; a HEAD (`/health`) on to its GET.
      // `/s/` (the router takes a trailing slash) is a visitor's link cut short, not a version.
      if (request.method === "HEAD") return undefined;
      const path = new URL(request.url).pathname;
      return isApiPath(path) && !isVisitorLinkPath(path) ? unknownVersion(request.params.version!) : undefined;
    }
    if (request.method !== "GET" && request.method !== "POST") {
      return envelopeFailure(newRequestId(), new ApiError(405, `method: the envelope accepts GET and POST, not ${request.method}`));
    }
    return handleEnvelope(request, env, exec);
  })
  .all("/admin/v1/*", (request: IRequest, env: Env, exec: ExecutionContext) => handleAdmin(request, env, exec))
  // A kept transactional mail, only where LOCAL_MAILBOX is on (npm start); elsewhere the 404 of any unknown path.
  .get(`${LOCAL_MAILBOX_PATH}:id`, async (request: IRequest, env: Env) => {
    const page = await localMailboxPage(env, request.params.id!);
    if (page === null) return undefined;
    return new Response(page, { headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store", "x-content-type-options": "nosniff", "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'" } });
  })
  // The panel's sign-in, session and password reset (wrangler.toml's run_worker_first lists /auth/*).
  .all("/auth/v1/*", (request: IRequest, env: Env, exec: ExecutionContext) => handleAuth(request, env, exec))
  .all("/:version/activity/singleactivity/:client_id", activityRoute(handleSingleActivity))
  .all("/:version/activity/batch/:client_id", activityRoute(handleActivityBatch))
  .all("/:version/activity/upload", activityRoute(handleActivityUpload))
  .all("/:version/activity/batchactivity/:client_id", activityRoute(handleActivityCsv))
  .all("/v1/events/:channel/:client_id", handleChannelEvent)
  .all("/v1/events/:channel", handleChannelEvent)
  // Devices registered for push by sites (web push subscriptions) and apps (FCM tokens).
  .all("/v1/push/web/:client_id", handleWebPush)
  .all("/v1/push/app/:client_id", handleAppPush)
  // Email tracking (CONTRACT 7): open pixel, click redirect, unsubscribe page and one-click POST.
  .get("/t/o/:token", (request: IRequest, env: Env) => handleOpen(request.params.token!, request, env))
  .get("/t/c/:token", (request: IRequest, env: Env) => handleClick(request.params.token!, request, env))
  .get("/t/u/:token", (request: IRequest, env: Env) => handleUnsubscribe(request.params.token!, request, env))
  .post("/t/u/:token", (request: IRequest, env: Env) => handleUnsubscribe(request.params.token!, request, env))
  .get("/t/p/:token", (request: IRequest, env: Env) => handlePreferences(request.params.token!, request, env))
  .post("/t/p/:token", (request: IRequest, env: Env) => handlePreferences(request.params.token!, request, env))
  .head("/t/:kind/:token", (request: IRequest, env: Env) =>
    ["o", "c", "u", "p"].includes(request.params.kind!) ? handleTrackingHead(request.params.kind!, request.params.token!, request, env) : undefined,
  )
  .all("/t/:kind/:token", (request: IRequest) => {
    const kind = request.params.kind!;
    if (kind === "o" || kind === "c") return refuseMethod(request, "GET, HEAD", "a tracking link is read with GET");
    if (kind === "u" || kind === "p") return refuseMethod(request, "GET, HEAD, POST", "an unsubscribe or preferences link is read with GET or posted");
    return undefined;
  })
  .post("/hooks/email/ses/:token", (request: IRequest, env: Env) => handleSesNotification(request.params.token!, request, env))
  // SMS providers' delivery reports and replies (STOP), and the short links of SMS.
  .post("/hooks/sms/:provider/:panel/:token", (request: IRequest, env: Env) => handleSmsHook(request, env, "receipts"))
  .post("/hooks/sms/:provider/:panel/:token/replies", (request: IRequest, env: Env) => handleSmsHook(request, env, "replies"))
  // Signup forms (issue 45): the hosted page, its posts and JSON, and the double opt-in link.
  .all("/f/:form", handleForm)
  .all("/f/:form/confirm/:token", handleConfirm)
  .get("/s/:code", handleShortLink)
  .head("/s/:code", handleShortLink)
  .all("/s/:code", (request: IRequest) => refuseMethod(request, "GET, HEAD", "a short link is read with GET"))
  .get(`/${API_VERSION}/jobs/:job/errors.csv`, (request: IRequest, env: Env) => handleErrorReportDownload(request, env, decodeOrKeep(request.params.job!)))
  // HEAD of a page with no HEAD route of its own is its GET (uptime monitors probe /health so).
  // Routes above that take HEAD answer it themselves (tracking links must not count a look as an
  // open; the envelope never reads HEAD as GET).
  .head("*", (request: IRequest, env: Env, exec: ExecutionContext) => router.fetch(getOfHead(request), env, exec))
  // Clients of the public API read every answer as the envelope's (CONTRACT 8).
  .all(`/${API_VERSION}/*`, (request: IRequest, env: Env) => answerUnrouted(request, env))
  .all("/v1/*", (request: IRequest, env: Env) => answerUnrouted(request, env))
  .all("*", (request: IRequest, env: Env) => answerUnrouted(request, env));

/**
 * Every answer, the panel's pages included, leaves with its security headers
 * (lib/http/security-headers.ts), one JSON log line and one request data point (lib/observability).
 */
export async function routeRequest(request: Request, env: Env, exec: ExecutionContext): Promise<Response> {
  const started = Date.now();
  const requestId = newRequestId();
  const observation: Observation = { requestId, traceparent: traceparentFor(request.headers.get("traceparent"), requestId) };
  let url = new URL(request.url);
  if (url.pathname.includes("//")) ({ request, url } = withSlashesMerged(request, url));
  const path = url.pathname;
  // Counting D1 statements costs a wrapper object per statement: only where the line is written.
  const logging = logLinesOn(env);
  const served = logging ? countingD1(env) : env;
  const direct = directRoute(request, url, path, served, exec);
  const response = withSecurityHeaders(path, await observing(observation, () => answer(request, path, served, exec, direct)));
  // The matched pattern (itty-router sets it on the request); unmatched paths are one bucket.
  const route = direct?.route ?? (request as Partial<IRequest>).route ?? "*";
  const durationMs = Date.now() - started;
  if (logging) logLine({
    kind: "request",
    requestId,
    // version-traceid-parentid-flags, each of fixed width (trace.ts): the trace id without a split.
    traceId: observation.traceparent.slice(3, 35),
    panelId: observation.panelId ?? null,
    method: request.method,
    route,
    status: response.status,
    durationMs,
    d1Statements: observation.d1Statements ?? 0,
    errorClass: observation.errorClass ?? null,
  });
  metrics(env).request(route, request.method, response.status, durationMs);
  return response;
}

/**
 * A public API call whose path repeats a slash (`https://host//apiv2`: a base URL ending in `/`
 * joined to `/apiv2`, `…/v1//activity/upload`) goes to the path with single slashes, as servers
 * that merge slashes (nginx's default) answered it. Other paths are left as they came.
 */
function withSlashesMerged(request: Request, url: URL): { request: Request; url: URL } {
  const merged = url.pathname.replace(/\/{2,}/g, "/");
  if (!isPublicApiPath(merged)) return { request, url };
  const mergedUrl = new URL(url);
  mergedUrl.pathname = merged;
  return { request: new Request(mergedUrl, request), url: mergedUrl };
}

/** A call answered by its route without the router's walk: the route's pattern (for the log line) and its run. */
interface DirectRoute {
  route: string;
  run(request: Request): Promise<Response>;
}

/** The paths the envelope's route (`/:version`) hands to handleEnvelope: the version `apiv2`, trailing slashes taken as the router takes them. */
const ENVELOPE_PATH = new RegExp(`^/${API_VERSION}/*$`);

/**
 * The activity routes most posts take, as the router holds them (its pattern and handler). No
 * route before them in the router matches their paths (their second segment is `activity`; the
 * routes above are one segment, fixed paths or `/admin/v1`, `/auth/v1` and the mailbox's), and
 * their handler answers every POST, so running one directly answers as the router would.
 */
const DIRECT_ACTIVITY_ROUTES = ["/:version/activity/singleactivity/:client_id", "/:version/activity/batch/:client_id", "/:version/activity/upload"].map((path) => {
  const entry = router.routes.find((route) => route[3] === path && route[0] === "ALL" && route[2].length === 1);
  if (!entry) throw new Error(`the router has no route ${path} of one handler`);
  return { route: path, pattern: entry[1], handler: entry[2][0]! };
});

/**
 * The envelope's calls (GET and POST, which its route hands to handleEnvelope) and the activity
 * posts above go to their handler directly: the router would parse the URL and the query again,
 * try each route before theirs in turn and set its findings on the request, 3–6% of a contact
 * add's or a single post's isolate samples (itty-router's fetch and the URL, `PROFILE=api` and
 * `PROFILE=single npm run bench:profile`). Everything else goes through the router.
 */
function directRoute(request: Request, url: URL, path: string, env: Env, exec: ExecutionContext): DirectRoute | undefined {
  if (request.method === "GET" || request.method === "POST") {
    if (ENVELOPE_PATH.test(path)) return { route: "/:version", run: (r) => handleEnvelope(r, env, exec, url) };
  }
  if (request.method !== "POST") return undefined;
  for (const { route, pattern, handler } of DIRECT_ACTIVITY_ROUTES) {
    const match = pattern.exec(path);
    if (!match) continue;
    return {
      route,
      run: (r) => {
        // As the router gives them: the pattern's named groups.
        (r as IRequest).params = (match.groups ?? {}) as IRequest["params"];
        return handler(r as IRequest, env, exec) as Promise<Response>;
      },
    };
  }
  return undefined;
}

async function answer(request: Request, path: string, env: Env, exec: ExecutionContext, direct: DirectRoute | undefined): Promise<Response> {
  const route = direct ? direct.run : (r: Request) => router.fetch(r, env, exec);
  try {
    if (isPublicApiPath(path)) return await withCors(request, env, route);
    return await route(request);
  } catch (error) {
    // The last net under every handler's own: a JSON 500, never the runtime's page with a stack trace.
    return json({ error: serviceFault(error, newRequestId()).message }, 500);
  }
}
