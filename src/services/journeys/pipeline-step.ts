import { panelDb } from "../access/shards";
import { activityNameKey } from "../../domain/activity";
import { startsJourneys } from "../../domain/events";
import { eventEndsWait, triggeredBy } from "../../domain/journey-walk";
import type { PipelineEvent, PipelineStep } from "../pipeline/steps";
import { contactsByIds } from "../../store/contacts";
import { pendingWaitsFor, resolveWaitsWithEvents } from "../../store/journeys/points";
import type { Journey } from "../../store/journeys/definitions";
import type { ShardDb } from "../../store/shards";
import { continuePoints, enterJourneys, entriesFor, POINT_LEASE_MS, type EngineEnv } from "./engine";
import { convertSplits, exitOnGoals } from "./goals";
import { liveJourneys } from "./live-journeys";

// The rule lives in the domain, which the simulation applies too.
export { eventEndsWait };

/**
 * The journeys stage of the event pipeline (CONTRACT 7: stored, then matched against running
 * journeys, then handed to webhooks, which journeys' webhook steps do). For one panel's
 * events, oldest first: end the waits they were awaited by, then enter the contacts into
 * running journeys their custom activity triggers, then continue both. Retried as a whole on
 * failure; every effect is keyed, so a retry acts once (see engine.ts).
 */
export const journeysPipelineStep: PipelineStep = {
  name: "journeys",
  // A partition's events are stored on its shard with their contacts, whose instances, waits
  // and messages are there too, beside the copies of the panel's journeys (mirror.ts).
  partitioned: true,
  async hasWork(env, panelId, recordedBy) {
    return (await liveJourneys(await panelDb(env, panelId), panelId, recordedBy)).length > 0;
  },
  async run(env, events, place) {
    const first = events[0];
    if (!first) return;
    const panelId = first.panelId;
    const home = await panelDb(env, panelId);
    const db = place && !place.home ? place.db : home;
    const now = Date.now();
    // Waits belong to instances of running or paused journeys, triggers to running ones: a
    // panel with neither has nothing to do here. The home's answer (the copies are the same), as
    // hasWork read it for this pass: after its events were recorded.
    const live = await liveJourneys(home, panelId);
    if (live.length === 0) return;

    await convertSplits(db, panelId, live, events);
    // Goals before waits: an instance the event ends as converted does not go on past its wait.
    await exitOnGoals(db, panelId, live, events, now);
    // Waits first, so the activity that enters a contact never ends the wait it starts.
    await endWaits(env, db, panelId, events, now);
    // An activity that happened more than a day before it arrived is history, not a trigger.
    const activities = events.filter((e) => e.channel === "custom_activity" && e.contactId !== null && startsJourneys(e, e.receivedAt));
    if (activities.length === 0) return;
    const keys = new Set(activities.map((e) => activityNameKey(e.name)));
    const journeys = live.filter((j) => j.status === "running" && j.definition.trigger.type === "activity" && keys.has(activityNameKey(j.definition.trigger.activity)));
    if (journeys.length === 0) return;
    const contacts = await contactsByIds(
      db,
      panelId,
      activities.map((e) => e.contactId!),
    );
    const entries = activities.flatMap((event) => {
      const contact = contacts.get(event.contactId!);
      if (!contact) return [];
      // The trigger's parameter filter, when it has one, on the event's own parameters.
      const triggered = journeys.filter(({ definition }) => triggeredBy(definition.trigger, event));
      return entriesFor(triggered, contact, `event:${event.id}`, event.id);
    });
    // A later activity of this batch may be what a wait just entered is waiting for (a cart and
    // its purchase posted together); eventEndsWait takes only events after the branch's own.
    // Message waits cannot be ended yet (their messages are new), so only activity waits of the
    // contacts just entered are looked for again.
    const entered = await enterJourneys(env, db, entries, now);
    if (entered === 0) return;
    const contactsIn = new Set(entries.map((e) => e.contactId));
    const theirs = activities.filter((e) => contactsIn.has(e.contactId!));
    // Likewise a later activity of this batch may be the goal of a journey just entered.
    await convertSplits(db, panelId, live, theirs);
    await exitOnGoals(db, panelId, journeys, theirs, now);
    if (journeys.some(waitsForActivity)) await endWaits(env, db, panelId, theirs, now);
  },
};

function waitsForActivity(journey: Journey): boolean {
  return journey.definition.steps.some((step) => step.type === "wait_for_event" && !Array.isArray(step.events));
}

/** Ends the pending waits that `events` (one panel's, oldest first) end, and continues past them. */
async function endWaits(env: EngineEnv, db: ShardDb, panelId: string, events: readonly PipelineEvent[], now: number): Promise<void> {
  const msgids = [...new Set(events.flatMap((e) => (e.msgid && e.channel !== "custom_activity" ? [e.msgid] : [])))];
  const actors = [...new Set(events.flatMap((e) => (e.channel === "custom_activity" && e.contactId !== null ? [e.contactId] : [])))];
  const waits = await pendingWaitsFor(db, panelId, msgids, actors);
  const matches: Array<{ pointId: number; eventId: number }> = [];
  for (const point of waits) {
    const event = events.find((e) => eventEndsWait(point, e));
    if (event) matches.push({ pointId: point.id, eventId: event.id });
  }
  const ended = await resolveWaitsWithEvents(db, matches, now, now + POINT_LEASE_MS);
  await continuePoints(env, db, ended, now);
}
