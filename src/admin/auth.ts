import { bearerToken } from "../lib/http/credentials";
import { constantTimeEqual } from "../lib/crypto";

/** The admin API's bearer token check (CONTRACT 4). */
export function isAdmin(request: Request, env: Env): boolean {
  const token = bearerToken(request);
  return !!token && typeof env.ADMIN_TOKEN === "string" && env.ADMIN_TOKEN !== "" && constantTimeEqual(token, env.ADMIN_TOKEN);
}
