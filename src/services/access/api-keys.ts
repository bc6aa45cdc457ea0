import type { KeyedSchema } from "../../domain/contacts";
import { constantTimeEqual, sha256Hex } from "../../lib/crypto";
import { randomBase64Url } from "../../lib/random";
import { TtlCache } from "../../lib/ttl-cache";
import type { Panel } from "../../store/panels";
import { findKeyOwner } from "../../store/users";
import { listAttributes } from "../../store/attributes";
import { shardOf, type ShardDb } from "../../store/shards";

/** A new API key: shown once to the operator, stored only as its SHA-256 hash. */
export function generateApiKey(): string {
  return `mk_${randomBase64Url(32)}`;
}

export function hashApiKey(apiKey: string): Promise<string> {
  return sha256Hex(apiKey);
}

/** Who a call acts for: the key's panel and user, that panel's attribute schema and its shard's database. */
export interface Caller {
  panel: Panel;
  /** The API user the key is of: the audit log names it for the configuration the call changes. */
  user: { id: string; email: string };
  schema: KeyedSchema;
  db: ShardDb;
}

/**
 * How long an isolate trusts a successful key lookup. Without it every call pays a D1 round
 * trip before its own work, which halves contact-add throughput (bench:api). The cost: a key
 * rotated or disabled, API mode turned off or an attribute added through another isolate
 * takes effect within this time; in the isolate that made the change, at once.
 */
export const CALLER_CACHE_MS = 10_000;
const callers = new TtlCache<Omit<Caller, "db">>(CALLER_CACHE_MS, 1000);

/** Drops every cached key lookup; admin changes to panels, users and attributes call it. */
export function forgetCallers(): void {
  callers.clear();
}

/**
 * The caller of a key this isolate found within CALLER_CACHE_MS, without a wait: a call whose
 * key is cached (most calls) goes on at once. Undefined when findCaller has to look.
 */
export function cachedCaller(env: Env, apiKey: unknown): Caller | undefined {
  if (typeof apiKey !== "string") return undefined;
  // Keyed by the key itself, not its hash: hashing on every call was about 3% of a contact
  // add's CPU (bench:profile). The key lives only in this isolate's memory, as the request did.
  const cached = callers.get(apiKey.trim());
  return cached && { ...cached, db: shardOf(env, cached.panel) };
}

/**
 * Resolves an API key to its panel; null alike for a missing or unknown key, the key of a
 * disabled user and a panel without API mode (CONTRACT 2.1). Failures are never cached.
 */
export async function findCaller(env: Env, apiKey: unknown): Promise<Caller | null> {
  const cached = cachedCaller(env, apiKey);
  if (cached) return cached;
  if (typeof apiKey !== "string") return null;
  const key = apiKey.trim();
  if (key === "") return null;
  const hash = await hashApiKey(key);
  const owner = await findKeyOwner(env.DB, hash);
  if (!owner || !constantTimeEqual(owner.keyHash, hash) || owner.userDisabled || !owner.panel.apiMode) return null;
  const db = shardOf(env, owner.panel);
  const attributes = await listAttributes(db, owner.panel.id);
  const found = {
    panel: owner.panel,
    user: owner.user,
    schema: { primaryKey: owner.panel.primaryKey, attributes: new Map(attributes.map((a) => [a.name, a.type])) },
  };
  callers.set(key, found);
  return { ...found, db };
}
