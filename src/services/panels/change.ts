import type { z } from "../../lib/z";
import type { panelPatchBody } from "../../domain/panels";
import { updatePanel, type Panel } from "../../store/panels";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";

export type PanelChange = z.output<typeof panelPatchBody>;

/** Changes a panel's settings; the audit log records an API mode change apart from the other settings. Null when the panel is gone. */
export async function changePanel(env: Env, db: ShardDb, panel: Panel, body: PanelChange, by: Auditor): Promise<Panel | null> {
  const changes = {
    apiMode: body.api_mode,
    name: body.name,
    timezone: body.timezone,
    unknownAttributes: body.unknown_attributes,
    corsOrigins: body.cors_origins,
    eventRetentionDays: body.event_retention_days,
    campaignLeadMinutes: body.campaign_lead_minutes,
    messageRules: body.message_rules,
    requireTwoFactor: body.require_two_factor,
  };
  const updated = await updatePanel(env.DB, panel.id, changes, Date.now());
  if (!updated) return null;
  if (body.api_mode !== undefined && body.api_mode !== panel.apiMode) await recordAudit(db, panel.id, by, "panel.api_mode_changed", panel.id, { api_mode: body.api_mode });
  const settings = (["name", "timezone", "unknown_attributes", "cors_origins", "campaign_lead_minutes", "message_rules", "require_two_factor"] as const).filter((name) => body[name] !== undefined);
  if (settings.length) await recordAudit(db, panel.id, by, "panel.settings_changed", panel.id, Object.fromEntries(settings.map((name) => [name, body[name]])));
  return updated;
}
