import { bearerToken } from "../lib/http/credentials";
import { readCookie } from "../lib/http/cookies";
import { constantTimeEqual } from "../lib/crypto";
import { resolveSession, type Session } from "../services/operators/sessions";
import { config } from "../lib/config";

export const SESSION_COOKIE = "panel_session";

/** Who calls the admin API: the deployment's admin token, or an operator's panel session. */
export type AdminCaller = { kind: "admin" } | { kind: "operator"; session: Session };

/** The admin API's bearer token check (CONTRACT 4). */
export function isAdmin(request: Request, env: Env): boolean {
  const token = bearerToken(request);
  const { adminToken } = config(env);
  return !!token && adminToken !== undefined && constantTimeEqual(token, adminToken);
}

/**
 * The caller of an admin request, or null. A request that carries a bearer token is judged by
 * it alone: a wrong token is refused even when a session cookie comes with it.
 */
export async function adminCaller(request: Request, env: Env): Promise<AdminCaller | null> {
  if (bearerToken(request) !== undefined) return isAdmin(request, env) ? { kind: "admin" } : null;
  const token = readCookie(request, SESSION_COOKIE);
  if (!token) return null;
  const session = await resolveSession(env.DB, token);
  return session ? { kind: "operator", session } : null;
}
