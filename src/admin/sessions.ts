import { Router, type IRequest } from "itty-router";
import { passkeyRegistrationBody, passkeySignInBody, type PasskeyView, acceptInvitationBody, invitationLookupBody, signInCodeBody, signInEnrolBody, twoFactorCodeBody, type SignInStepView, type TotpEnrolmentView, type TwoFactorStatusView, passwordResetBody, passwordResetRequestBody, signInBody, signInChallengeBody, type InvitationPreviewView, type SessionView, type SignInChallengeView } from "../domain/operators";
import { readJsonBody } from "../lib/http/body";
import { config } from "../lib/config";
import { isSameOrigin, sessionCookie } from "../lib/http/cookies";
import { ApiError, asApiError, notFound, parseOrThrow, unwrap } from "../lib/http/errors";
import { adminFailure, json, newRequestId } from "../lib/http/respond";
import { acceptInvitation, previewInvitation } from "../services/operators/invitations";
import { PASSWORD_RESET_TTL_MS, requestPasswordReset, resetPassword } from "../services/operators/password-reset";
import { csrfMatches, signIn, signInChallenge, signOut, type Session, type SignInOutcome } from "../services/operators/sessions";
import { listPasskeys, passkeyRegistrationOptions, passkeySignInOptions, registerPasskey, removePasskey, signInWithPasskey, type RelyingParty } from "../services/operators/passkeys";
import { confirmAtSignIn, enrolAtSignIn, signInWithCode } from "../services/operators/sign-in-steps";
import { beginEnrolment, confirmEnrolment, disableTwoFactor, twoFactorStatus } from "../services/operators/two-factor";
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

/** The session of a signed-in operator's own change (their second factor): same origin and the CSRF token. */
async function sessionForChange(request: Request, env: Env): Promise<Session> {
  const session = await currentSession(request, env);
  if (!isSameOrigin(request) || !csrfMatches(session, request.headers.get("x-csrf-token"))) throw crossSite();
  return session;
}

/** A session's answer with its cookie, or the second-factor step due first (no cookie yet). */
function signInAnswer(request: Request, outcome: SignInOutcome, extra: Record<string, unknown> = {}): Response {
  if (outcome.kind === "step") {
    const view: SignInStepView = { step: outcome.step, token: outcome.token, expires_at: new Date(outcome.expiresAt).toISOString() };
    return json(view);
  }
  return json({ ...sessionView(outcome.session), ...extra }, 200, { "set-cookie": sessionCookie(request, SESSION_COOKIE, outcome.token) });
}

/** The WebAuthn relying party is the host the panel is served from: passkeys are bound to it. */
function relyingParty(request: Request): RelyingParty {
  const url = new URL(request.url);
  return { id: url.hostname, origin: url.origin };
}

function passkeyView(passkey: { id: string; name: string; createdAt: number; lastUsedAt: number | null }): PasskeyView {
  return { id: passkey.id, name: passkey.name, created_at: new Date(passkey.createdAt).toISOString(), last_used_at: passkey.lastUsedAt === null ? null : new Date(passkey.lastUsedAt).toISOString() };
}

const router = Router<IRequest, [Env, ExecutionContext]>({ base: AUTH_BASE });
router
  .post("/sign-in", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(signInBody, await readJsonBody(request));
    const address = request.headers.get("cf-connecting-ip") ?? "unknown";
    return signInAnswer(request, unwrap(await signIn(env.DB, config(env).secretsKey, { ...body, address })));
  })
  .post("/sign-in/code", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(signInCodeBody, await readJsonBody(request));
    return signInAnswer(request, { kind: "session", ...unwrap(await signInWithCode(env, body.token, body.code)) });
  })
  .post("/sign-in/enrol", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(signInEnrolBody, await readJsonBody(request));
    const view: TotpEnrolmentView = unwrap(await enrolAtSignIn(env, body.token));
    return json(view);
  })
  .post("/sign-in/enrol/confirm", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(signInCodeBody, await readJsonBody(request));
    const { recoveryCodes, ...opened } = unwrap(await confirmAtSignIn(env, body.token, body.code));
    return signInAnswer(request, { kind: "session", ...opened }, { recovery_codes: recoveryCodes });
  })
  .get("/two-factor", async (request: IRequest, env: Env) => {
    const session = await currentSession(request, env);
    const status = await twoFactorStatus(env.DB, session.operator.id);
    const view: TwoFactorStatusView = { enabled: status.enabled, recovery_codes_left: status.recoveryCodesLeft, required: status.required };
    return json(view);
  })
  .post("/two-factor/setup", async (request: IRequest, env: Env) => {
    const session = await sessionForChange(request, env);
    const view: TotpEnrolmentView = unwrap(await beginEnrolment(env, session.operator));
    return json(view);
  })
  .post("/two-factor/confirm", async (request: IRequest, env: Env) => {
    const session = await sessionForChange(request, env);
    const body = parseOrThrow(twoFactorCodeBody, await readJsonBody(request));
    return json({ enabled: true, recovery_codes: unwrap(await confirmEnrolment(env, session.operator.id, body.code)).recoveryCodes });
  })
  .post("/two-factor/disable", async (request: IRequest, env: Env) => {
    const session = await sessionForChange(request, env);
    const body = parseOrThrow(twoFactorCodeBody, await readJsonBody(request));
    unwrap(await disableTwoFactor(env, session.operator.id, body.code));
    return json({ enabled: false });
  })
  .post("/sign-in/passkey/options", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    return json(await passkeySignInOptions(env.DB, relyingParty(request)));
  })
  .post("/sign-in/passkey", async (request: IRequest, env: Env) => {
    if (!isSameOrigin(request)) throw crossSite();
    const body = parseOrThrow(passkeySignInBody, await readJsonBody(request));
    return signInAnswer(request, { kind: "session", ...unwrap(await signInWithPasskey(env, body.credential, relyingParty(request))) });
  })
  .get("/passkeys", async (request: IRequest, env: Env) => {
    const session = await currentSession(request, env);
    return json({ passkeys: (await listPasskeys(env.DB, session.operator.id)).map(passkeyView) });
  })
  .post("/passkeys/options", async (request: IRequest, env: Env) => {
    const session = await sessionForChange(request, env);
    return json(await passkeyRegistrationOptions(env.DB, session.operator, relyingParty(request)));
  })
  .post("/passkeys", async (request: IRequest, env: Env) => {
    const session = await sessionForChange(request, env);
    const body = parseOrThrow(passkeyRegistrationBody, await readJsonBody(request));
    return json(passkeyView(unwrap(await registerPasskey(env, session, body, relyingParty(request)))), 201);
  })
  .delete("/passkeys/:id", async (request: IRequest, env: Env) => {
    const session = await sessionForChange(request, env);
    unwrap(await removePasskey(env, session, request.params.id!));
    return json({ deleted: true });
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
    return signInAnswer(request, unwrap(await acceptInvitation(env, { token: body.token, password: body.password, name: body.name || null, address })));
  })
  .get("/session", async (request: IRequest, env: Env) => json(sessionView(await currentSession(request, env))))
  .post("/sign-out", async (request: IRequest, env: Env) => {
    await signOut(env.DB, await sessionForChange(request, env));
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
