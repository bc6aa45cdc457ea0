import { panelAnswer, panelListAnswer } from "../domain/answers/panels";
import { NEEDS } from "../domain/permissions";
import { ATTRIBUTE_NAME_PATTERN, canonicalAttributeName } from "../domain/attributes";
import { panelName, panelPatchBody, timezoneName as timezone } from "../domain/panels";
import { orNotFound, unwrap } from "../lib/http/errors";
import { z } from "../lib/z";
import { changePanel } from "../services/panels/change";
import { createPanel as createNewPanel } from "../services/panels/create";
import { listPanels, type Panel } from "../store/panels";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { defineAdminRoute, definePanelRoute } from "./route";
import { config } from "../lib/config";
import { campaignLeadMinutes } from "../services/broadcasts/lifecycle";


export function panelView(panel: Panel, env: Env) {
  return {
    id: panel.id,
    name: panel.name,
    primary_key: panel.primaryKey,
    timezone: panel.timezone,
    region: config(env).region,
    api_mode: panel.apiMode,
    client_id: panel.clientId,
    unknown_attributes: panel.unknownAttributes,
    cors_origins: panel.corsOrigins,
    shard: panel.shard,
    event_retention_days: panel.eventRetentionDays,
    campaign_lead_minutes: campaignLeadMinutes(panel, env),
    message_rules: panel.messageRules,
    require_two_factor: panel.requireTwoFactor,
    created_at: isoTime(panel.createdAt),
    updated_at: isoTime(panel.updatedAt),
  };
}

const createPanel = defineAdminRoute({
  method: "POST",
  path: "/panels",
  role: "admin",
  response: panelAnswer,
  summary: "Create a panel with the default attribute schema",
  status: 201,
  body: z.strictObject({
    name: panelName,
    primary_key: z
      .string()
      .max(64)
      .transform(canonicalAttributeName)
      .pipe(z.string().regex(ATTRIBUTE_NAME_PATTERN, { error: "must be an attribute name: a letter, then letters, digits or _" }))
      .default("EMAIL"),
    timezone: timezone.default("UTC"),
    // Placement by hand (moving data between shards, tests); otherwise the shard with the least data.
    shard: z.int().min(0).max(1023).optional(),
  }),
  async handle({ env, body }) {
    return panelView(unwrap(await createNewPanel(env, { name: body.name, primaryKey: body.primary_key, timezone: body.timezone, shard: body.shard })), env);
  },
});

const listAllPanels = defineAdminRoute({
  method: "GET",
  path: "/panels",
  role: "admin",
  response: panelListAnswer,
  summary: "All panels of this deployment",
  async handle({ env }) {
    return { panels: (await listPanels(env.DB)).map((panel) => panelView(panel, env)) };
  },
});

const readPanel = definePanelRoute({
  method: "GET",
  path: "/panels/:panel",
  role: NEEDS.read,
  response: panelAnswer,
  summary: "Read a panel",
  async handle({ env, panel }) {
    return panelView(panel, env);
  },
});

const patchPanel = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel",
  role: NEEDS.settings,
  response: panelAnswer,
  summary:
    "Turn API mode on or off, rename, change the time zone, what contact calls do with unknown attributes, the CORS origins, how many days events stay before they move to the archive, how far ahead campaigns must be scheduled, or the frequency caps and quiet hours",
  body: panelPatchBody,
  async handle({ env, db, caller, panel, body }) {
    const updated = await orNotFound(changePanel(env, db, panel, body, auditorOf(caller)), `No panel with id "${panel.id}"`);
    return panelView(updated, env);
  },
});

export const panelRoutes = [createPanel, listAllPanels, readPanel, patchPanel];
