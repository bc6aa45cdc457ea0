import { activityAnswer, activityListAnswer } from "../domain/answers/panels";
import { NEEDS } from "../domain/permissions";
import type { ActivityDefinition } from "../domain/activity";
import { defineActivityBody } from "../domain/panel-screens";
import { conflict, orNotFound } from "../lib/http/errors";
import { defineActivity as defineNewActivity } from "../services/activities/define";
import { getActivity, listActivities } from "../store/activities";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

export function activityView(activity: ActivityDefinition) {
  return { activityid: String(activity.id), name: activity.name, params: activity.params, created_at: isoTime(activity.createdAt) };
}

const defineActivity = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/activities",
  role: NEEDS.audience,
  response: activityAnswer,
  summary: "Define an activity and the types of its parameters; clients post it by the activityid answered",
  status: 201,
  body: defineActivityBody,
  async handle({ caller, body, panel, db }) {
    const activity = await defineNewActivity(db, panel.id, body.name, body.params, auditorOf(caller));
    if (!activity) {
      throw conflict(`name: the panel already has an activity named "${body.name}"`, [{ field: "name", message: "already in use in this panel" }]);
    }
    return activityView(activity);
  },
});

const listPanelActivities = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/activities",
  role: NEEDS.read,
  response: activityListAnswer,
  summary: "The panel's activity definitions",
  async handle({ env, panel, db }) {
    return { activities: (await listActivities(db, panel.id)).map(activityView) };
  },
});

const readActivity = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/activities/:activity",
  role: NEEDS.read,
  response: activityAnswer,
  summary: "Read one activity definition",
  async handle({ env, path, panel, db }) {
    const id = /^\d{1,15}$/.test(path.activity) ? Number(path.activity) : 0;
    const activity = await orNotFound(id ? getActivity(db, panel.id, id) : null, `No activity with id "${path.activity}" in this panel`);
    return activityView(activity);
  },
});

export const activityRoutes = [defineActivity, listPanelActivities, readActivity];
