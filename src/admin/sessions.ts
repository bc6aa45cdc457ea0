import { Router, type IRequest } from "itty-router";
import { acceptInvitationBody, invitationLookupBody, passwordResetBody, passwordResetRequestBody, signInBody, signInChallengeBody, type InvitationPreviewView, type SessionView, type SignInChallengeView } from "../domain/operators";
import { readJsonBody } from "../lib/http/body";
import { config } from "../lib/config";
import { isSameOrigin, sessionCookie } from "../lib/http/cookies";
import { ApiError, asApiError, notFound, parseOrThrow, unwrap } from "../lib/http/errors";
import { adminFailure, json, newRequestId } from "../lib/http/respond";
import { acceptInvitation, previewInvitation } from "../services/operators/invitations";
import { PASSWORD_RESET_TTL_MS, requestPasswordReset, resetPassword } from "../services/operators/password-reset";
import { csrfMatches, signIn, signInChallenge, signOut, type Session } from "../services/operators/sessions";
import { adminCaller, SESSION_COOKIE } from "./auth";

export const AUTH_BASE = "/auth/v1";

function sessionView(session: Session): SessionView {
  return {
    operator: { id: session.operator.id, email: session.operator.email, name: session.operator.name },
    panels: session.roles.map((role) => ({ id: role.panelId, name: role.panelName, role: role.role })),
    csrf_token: session.csrfToken,
  };
}

function crossSite(): ApiError {
  return new ApiError(403, "Cross-site request refused: sign-in, sign-out and password resets are accepted only from the panel's own origin");
}

async function currentSession(request: Request, env: Env): Promise<Session> {
  const caller = await adminCaller(request, env);
  if (caller?.kind !== "operator") throw new ApiError(401, "Not signed in");
  return caller.session;
}

const router = Router<IRequest, [Env, ExecutionContext]>({ base: AUTH_BASE });
router
  .post("/sign-in", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(signInBody, await readJsonBody(request));
    const address = request.headers.get("cf-connecting-ip") ?? "unknown";
    const { session, token } = unwrap(await signIn(env.DB, config(env).secretsKey, { ...body, address }));
    return json(sessionView(session), 200, { "set-cookie": sessionCookie(request, SESSION_COOKIE, token) });
  })
  .post("/sign-in/challenge", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(signInChallengeBody, await readJsonBody(request));
    const answer = await signInChallenge(env.DB, config(env).secretsKey, body.email);
    const view: SignInChallengeView = answer.required
      ? { required: true, token: answer.challenge.token, difficulty: answer.challenge.difficulty, expires_at: new Date(answer.challenge.expiresAt).toISOString() }
      : { required: false };
    return json(view);
  })
  .post("/password-reset", async (request: IRequest, env: Env, exec: ExecutionContext) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(passwordResetRequestBody, await readJsonBody(request));
    unwrap(
      await requestPasswordReset(env, {
        email: body.email,
        address: request.headers.get("cf-connecting-ip") ?? "unknown",
        now: Date.now(),
        waitUntil: (work) => exec.waitUntil(work),
      }),
    );
    // The same answer whether or not the address has an account.
    return json(
      { message: `If an operator account has this address, a link to set a new password is on its way; it works once, for ${PASSWORD_RESET_TTL_MS / 60_000} minutes.` },
      202,
    );
  })
  .post("/password-reset/confirm", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(passwordResetBody, await readJsonBody(request));
    unwrap(await resetPassword(env.DB, body.token, body.password, Date.now()));
    return json({ reset: true, message: "Your password is set. Every session of the account has ended: sign in with the new password." });
  })
  // The token rides in a body, not a query string, so no log or Referer holds it.
  .post("/invitation", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(invitationLookupBody, await readJsonBody(request));
    const preview = unwrap(await previewInvitation(env.DB, body.token));
    const view: InvitationPreviewView = {
      email: preview.email,
      panel_name: preview.panelName,
      role: preview.role,
      expires_at: new Date(preview.expiresAt).toISOString(),
      has_account: preview.hasAccount,
    };
    return json(view);
  })
  .post("/invitation/accept", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(acceptInvitationBody, await readJsonBody(request));
    const address = request.headers.get("cf-connecting-ip") ?? "unknown";
    const { session, token } = unwrap(await acceptInvitation(env, { token: body.token, password: body.password, name: body.name || null, address }));
    return json(sessionView(session), 200, { "set-cookie": sessionCookie(request, SESSION_COOKIE, token) });
  })
  .get("/session", async (request: IRequest, env: Env) => json(sessionView(await currentSession(request, env))))
  .post("/sign-out", async (request: IRequest, env: Env) => {
    const session = await currentSession(request, env);
    if (!isSameOrigin(request) || !csrfMatches(session, request.headers.get("x-csrf-token"))) throw crossSite();
    await signOut(env.DB, session);
    return json({ signed_out: true }, 200, { "set-cookie": sessionCookie(request, SESSION_COOKIE, "", 0) });
  });

/** The panel's sign-in, session, sign-out and password-reset endpoints; answers in the admin API's error shape. */
export async function handleAuth(request: Request, env: Env, exec: ExecutionContext): Promise<Response> {
  try {
    const response: Response | undefined = await router.fetch(request, env, exec);
    return response ?? adminFailure(notFound(`No route ${request.method} ${new URL(request.url).pathname}`));
  } catch (error) {
    return adminFailure(asApiError(error, newRequestId()));
  }
}
