import type { KeyedSchema } from "../../domain/contacts";
import { constantTimeEqual, sha256Hex } from "../../lib/crypto";
import { randomBase64Url } from "../../lib/random";
import { TtlCache } from "../../lib/ttl-cache";
import type { Panel } from "../../store/panels";
import { findKeyOwner } from "../../store/users";

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
 * Resolves an API key to its panel; null alike for a missing or unknown key, the key of a
 * disabled user and a panel without API mode (CONTRACT 2.1). Failures are never cached.
 */
export async function findCaller(db: D1Database, apiKey: unknown): Promise<Caller | null> {
  if (typeof apiKey !== "string" || apiKey.trim() === "") return null;
  const hash = await hashApiKey(apiKey.trim());
  const cached = callers.get(hash);
  if (cached) return cached;
  const owner = await findKeyOwner(db, hash);
  if (!owner || !constantTimeEqual(owner.keyHash, hash) || owner.userDisabled || !owner.panel.apiMode) return null;
  const caller: Caller = {
    panel: owner.panel,
    schema: { primaryKey: owner.panel.primaryKey, attributes: new Map(owner.attributes.map((a) => [a.name, a.type])) },
  };
  callers.set(hash, caller);
  return caller;
}
