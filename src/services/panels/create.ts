import { NO_RULES } from "../../domain/message-rules";
import { DEFAULT_ATTRIBUTES } from "../../domain/attributes";
import { refusedField, succeeded, type Result } from "../../lib/problems";
import { newId, randomBase64Url } from "../../lib/random";
import { insertAttributes } from "../../store/attributes";
import { insertPanel, type Panel } from "../../store/panels";
import { allShards, shardByIndex } from "../../store/shards";
import { shardForNewPanel } from "../access/shards";
import { DEFAULT_RETENTION_DAYS } from "../retention/archive";

/**
 * Creates a panel on the shard given, or else on the shard with the least data, with the default
 * attributes and its primary key; refused (invalid `shard`) when the deployment has no such shard.
 */
export async function createPanel(env: Env, input: { name: string; primaryKey: string; timezone: string; shard?: number | undefined }): Promise<Result<Panel>> {
  const now = Date.now();
  const shard = input.shard ?? (await shardForNewPanel(env));
  const db = shardByIndex(env, shard);
  if (!db) return refusedField("invalid", "shard", `this deployment has no shard ${shard} (shards 0 to ${allShards(env).length - 1})`);
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
    campaignLeadMinutes: null,
    // One partition, every bucket on its shard (decision 0038).
    partitions: [],
    messageRules: NO_RULES,
    requireTwoFactor: false,
  };
  // A primary key outside the defaults (a CRM's customer id, say) becomes a string attribute.
  const attributes = DEFAULT_ATTRIBUTES.some(([name]) => name === panel.primaryKey) ? DEFAULT_ATTRIBUTES : [...DEFAULT_ATTRIBUTES, [panel.primaryKey, "string"] as const];
  await insertAttributes(db, panel.id, attributes, now);
  await insertPanel(env.DB, panel);
  return succeeded(panel);
}
