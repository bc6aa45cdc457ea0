import {
  ACTIVITY_PARAM_TYPES,
  MAX_ACTIVITY_NAME_LENGTH,
  MAX_PARAMS_PER_ACTIVITY,
  PARAM_NAME_PATTERN,
  type ActivityDefinition,
} from "../domain/activity";
import { conflict, orNotFound } from "../lib/http/errors";
import { nameText } from "../domain/fields";
import { z } from "../lib/z";
import { getActivity, insertActivity, listActivities } from "../store/activities";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";

export function activityView(activity: ActivityDefinition) {
  return { activityid: String(activity.id), name: activity.name, params: activity.params, created_at: isoTime(activity.createdAt) };
}

const paramsSchema = z
  .record(z.string().max(64), z.enum(ACTIVITY_PARAM_TYPES, { error: `must be one of ${ACTIVITY_PARAM_TYPES.join(", ")}` }))
  .superRefine((params, ctx) => {
    const names = Object.keys(params);
    if (names.length > MAX_PARAMS_PER_ACTIVITY) ctx.addIssue({ code: "custom", message: `at most ${MAX_PARAMS_PER_ACTIVITY} parameters` });
    for (const name of names) {
      if (!PARAM_NAME_PATTERN.test(name)) {
        ctx.addIssue({ code: "custom", path: [name], message: "a parameter name is a letter or _, then up to 63 letters, digits or _" });
      }
    }
  })
  .default({})
  .meta({ example: { name: "string", prid: "integer", price: "float", prqt: "integer" } });

const defineActivity = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/activities",
  role: "marketer",
  summary: "Define an activity and the types of its parameters; clients post it by the activityid answered",
  status: 201,
  body: z.strictObject({
    name: nameText(MAX_ACTIVITY_NAME_LENGTH).meta({ example: "add_to_cart" }),
    params: paramsSchema,
  }),
  async handle({ env, body, panel }) {
    const activity = await insertActivity(env.DB, panel.id, body.name, body.params, Date.now());
    if (!activity) {
      throw conflict(`name: the panel already has an activity named "${body.name}"`, [{ field: "name", message: "already in use in this panel" }]);
    }
    return activityView(activity);
  },
});

const listPanelActivities = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/activities",
  role: "viewer",
  summary: "The panel's activity definitions",
  async handle({ env, panel }) {
    return { activities: (await listActivities(env.DB, panel.id)).map(activityView) };
  },
});

const readActivity = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/activities/:activity",
  role: "viewer",
  summary: "Read one activity definition",
  async handle({ env, path, panel }) {
    const id = /^\d{1,15}$/.test(path.activity) ? Number(path.activity) : 0;
    const activity = await orNotFound(id ? getActivity(env.DB, panel.id, id) : null, `No activity with id "${path.activity}" in this panel`);
    return activityView(activity);
  },
});

export const activityRoutes = [defineActivity, listPanelActivities, readActivity];
