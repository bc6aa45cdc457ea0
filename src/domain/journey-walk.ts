import { activityNameKey } from "./activity";
import type { AttributeValue } from "./attributes";
import { startsJourneys } from "./events";
import { filterMatches, paramsMatch } from "./filters";
import {
  isMessageStep,
  nextSteps,
  parseDuration,
  splitBranchOf,
  startSteps,
  stepById,
  type ConditionStep,
  type DelayStep,
  type JourneyDefinition,
  type JourneyGoal,
  type JourneyStep,
  type MessageStep,
  type SplitStep,
  type Trigger,
  type WaitStep,
  type WebhookStep,
} from "./journey";

/**
 * The journey engine's decisions, with no I/O: which events enter a contact, reach a goal or end
 * a wait, which steps follow a point, and what each step decides. The engine
 * (services/journeys/engine.ts, pipeline-step.ts, goals.ts) carries these out against D1, the
 * providers and webhooks; the simulation (domain/journey-simulation.ts) against in-memory state.
 * One copy of the rules, so a simulation shows what the engine would have done.
 */

/** An event as the journey rules read it (a pipeline event, a stored or archived row). */
export interface WalkEvent {
  id: number;
  contactId: number | null;
  channel: string;
  name: string;
  params: Readonly<Record<string, unknown>>;
  occurredAt: number;
  receivedAt: number;
  msgid?: string | null;
}

export interface WalkContact {
  id: number;
  attributes: Readonly<Record<string, AttributeValue>>;
}

/** A custom activity that enters contacts into journeys with this trigger: its name and parameter clauses, and not history (over a day old when received). */
export function triggeredBy(trigger: Trigger, event: WalkEvent): boolean {
  if (trigger.type !== "activity" || event.channel !== "custom_activity" || event.contactId === null) return false;
  if (!startsJourneys(event, event.receivedAt)) return false;
  return activityNameKey(trigger.activity) === activityNameKey(event.name) && paramsMatch(trigger.params, event.params);
}

/** Whether a contact with these attributes may enter the journey (its entry filter). */
export function entryAllowed(definition: Pick<JourneyDefinition, "filter">, attributes: WalkContact["attributes"]): boolean {
  return filterMatches(definition.filter, attributes);
}

/** Whether `event` is the journey goal's activity (decision 0042). */
export function reachesGoal(goal: JourneyGoal, event: Pick<WalkEvent, "channel" | "name" | "params">): boolean {
  return event.channel === "custom_activity" && activityNameKey(goal.activity) === activityNameKey(event.name) && paramsMatch(goal.params, event.params);
}

/** Whether a goal event came after the instance entered: after the event that entered it, or once it was in. */
export function goalAfterEntry(entry: { eventId: number | null; enteredAt: number }, event: Pick<WalkEvent, "id" | "receivedAt">): boolean {
  return entry.eventId !== null ? event.id > entry.eventId : event.receivedAt >= entry.enteredAt;
}

/** A split entry's goal as the engine records it (journey_split_entries: goal_kind, goal_key, goal_until); null for a split without a goal. */
export type SplitEntryGoal = { kind: "activity"; key: string; until: number } | { kind: "open" | "click"; until: number };

/** The goal of an entry taken at `step` at `at`: its activity (by its name's key) or message event, until the end of its window. */
export function splitGoalAt(step: Pick<SplitStep, "goal">, at: number): SplitEntryGoal | null {
  if (!step.goal) return null;
  const until = at + parseDuration(step.goal.within)!;
  if (step.goal.activity !== undefined) return { kind: "activity", key: activityNameKey(step.goal.activity), until };
  return { kind: step.goal.message_event!, until };
}

/**
 * Whether `event` converts a split entry taken at `at` with an activity goal: the contact's
 * activity of the goal's name, from the split to the end of the goal's window, both included.
 * The engine applies it in SQL over a batch's events (store/journeys/splits.ts
 * markSplitConversions: `goal_key`, `BETWEEN at AND goal_until`); an open or click goal
 * (the branch's messages) is not an activity and is never met here.
 */
