import type { ActivityDefinition, ActivityParamType } from "../../domain/activity";
import { insertActivity } from "../../store/activities";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";

/**
 * Defines an activity and the types of its parameters; null when the panel already has an
 * activity of that name. A new definition is recorded in the audit log when `by` is given.
 */
export async function defineActivity(db: ShardDb, panelId: string, name: string, params: Record<string, ActivityParamType>, by?: Auditor): Promise<ActivityDefinition | null> {
  const activity = await insertActivity(db, panelId, name, params, Date.now());
  if (activity && by) await recordAudit(db, panelId, by, "activity.defined", String(activity.id), { name, params });
  return activity;
}
