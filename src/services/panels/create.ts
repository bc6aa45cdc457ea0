import { DEFAULT_ATTRIBUTES } from "../../domain/attributes";
import { newId, randomBase64Url } from "../../lib/random";
import { insertAttributes } from "../../store/attributes";
import { insertPanel, type Panel } from "../../store/panels";
import { allShards, shardByIndex } from "../../store/shards";
import { shardForNewPanel } from "../access/shards";
import { DEFAULT_RETENTION_DAYS } from "../retention/archive";

export type CreatePanelOutcome = { ok: true; panel: Panel } | { ok: false; kind: "no_shard"; shard: number; shards: number };

/** Creates a panel on the shard given, or else on the shard with the least data, with the default attributes and its primary key. */
export async function createPanel(env: Env, input: { name: string; primaryKey: string; timezone: string; shard?: number | undefined }): Promise<CreatePanelOutcome> {
  const now = Date.now();
  const shard = input.shard ?? (await shardForNewPanel(env));
  const db = shardByIndex(env, shard);
  if (!db) return { ok: false, kind: "no_shard", shard, shards: allShards(env).length };
  const panel: Panel = {
    id: newId("pnl"),
    name: input.name,
    primaryKey: input.primaryKey,
    timezone: input.timezone,
    apiMode: false,
    clientId: randomBase64Url(24),
    createdAt: now,
    updatedAt: now,
    unknownAttributes: "reject",
    corsOrigins: [],
    shard,
    eventRetentionDays: DEFAULT_RETENTION_DAYS,
  };
  // A primary key outside the defaults (a CRM's customer id, say) becomes a string attribute.
  const attributes = DEFAULT_ATTRIBUTES.some(([name]) => name === panel.primaryKey) ? DEFAULT_ATTRIBUTES : [...DEFAULT_ATTRIBUTES, [panel.primaryKey, "string"] as const];
  await insertAttributes(db, panel.id, attributes, now);
  await insertPanel(env.DB, panel);
  return { ok: true, panel };
}
