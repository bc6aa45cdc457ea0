import type { ControlDb } from "./shards";
import type { UnknownAttributeMode } from "../domain/attributes";
import { HOLDS_CONTACTS_ON, partitionsColumn, partitionsFromColumn, type Partition } from "./panel-partitions";
import { readMessageRules, type MessageRules } from "../domain/message-rules";

export interface Panel {
  id: string;
  name: string;
  primaryKey: string;
  timezone: string;
  apiMode: boolean;
  clientId: string;
  createdAt: number;
  updatedAt: number;
  /** What contact calls do with attributes the schema does not have. */
  unknownAttributes: UnknownAttributeMode;
  /** Origins allowed to call the public API from a browser (`*`: any). */
  corsOrigins: string[];
  /** The shard holding the panel's data (SHARD_n): the directory entry. */
  shard: number;
  /** Days recorded events stay in the shard before they move to R2 (services/retention). */
  eventRetentionDays: number;
  /** How far ahead the panel's campaigns must be scheduled; null: the deployment's BROADCAST_LEAD_MINUTES. */
  campaignLeadMinutes: number | null;
  /**
   * Its partition map (decision 0038), bucket order, read with the directory entry; empty: one
   * partition, every bucket on `shard` (a panel made before partitions).
   */
  partitions: Partition[];
  /** Frequency caps and quiet hours per channel (issue 46). */
  messageRules: MessageRules;
  /** Operators of the panel must sign in with a second factor (asked to enrol one at sign-in). */
  requireTwoFactor: boolean;
}

interface PanelRow {
  id: string;
  name: string;
  primary_key: string;
  timezone: string;
  api_mode: number;
  client_id: string;
  created_at: number;
  updated_at: number;
  unknown_attributes: UnknownAttributeMode;
  cors_origins: string;
  shard: number;
  event_retention_days: number;
  campaign_lead_minutes: number | null;
  /** partitionsColumn's JSON; absent where a statement does not read it (an insert). */
  partitions?: string | null;
  message_rules: string;
  require_two_factor: number;
}

export const PANEL_COLUMNS = "id, name, primary_key, timezone, api_mode, client_id, created_at, updated_at, unknown_attributes, cors_origins, shard, event_retention_days, campaign_lead_minutes, message_rules, require_two_factor";

/** What a read of a panel selects from `panels`: its columns and its partition map. */
const PANEL_READ = `${PANEL_COLUMNS}, ${partitionsColumn("panels")}`;

export function panelFromRow(row: PanelRow): Panel {
  return {
    id: row.id,
    name: row.name,
    primaryKey: row.primary_key,
    timezone: row.timezone,
    apiMode: row.api_mode === 1,
    clientId: row.client_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    unknownAttributes: row.unknown_attributes,
    corsOrigins: JSON.parse(row.cors_origins) as string[],
    shard: row.shard,
    eventRetentionDays: row.event_retention_days,
    campaignLeadMinutes: row.campaign_lead_minutes,
    partitions: partitionsFromColumn(row.partitions),
    messageRules: readMessageRules(row.message_rules),
    requireTwoFactor: row.require_two_factor === 1,
  };
}

/**
 * Writes the panel's directory entry; its starting attribute schema is written to its shard
 * before (insertAttributes), so a panel that exists is complete.
 */