export function splitGoalMet(goal: SplitEntryGoal, at: number, event: Pick<WalkEvent, "channel" | "name" | "occurredAt">): boolean {
  return goal.kind === "activity" && event.channel === "custom_activity" && activityNameKey(event.name) === goal.key && event.occurredAt >= at && event.occurredAt <= goal.until;
}

/** A pending wait as the rules read it (a journey_points row of kind wait, or a simulated one). */
export interface PendingWait {
  outcome: string | null;
  dueAt: number | null;
  msgid: string | null;
  channel: string | null;
  events: readonly string[] | null;
  activityKey: string | null;
  contactId: number;
  /** The event the branch carries (the trigger's): only a later activity ends the wait. */
  eventId: number | null;
  createdAt: number;
}

/** Whether `event` is what the pending wait `point` waits for. */
export function eventEndsWait(point: PendingWait, event: WalkEvent): boolean {
  if (point.outcome !== null || point.dueAt === null || event.occurredAt > point.dueAt) return false;
  if (point.msgid !== null) {
    return event.msgid === point.msgid && event.channel === point.channel && (point.events ?? []).includes(event.name);
  }
  if (point.activityKey === null || event.channel !== "custom_activity" || event.contactId !== point.contactId) return false;
  if (activityNameKey(event.name) !== point.activityKey) return false;
  // Only an activity after the one the branch carries (never the trigger itself).
  return point.eventId !== null ? event.id > point.eventId : event.receivedAt >= point.createdAt;
}

/** How a point ended, as the steps after it read it. */
export type PointEnd = { kind: "start" } | { kind: "delay"; stepId: string } | { kind: "wait"; stepId: string; outcome: "event" | "timeout" };

/** The steps that run once a point ended: the start steps, or those after its delay or wait. */
export function stepsAfterPoint(definition: JourneyDefinition, end: PointEnd): JourneyStep[] {
  if (end.kind === "start") return startSteps(definition);
  const step = stepById(definition, end.stepId);
  if (!step) return [];
  return nextSteps(definition, step, end.kind === "delay" ? "done" : end.outcome);
}

/** What a step decides for a contact at `now`. A message is sent (or held, skipped) by the caller under the panel's rules. */
export type StepDecision =
  | { kind: "message"; step: MessageStep }
  | { kind: "condition"; step: ConditionStep; holds: boolean }
  | { kind: "split"; step: SplitStep; branch: number }
  | { kind: "webhook"; step: WebhookStep }
  | { kind: "delay"; step: DelayStep; dueAt: number }
  | { kind: "wait"; step: WaitStep; dueAt: number; awaited: { events: readonly string[] } | { activityKey: string } };

export function decideStep(journeyId: string, step: JourneyStep, contact: WalkContact, now: number): StepDecision {
  if (isMessageStep(step)) return { kind: "message", step };
  switch (step.type) {
    case "condition":
      return { kind: "condition", step, holds: filterMatches(step.filter, contact.attributes) };
    case "split":
      return { kind: "split", step, branch: splitBranchOf(journeyId, step, contact.id) };
    case "webhook":
      return { kind: "webhook", step };
    case "delay":
      return { kind: "delay", step, dueAt: now + parseDuration(step.for)! };
    case "wait_for_event":
      return {
        kind: "wait",
        step,
        dueAt: now + parseDuration(step.within)!,
        awaited: Array.isArray(step.events) ? { events: step.events } : { activityKey: activityNameKey(step.events.activity) },
      };
  }
  throw new Error(`unknown step type ${(step as JourneyStep).type}`);
}

/** The steps after a decided step, in the same walk (none after a delay or a wait: they end the walk as a point). */
export function stepsAfterDecision(definition: JourneyDefinition, decision: StepDecision): JourneyStep[] {
  switch (decision.kind) {
    case "delay":
    case "wait":
      return [];
    case "condition":
      return nextSteps(definition, decision.step, decision.holds);
    case "split":
      return nextSteps(definition, decision.step, { branch: decision.branch });
    default:
      return nextSteps(definition, decision.step, "done");
  }
}
