import type { IRequest } from "itty-router";
import { allowOrigin } from "../domain/fields";
import { confirmPage, formMessagePage, hostedFormPage, TURNSTILE_ORIGIN, type FormEcho, type SignupForm } from "../domain/signup-forms";
import { config } from "../lib/config";
import { readBodyParams } from "../lib/http/body";
import { ApiError, problemError } from "../lib/http/errors";
import { formPageCsp } from "../lib/http/security-headers";
import type { Problem } from "../lib/problems";
import { findPublicForm, type PublicForm } from "../services/access/forms";
import { confirmSignup } from "../services/forms/confirm";
import type { ConsentClient } from "../services/consent/record";
import { submitSignupForm, type SubmitOutcome } from "../services/forms/submit";
import { listNamesOf } from "../store/lists";

// The public face of signup forms (issue 45): GET /f/{form} is the hosted page (plain HTML,
// works without script), POST /f/{form} takes its submission and the snippet's, as a form post
// (answered with a page or the form's redirect) or as JSON (`/f/{form}.json`, or a JSON body),
// with CORS by the form's allowed origins. /f/{form}/confirm/{token} is the double opt-in link.

/** A signup is a few short fields: a larger body is not one. */
const MAX_SUBMISSION_BYTES = 64 * 1024;
const NO_STORE = { "cache-control": "no-store, private" };
const PREFLIGHT_MAX_AGE = "600";

function clientOf(request: Request): ConsentClient {
  return { ip: request.headers.get("cf-connecting-ip"), userAgent: request.headers.get("user-agent") };
}