export async function insertPanel(db: ControlDb, panel: Panel): Promise<void> {
  await db
    .prepare(`INSERT INTO panels (${PANEL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    .bind(
      panel.id, panel.name, panel.primaryKey, panel.timezone, panel.apiMode ? 1 : 0, panel.clientId, panel.createdAt, panel.updatedAt,
      panel.unknownAttributes, JSON.stringify(panel.corsOrigins), panel.shard, panel.eventRetentionDays, panel.campaignLeadMinutes, JSON.stringify(panel.messageRules),
      panel.requireTwoFactor ? 1 : 0,
    )
    .run();
}

/** How many panels the directory places on each shard (a shard without panels is absent). */
export async function panelsPerShard(db: ControlDb): Promise<Map<number, number>> {
  const { results } = await db.prepare("SELECT shard, COUNT(*) AS n FROM panels GROUP BY shard").all<{ shard: number; n: number }>();
  return new Map(results.map((r) => [r.shard, r.n]));
}

/** The shard the directory names for a panel; null for an unknown panel. */
export async function panelShardIndex(db: ControlDb, panelId: string): Promise<number | null> {
  const row = await db.prepare("SELECT shard FROM panels WHERE id = ?").bind(panelId).first<{ shard: number }>();
  return row ? row.shard : null;
}

export async function getPanel(db: ControlDb, id: string): Promise<Panel | null> {
  const row = await db.prepare(`SELECT ${PANEL_READ} FROM panels WHERE id = ?`).bind(id).first<PanelRow>();
  return row ? panelFromRow(row) : null;
}

export async function getPanelByClientId(db: ControlDb, clientId: string): Promise<Panel | null> {
  const row = await db.prepare(`SELECT ${PANEL_READ} FROM panels WHERE client_id = ?`).bind(clientId).first<PanelRow>();
  return row ? panelFromRow(row) : null;
}

export async function listPanels(db: ControlDb): Promise<Panel[]> {
  const { results } = await db.prepare(`SELECT ${PANEL_READ} FROM panels ORDER BY created_at`).all<PanelRow>();
  return results.map(panelFromRow);
}

export interface PanelPatch {
  name?: string;
  timezone?: string;
  apiMode?: boolean;
  unknownAttributes?: UnknownAttributeMode;
  corsOrigins?: string[];
  eventRetentionDays?: number;
  campaignLeadMinutes?: number;
  messageRules?: MessageRules;
  requireTwoFactor?: boolean;
}

export async function updatePanel(db: ControlDb, id: string, patch: PanelPatch, now: number): Promise<Panel | null> {
  const row = await db
    .prepare(
      `UPDATE panels SET name = COALESCE(?1, name), timezone = COALESCE(?2, timezone),
         api_mode = COALESCE(?3, api_mode), unknown_attributes = COALESCE(?4, unknown_attributes),
         cors_origins = COALESCE(?5, cors_origins), updated_at = ?6, event_retention_days = COALESCE(?8, event_retention_days),
         campaign_lead_minutes = COALESCE(?9, campaign_lead_minutes), message_rules = COALESCE(?10, message_rules),
         require_two_factor = COALESCE(?11, require_two_factor)
       WHERE id = ?7 RETURNING ${PANEL_READ}`,
    )
    .bind(
      patch.name ?? null,
      patch.timezone ?? null,
      patch.apiMode === undefined ? null : patch.apiMode ? 1 : 0,
      patch.unknownAttributes ?? null,
      patch.corsOrigins === undefined ? null : JSON.stringify(patch.corsOrigins),
      now,
      id,
      patch.eventRetentionDays ?? null,
      patch.campaignLeadMinutes ?? null,
      patch.messageRules === undefined ? null : JSON.stringify(patch.messageRules),
      patch.requireTwoFactor === undefined ? null : patch.requireTwoFactor ? 1 : 0,
    )
    .first<PanelRow>();
  return row ? panelFromRow(row) : null;
}

/**
 * Whether any panel lists `origin` (or `*`) among its CORS origins. For a browser's preflight
 * of a call that names its panel only in a header the preflight does not carry (a Bearer key),
 * so the one read across panels here answers a yes or no and nothing of a panel.
 */
export async function anyPanelAllowsOrigin(db: ControlDb, origin: string): Promise<boolean> {
  const row = await db
    .prepare("SELECT 1 AS allowed FROM panels p, json_each(p.cors_origins) o WHERE o.value IN (?1, '*') LIMIT 1")
    .bind(origin)
    .first<{ allowed: number }>();
  return row !== null;
}

/**
 * The panels whose rows a shard holds, home or partition (HOLDS_CONTACTS_ON), with their event
 * retention: the per-panel cron tasks' list (archive, day counts), each keeping what is there.
 */
export async function panelsOnShard(db: ControlDb, shard: number): Promise<Array<{ id: string; eventRetentionDays: number }>> {
  const { results } = await db.prepare(`SELECT id, event_retention_days FROM panels WHERE ${HOLDS_CONTACTS_ON} ORDER BY id`).bind(shard).all<{ id: string; event_retention_days: number }>();
  return results.map((r) => ({ id: r.id, eventRetentionDays: r.event_retention_days }));
}

/** Of the panels `ids` names, those with rows on `shard` still (a batch the cron handed out before a move or a new map). */
export async function panelsOnShardAmong(db: ControlDb, shard: number, ids: readonly string[]): Promise<Array<{ id: string; eventRetentionDays: number }>> {
  if (ids.length === 0) return [];
  const { results } = await db
    .prepare(`SELECT id, event_retention_days FROM panels WHERE ${HOLDS_CONTACTS_ON} AND id IN (SELECT value FROM json_each(?2)) ORDER BY id`)
    .bind(shard, JSON.stringify(ids))
    .all<{ id: string; event_retention_days: number }>();
  return results.map((r) => ({ id: r.id, eventRetentionDays: r.event_retention_days }));
}
