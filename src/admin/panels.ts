import { ATTRIBUTE_NAME_PATTERN, canonicalAttributeName, DEFAULT_ATTRIBUTES } from "../domain/attributes";
import { isValidTimeZone } from "../domain/time";
import { orNotFound } from "../lib/http/errors";
import { newId, randomBase64Url } from "../lib/random";
import { z } from "../lib/z";
import { insertPanel, listPanels, updatePanel, type Panel } from "../store/panels";
import { isoTime } from "../store/sql";
import { defineAdminRoute, definePanelRoute } from "./route";

const timezone = z
  .string()
  .refine(isValidTimeZone, { error: "must be an IANA time zone such as UTC or Asia/Kolkata" })
  .meta({ example: "Asia/Kolkata" });
const panelName = z.string().trim().min(1, { error: "must not be empty" }).max(200);

export function panelView(panel: Panel, env: Env) {
  return {
    id: panel.id,
    name: panel.name,
    primary_key: panel.primaryKey,
    timezone: panel.timezone,
    region: env.REGION,
    api_mode: panel.apiMode,
    client_id: panel.clientId,
    created_at: isoTime(panel.createdAt),
    updated_at: isoTime(panel.updatedAt),
  };
}

const createPanel = defineAdminRoute({
  method: "POST",
  path: "/panels",
  summary: "Create a panel with the default attribute schema",
  status: 201,
  body: z.object({
    name: panelName,
    primary_key: z
      .string()
      .transform(canonicalAttributeName)
      .pipe(z.string().regex(ATTRIBUTE_NAME_PATTERN, { error: "must be an attribute name: a letter, then letters, digits or _" }))
      .default("EMAIL"),
    timezone: timezone.default("UTC"),
  }),
  async handle({ env, body }) {
    const now = Date.now();
    const panel: Panel = {
      id: newId("pnl"),
      name: body.name,
      primaryKey: body.primary_key,
      timezone: body.timezone,
      apiMode: false,
      clientId: randomBase64Url(24),
      createdAt: now,
      updatedAt: now,
    };
    // A primary key outside the defaults (a CRM's customer id, say) becomes a string attribute.
    const attributes = DEFAULT_ATTRIBUTES.some(([name]) => name === panel.primaryKey)
      ? DEFAULT_ATTRIBUTES
      : [...DEFAULT_ATTRIBUTES, [panel.primaryKey, "string"] as const];
    await insertPanel(env.DB, panel, attributes);
    return panelView(panel, env);
  },
});

const listAllPanels = defineAdminRoute({
  method: "GET",
  path: "/panels",
  summary: "All panels of this deployment",
  async handle({ env }) {
    return { panels: (await listPanels(env.DB)).map((panel) => panelView(panel, env)) };
  },
});

const readPanel = definePanelRoute({
  method: "GET",
  path: "/panels/:panel",
  summary: "Read a panel",
  async handle({ env, panel }) {
    return panelView(panel, env);
  },
});

const patchPanel = definePanelRoute({
  method: "PATCH",
  path: "/panels/:panel",
  summary: "Turn API mode on or off, rename, or change the time zone",
  body: z
    .object({ api_mode: z.boolean().optional(), name: panelName.optional(), timezone: timezone.optional() })
    .strict(),
  async handle({ env, panel, body }) {
    const changes = { apiMode: body.api_mode, name: body.name, timezone: body.timezone };
    const updated = await orNotFound(updatePanel(env.DB, panel.id, changes, Date.now()), `No panel with id "${panel.id}"`);
    return panelView(updated, env);
  },
});

export const panelRoutes = [createPanel, listAllPanels, readPanel, patchPanel];