function html(body: string, status: number, csp: string, extra: Record<string, string> = {}): Response {
  return new Response(body, { status, headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": csp, ...NO_STORE, ...extra } });
}

function pageCsp(form: SignupForm | null, withTurnstile: boolean): string {
  const redirectOrigin = form?.redirectUrl ? new URL(form.redirectUrl).origin : undefined;
  return formPageCsp({ turnstileOrigin: withTurnstile && form?.turnstileSiteKey ? TURNSTILE_ORIGIN : undefined, redirectOrigin });
}

function jsonAnswer(body: unknown, status: number, cors: Record<string, string>): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json; charset=utf-8", ...NO_STORE, ...cors } });
}

/** The CORS headers for `origin` under the form's list; null when a browser page of that origin may not post. */
function corsFor(form: SignupForm, origin: string | null, ownOrigins: readonly string[]): Record<string, string> | null {
  if (origin === null || origin === "null") return {};
  if (ownOrigins.includes(origin)) return {};
  const allowed = allowOrigin(form.allowedOrigins, origin);
  return allowed === null ? null : { "access-control-allow-origin": allowed, vary: "Origin" };
}

function ownOriginsOf(request: Request, env: Env): string[] {
  return [new URL(request.url).origin, new URL(config(env).publicBaseUrl).origin];
}

function wantsJson(request: Request, asJson: boolean): boolean {
  return asJson || (request.headers.get("content-type") ?? "").toLowerCase().includes("json");
}

const SUBSCRIBED_TEXT = "You are subscribed. Thank you!";
const CHECK_INBOX_TEXT = "Almost done: we sent you an email. Follow its link to confirm your subscription.";

function outcomeText(form: SignupForm, outcome: SubmitOutcome): string {
  if (outcome === "subscribed") return form.thankYouText || SUBSCRIBED_TEXT;
  return form.confirmationText || CHECK_INBOX_TEXT;
}

/** GET, POST and OPTIONS /f/{form} (and /f/{form}.json). */
export async function handleForm(request: IRequest, env: Env, exec: ExecutionContext): Promise<Response> {
  const raw = request.params.form!;
  const asJson = raw.endsWith(".json");
  const formId = asJson ? raw.slice(0, -".json".length) : raw;
  const method = request.method;
  const json = wantsJson(request, asJson) || method === "OPTIONS";
  const loaded = await findPublicForm(env, formId);
  if (!loaded) {
    const message = `No signup form ${formId}`;
    return json ? jsonAnswer({ error: message, errors: [{ field: "form", message: "unknown form" }] }, 404, {}) : html(formMessagePage("Form not found", "This signup form does not exist any more.", false), 404, pageCsp(null, false));
  }
  const { form } = loaded;
  const origin = request.headers.get("origin");
  const cors = corsFor(form, origin, ownOriginsOf(request, env));

  if (method === "OPTIONS") {
    if (cors === null) return jsonAnswer({ error: `origin: ${origin} may not post to this form; the form's allowed_origins lists the sites that may`, errors: [{ field: "origin", message: "not in the form's allowed_origins" }] }, 403, { vary: "Origin" });
    return new Response(null, {
      status: 204,
      headers: { ...cors, "access-control-allow-methods": "POST, OPTIONS", "access-control-allow-headers": "Content-Type", "access-control-max-age": PREFLIGHT_MAX_AGE },
    });
  }
  if (method === "GET" || method === "HEAD") {
    if (asJson) return jsonAnswer({ error: "method: the form's JSON endpoint takes POST", errors: [{ field: "method", message: "use POST" }] }, 405, { allow: "POST, OPTIONS" });
    const page = hostedFormPage(form, await markupFacts(request, loaded));
    return html(method === "HEAD" ? "" : page, 200, pageCsp(form, true));
  }
  if (method !== "POST") return jsonAnswer({ error: `method: a form takes GET and POST, not ${method}` }, 405, { allow: "GET, POST, OPTIONS" });

  if (cors === null) {
    const message = `This form does not take signups from ${origin}.`;
    return json ? jsonAnswer({ error: `origin: ${origin} may not post to this form`, errors: [{ field: "origin", message: "not in the form's allowed_origins" }] }, 403, { vary: "Origin" }) : html(formMessagePage("Signup refused", message, false), 403, pageCsp(form, false));
  }
  let params: Record<string, unknown>;
  try {
    params = await readBodyParams(request, MAX_SUBMISSION_BYTES);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    return json ? jsonAnswer({ error: error.message, errors: error.errors }, error.status, cors) : html(formMessagePage("Signup refused", error.message, false), error.status, pageCsp(form, false));
  }
  const now = Date.now();
  const outcome = await submitSignupForm(
    { env, db: loaded.db, panel: loaded.panel, form, schema: loaded.schema, settings: loaded.settings, client: clientOf(request), now, waitUntil: (work) => exec.waitUntil(work) },
    params,
  );
  if (!outcome.ok) return refusal(request, loaded, outcome.problem, params, json, cors);
  const text = outcomeText(form, outcome.value);
  if (json) return jsonAnswer({ status: outcome.value, message: text, redirect_url: form.redirectUrl }, 200, cors);
  if (form.redirectUrl) return new Response(null, { status: 303, headers: { location: form.redirectUrl, ...NO_STORE } });
  return html(formMessagePage(outcome.value === "subscribed" ? "Thank you" : "Check your inbox", text), 200, pageCsp(form, false));
}

async function markupFacts(request: Request, loaded: PublicForm) {
  return {
    action: `${new URL(request.url).origin}/f/${loaded.form.id}`,
    schema: loaded.schema,
    listNames: await listNamesOf(loaded.db, loaded.panel.id, loaded.form.listIds),
  };
}

async function refusal(request: Request, loaded: PublicForm, problem: Problem, params: Record<string, unknown>, json: boolean, cors: Record<string, string>): Promise<Response> {
  const error = problemError(problem);
  if (json) return jsonAnswer({ error: error.message, errors: error.errors }, error.status, cors);
  // The page again, with the visitor's values and each refusal at its field.
  const errors = error.errors.length ? error.errors : [{ field: "", message: error.message }];
  const echo: FormEcho = { values: params, errors };
  return html(hostedFormPage(loaded.form, await markupFacts(request, loaded), echo), error.status, pageCsp(loaded.form, true));
}

/** GET and POST /f/{form}/confirm/{token}: a page with a button (scanners open links), then the confirmation. */
export async function handleConfirm(request: IRequest, env: Env, exec: ExecutionContext): Promise<Response> {
  const loaded = await findPublicForm(env, request.params.form!);
  const csp = pageCsp(loaded?.form ?? null, false);
  const invalid = () => html(formMessagePage("Link not valid", "This confirmation link is not valid any more: it was used, it expired, or the form was removed. Sign up again to get a new one.", false), 404, csp);
  if (!loaded) return invalid();
  const token = request.params.token!;
  if (request.method === "GET" || request.method === "HEAD") return html(request.method === "HEAD" ? "" : confirmPage(loaded.form, new URL(request.url).pathname), 200, csp);
  if (request.method !== "POST") return html(formMessagePage("Not allowed", `A confirmation link takes GET and POST, not ${request.method}.`, false), 405, csp, { allow: "GET, POST" });
  const confirmed = await confirmSignup(
    { env, db: loaded.db, panel: loaded.panel, formId: loaded.form.id, schema: loaded.schema, settings: loaded.settings, client: clientOf(request), now: Date.now(), waitUntil: (work) => exec.waitUntil(work) },
    token,
  );
  if (!confirmed.ok) return invalid();
  if (loaded.form.redirectUrl) return new Response(null, { status: 303, headers: { location: loaded.form.redirectUrl, ...NO_STORE } });
  return html(formMessagePage("Subscription confirmed", loaded.form.thankYouText || SUBSCRIBED_TEXT), 200, csp);
}
