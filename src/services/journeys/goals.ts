import { activityNameKey } from "../../domain/activity";
import { goalAfterEntry, reachesGoal } from "../../domain/journey-walk";
import type { Journey } from "../../store/journeys/definitions";
import { convertInstances, goalInstancesOf, markSplitConversions, type GoalEvent } from "../../store/journeys/splits";
import { skipWaitingOfInstances } from "../../store/journeys/messages";
import { JOURNEY_GOAL_SKIP } from "../../domain/send-skips";
import type { ShardDb } from "../../store/shards";
import type { PipelineEvent } from "../pipeline/steps";

/**
 * Goals (issue 46, decision 0042): the events of one panel's pipeline batch that reach them.
 * A split's goal marks the contact's split entry converted; a journey's goal ends the
 * contact's instance wherever it waits, recorded as converted. Both are keyed writes (an entry
 * converted once, an instance ended once), so a batch run again acts once.
 */

/** The instance a journey message's msgid names (`<instance>.<step>`; step ids have no dot). */
function instanceOfMsgid(msgid: string): string {
  const at = msgid.lastIndexOf(".");
  return at < 0 ? msgid : msgid.slice(0, at);
}

/** Whether any of these journeys has a split step with a goal: only then can an event convert a split entry. */
export function haveSplitGoals(journeys: readonly Journey[]): boolean {
  return journeys.some((j) => j.definition.steps.some((step) => step.type === "split" && step.goal !== undefined));
}

/**
 * Marks the split entries the events convert: activities of their contacts, opens and clicks of
 * their instances' messages. `journeys` are the panel's live journeys the caller already read:
 * when none has a split goal (the common case) no statement runs. Returns whether one ran.
 */
export async function convertSplits(db: ShardDb, panelId: string, journeys: readonly Journey[], events: readonly PipelineEvent[]): Promise<boolean> {
  if (!haveSplitGoals(journeys)) return false;
  const goals: GoalEvent[] = events.flatMap((e): GoalEvent[] => {
    if (e.contactId === null) return [];
    if (e.channel === "custom_activity") return [{ contactId: e.contactId, occurredAt: e.occurredAt, kind: "activity", key: activityNameKey(e.name) }];
    if (e.msgid && e.journeyId && (e.name === "open" || e.name === "click")) return [{ contactId: e.contactId, occurredAt: e.occurredAt, kind: e.name, key: instanceOfMsgid(e.msgid) }];
    return [];
  });
  await markSplitConversions(db, panelId, goals);
  return goals.length > 0;
}

/**
 * Ends, as converted, the active instances of `journeys` whose contact did the journey's goal
 * activity after entering (after the event that entered it, or once it was in). Of an instance
 * its last step completed, the SMS or push still waiting for its provider (a paused journey's:
 * a pause holds sending) is skipped instead, not sent at the resume: the instance is not
 * converted (it finished before the goal), but its message had not gone.
 */
export async function exitOnGoals(db: ShardDb, panelId: string, journeys: readonly Journey[], events: readonly PipelineEvent[], now: number): Promise<number> {
  const withGoal = journeys.filter((j) => j.definition.goal !== undefined);
  const activities = events.filter((e) => e.channel === "custom_activity" && e.contactId !== null);
  if (withGoal.length === 0 || activities.length === 0) return 0;
  const reaching = (journey: Journey, event: PipelineEvent) => reachesGoal(journey.definition.goal!, event);
  const candidates = withGoal.filter((j) => activities.some((e) => reaching(j, e)));
  if (candidates.length === 0) return 0;
  const instances = await goalInstancesOf(
    db,
    panelId,
    candidates.map((j) => j.id),
    activities.map((e) => e.contactId!),
  );
  const conversions: Array<{ instanceId: string; eventId: number }> = [];
  const completed: typeof instances = [];
  for (const instance of instances) {
    const journey = candidates.find((j) => j.id === instance.journeyId)!;
    const entryEvent = /^event:(\d+)$/.exec(instance.entryKey);
    const entry = { eventId: entryEvent ? Number(entryEvent[1]) : null, enteredAt: instance.enteredAt };
    const event = activities.find((e) => e.contactId === instance.contactId && reaching(journey, e) && goalAfterEntry(entry, e));
    if (!event) continue;
    if (instance.status === "active") conversions.push({ instanceId: instance.id, eventId: event.id });
    else completed.push(instance);
  }
  await skipWaitingOfInstances(db, panelId, completed, JOURNEY_GOAL_SKIP);
  return convertInstances(db, panelId, conversions, now);
}
