import { panelAnswer, panelListAnswer } from "../domain/answers/panels";
import { ATTRIBUTE_NAME_PATTERN, canonicalAttributeName, DEFAULT_ATTRIBUTES } from "../domain/attributes";
import { panelName, panelPatchBody, timezoneName as timezone } from "../domain/panels";
import { invalidField, orNotFound } from "../lib/http/errors";
import { shardForNewPanel } from "../services/access/shards";
import { DEFAULT_RETENTION_DAYS } from "../services/retention/archive";
import { insertAttributes } from "../store/attributes";
import { allShards, shardByIndex } from "../store/shards";
import { newId, randomBase64Url } from "../lib/random";
import { z } from "../lib/z";
import { insertPanel, listPanels, updatePanel, type Panel } from "../store/panels";
import { isoTime } from "../store/sql";
import { audited } from "./audit";
import { defineAdminRoute, definePanelRoute } from "./route";


export function panelView(panel: Panel, env: Env) {
  return {
    id: panel.id,
    name: panel.name,
    primary_key: panel.primaryKey,
    timezone: panel.timezone,
    region: env.REGION,
    api_mode: panel.apiMode,
    client_id: panel.clientId,
    unknown_attributes: panel.unknownAttributes,
    cors_origins: panel.corsOrigins,
    shard: panel.shard,
    event_retention_days: panel.eventRetentionDays,
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
    const now = Date.now();
    const shard = body.shard ?? (await shardForNewPanel(env));
    const db = shardByIndex(env, shard);
    if (!db) throw invalidField("shard", `this deployment has no shard ${shard} (shards 0 to ${allShards(env).length - 1})`);
    const panel: Panel = {
      id: newId("pnl"),
      name: body.name,
      primaryKey: body.primary_key,
      timezone: body.timezone,
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
    const attributes = DEFAULT_ATTRIBUTES.some(([name]) => name === panel.primaryKey)
      ? DEFAULT_ATTRIBUTES
      : [...DEFAULT_ATTRIBUTES, [panel.primaryKey, "string"] as const];
    await insertAttributes(db, panel.id, attributes, now);
    await insertPanel(env.DB, panel);
    return panelView(panel, env);
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
  role: "viewer",
  response: panelAnswer,
  summary: "Read a panel",
  async handle({ env, panel }) {
    return panelView(panel, env);
  },
});

const patchPanel = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel",
  role: "owner",
  response: panelAnswer,
  summary: "Turn API mode on or off, rename, change the time zone, what contact calls do with unknown attributes, the CORS origins, or how many days events stay before they move to the archive",
  body: panelPatchBody,
  async handle({ env, db, caller, panel, body }) {
    const changes = {
      apiMode: body.api_mode,
      name: body.name,
      timezone: body.timezone,
      unknownAttributes: body.unknown_attributes,
      corsOrigins: body.cors_origins,
      eventRetentionDays: body.event_retention_days,
    };
    const updated = await orNotFound(updatePanel(env.DB, panel.id, changes, Date.now()), `No panel with id "${panel.id}"`);
    if (body.api_mode !== undefined && body.api_mode !== panel.apiMode) await audited({ db, caller, panel }, "panel.api_mode_changed", panel.id, { api_mode: body.api_mode });
    const settings = (["name", "timezone", "unknown_attributes", "cors_origins"] as const).filter((name) => body[name] !== undefined);
    if (settings.length) await audited({ db, caller, panel }, "panel.settings_changed", panel.id, Object.fromEntries(settings.map((name) => [name, body[name]])));
    return panelView(updated, env);
  },
});

export const panelRoutes = [createPanel, listAllPanels, readPanel, patchPanel];
