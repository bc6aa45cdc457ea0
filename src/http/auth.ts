import { constantTimeEqual, sha256Hex } from "../lib/crypto";
import { randomBase64Url } from "../lib/random";
import type { Panel } from "../store/panels";
import { findKeyOwner } from "../store/users";
import { ApiError } from "./errors";

/** The one message for every authentication failure; it never says which check failed. */
export const NOT_AUTHENTICATED = "The caller could not be authenticated";

export function notAuthenticated(): ApiError {
  return new ApiError(401, NOT_AUTHENTICATED);
}

/** A new API key: shown once to the operator, stored only as its SHA-256 hash. */
export function generateApiKey(): string {
  return `mk_${randomBase64Url(32)}`;
}

export function hashApiKey(apiKey: string): Promise<string> {
  return sha256Hex(apiKey);
}

/**
 * Resolves an API key to its panel. Fails alike for a missing or unknown key, the key of a
 * disabled user and a panel without API mode (CONTRACT 2.1).
 */
export async function authenticateApiKey(db: D1Database, apiKey: unknown): Promise<Panel> {
  if (typeof apiKey !== "string" || apiKey.trim() === "") throw notAuthenticated();
  const hash = await hashApiKey(apiKey.trim());
  const owner = await findKeyOwner(db, hash);
  if (!owner || !constantTimeEqual(owner.keyHash, hash) || owner.userDisabled || !owner.panel.apiMode) {
    throw notAuthenticated();
  }
  return owner.panel;
}

/** The admin API's bearer token check (CONTRACT 4). */
export function isAdmin(request: Request, env: Env): boolean {
  const header = request.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match !== null && typeof env.ADMIN_TOKEN === "string" && env.ADMIN_TOKEN !== "" && constantTimeEqual(match[1]!, env.ADMIN_TOKEN);
}
