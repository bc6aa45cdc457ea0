import type { KeyedSchema } from "../domain/contacts";
import { constantTimeEqual, sha256Hex } from "../lib/crypto";
import { randomBase64Url } from "../lib/random";
import { TtlCache } from "../lib/ttl-cache";
import type { Panel } from "../store/panels";
import { findKeyOwner } from "../store/users";
import { ApiError } from "../lib/http/errors";

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

/** Who a call acts for: the key's panel and that panel's attribute schema. */
export interface Caller {
  panel: Panel;
  schema: KeyedSchema;
}

/**
 * How long an isolate trusts a successful key lookup. Without it every call pays a D1 round
 * trip before its own work, which halves contact-add throughput (bench:api). The cost: a key
 * rotated or disabled, API mode turned off or an attribute added through another isolate
 * takes effect within this time; in the isolate that made the change, at once.
 */
export const CALLER_CACHE_MS = 10_000;
const callers = new TtlCache<Caller>(CALLER_CACHE_MS, 1000);

/** Drops every cached key lookup; admin changes to panels, users and attributes call it. */
export function forgetCallers(): void {
  callers.clear();
}

/**
 * Resolves an API key to its panel. Fails alike for a missing or unknown key, the key of a
 * disabled user and a panel without API mode (CONTRACT 2.1). Failures are never cached.
 */
export async function authenticateApiKey(db: D1Database, apiKey: unknown): Promise<Caller> {
  if (typeof apiKey !== "string" || apiKey.trim() === "") throw notAuthenticated();
  const hash = await hashApiKey(apiKey.trim());
  const cached = callers.get(hash);
  if (cached) return cached;
  const owner = await findKeyOwner(db, hash);
  if (!owner || !constantTimeEqual(owner.keyHash, hash) || owner.userDisabled || !owner.panel.apiMode) {
    throw notAuthenticated();
  }
  const caller: Caller = {
    panel: owner.panel,
    schema: { primaryKey: owner.panel.primaryKey, attributes: new Map(owner.attributes.map((a) => [a.name, a.type])) },
  };
  callers.set(hash, caller);
  return caller;
}

/** The token of an `Authorization: Bearer <token>` header ("" when empty); other schemes are ignored. */
export function bearerToken(request: Request): string | undefined {
  const header = request.headers.get("authorization");
  const match = header === null ? null : /^Bearer(?:\s+(.*))?$/i.exec(header.trim());
  return match ? (match[1] ?? "").trim() : undefined;
}

/** The API key sent with a call outside the envelope: the Bearer header, else the `apikey` query. */
export function requestApiKey(request: Request): string | undefined {
  return bearerToken(request) ?? new URL(request.url).searchParams.get("apikey") ?? undefined;
}

/** The admin API's bearer token check (CONTRACT 4). */
export function isAdmin(request: Request, env: Env): boolean {
  const token = bearerToken(request);
  return !!token && typeof env.ADMIN_TOKEN === "string" && env.ADMIN_TOKEN !== "" && constantTimeEqual(token, env.ADMIN_TOKEN);
}
