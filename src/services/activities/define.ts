import type { ActivityDefinition, ActivityParamType } from "../../domain/activity";
import { insertActivity } from "../../store/activities";
import type { ShardDb } from "../../store/shards";

/** Defines an activity and the types of its parameters; null when the panel already has an activity of that name. */
export function defineActivity(db: ShardDb, panelId: string, name: string, params: Record<string, ActivityParamType>): Promise<ActivityDefinition | null> {
  return insertActivity(db, panelId, name, params, Date.now());
}
