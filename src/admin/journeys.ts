import type { ShardDb } from "../store/shards";
import { emailSenders, journeyDefinitionSchema, journeyGraphProblems, journeyStatusBody, MESSAGE_CHANNELS, type JourneyDefinition } from "../domain/journey";
import { conflict, fromProblems, orNotFound } from "../lib/http/errors";
import { sendersStanding } from "../services/channels/email/sender-domains";
import { resumeHeldPoints } from "../services/journeys/points";
import { scanSegment } from "../services/journeys/contact-triggers";
import { forgetLiveJourneys } from "../services/journeys/live-journeys";
import { newId } from "../lib/random";
import { z } from "../lib/z";
import { findActivityByName } from "../store/activities";
import { changeJourneyStatus, getJourney, insertJourney, listJourneys, updateDraftJourney, type Journey, type JourneyStatus } from "../store/journeys/definitions";
import { journeyCounters, type JourneyCounters } from "../store/journeys/instances";
import { listMessages } from "../store/journeys/messages";
import { getList } from "../store/lists";
import type { Panel } from "../store/panels";
import { isoTime } from "../store/sql";
import { getSegment } from "../store/segments";
import { getWebhook } from "../store/webhooks";
import { audited } from "./audit";
import { journeyStatusAction } from "../domain/audit";
import { definePanelRoute } from "./route";

// Journeys (CONTRACT 5): definitions are validated whole (schema, then the step graph, then
// what they name in the panel: activity, list, webhooks) and only drafts may be edited.

/** What the schema cannot see: the step graph, and the activity, list and webhooks it names. */
async function checkDefinition(db: ShardDb, panel: Panel, definition: JourneyDefinition): Promise<void> {
  const problems = journeyGraphProblems(definition);
  const { trigger: t } = definition;
  if (t.type === "activity" && !(await findActivityByName(db, panel.id, t.activity))) {
    problems.push({ field: "trigger.activity", message: `no activity named "${t.activity}" is defined in this panel` });
  }
  if (t.type === "list" && !(await getList(db, panel.id, t.listid))) problems.push({ field: "trigger.listid", message: `no list with id ${t.listid} in this panel` });
  if (t.type === "segment" && t.segment !== undefined && !(await getSegment(db, panel.id, t.segment))) {
    problems.push({ field: "trigger.segment", message: `no segment with id "${t.segment}" in this panel` });
  }
  for (const [i, s] of definition.steps.entries()) {
    if (s.type === "webhook" && !(await getWebhook(db, panel.id, s.webhook))) problems.push({ field: `steps.${i}.webhook`, message: `no webhook with id "${s.webhook}" in this panel` });
    if (s.type === "wait_for_event" && !Array.isArray(s.events) && !(await findActivityByName(db, panel.id, s.events.activity))) {
      problems.push({ field: `steps.${i}.events.activity`, message: `no activity named "${s.events.activity}" is defined in this panel` });
    }
  }
  if (problems.length) throw fromProblems(problems);
}

function journeyView(journey: Journey, counters?: JourneyCounters) {
  const { name, trigger: t, filter: f, steps } = journey.definition;
  return {
    id: journey.id,
    name,
    status: journey.status,
    trigger: t,
    filter: f,
    steps,
    ...(counters ? { counters } : {}),
    created_at: isoTime(journey.createdAt),
    updated_at: isoTime(journey.updatedAt),
  };
}

function requireJourney(db: ShardDb, panel: Panel, journeyId: string): Promise<Journey> {
  return orNotFound(getJourney(db, panel.id, journeyId), `No journey with id "${journeyId}" in this panel`);
}

const createJourney = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/journeys",
  role: "marketer",
  summary: "Define a journey (CONTRACT 5); it starts as a draft",
  status: 201,
  body: journeyDefinitionSchema,
  async handle({ env, caller, body: definition, panel, db }) {
    await checkDefinition(db, panel, definition);
    const now = Date.now();
    const journey: Journey = { id: newId("jny"), panelId: panel.id, name: definition.name, definition, status: "draft", scanCursor: null, createdAt: now, updatedAt: now };
    await insertJourney(db, journey);
    await audited({ db, caller, panel }, "journey.created", journey.id, { name: journey.name });
    return journeyView(journey);
  },
});

const listPanelJourneys = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys",
  role: "viewer",
  summary: "The panel's journeys with their counters",
  async handle({ env, panel, db }) {
    const journeys = await listJourneys(db, panel.id);
    const counters = await Promise.all(journeys.map((j) => journeyCounters(db, panel.id, j.id)));
    return { journeys: journeys.map((j, i) => journeyView(j, counters[i])) };
  },
});

const readJourney = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys/:journey",
  role: "viewer",
  summary: "A journey with its counters: entered, active, completed, exited, and per step acted and waiting",
  async handle({ env, path, panel, db }) {
    const journey = await requireJourney(db, panel, path.journey);
    return journeyView(journey, await journeyCounters(db, panel.id, journey.id));
  },
});

const updateJourney = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/journeys/:journey",
  role: "marketer",
  summary: "Replace a draft journey's definition (409 once it has run)",
  body: journeyDefinitionSchema,
  async handle({ env, caller, path, body: definition, panel, db }) {
    const journey = await requireJourney(db, panel, path.journey);
    if (journey.status !== "draft") throw conflict(`status: the journey is ${journey.status}; only a draft can be edited`, [{ field: "status", message: `is ${journey.status}` }]);
    await checkDefinition(db, panel, definition);
    const updated = await updateDraftJourney(db, panel.id, journey.id, definition, Date.now());
    if (!updated) throw conflict("status: the journey is no longer a draft", [{ field: "status", message: "is no longer draft" }]);
    await audited({ db, caller, panel }, "journey.edited", journey.id, { name: updated.name });
    return journeyView(updated);
  },
});

/** Which statuses each status may be reached from; repeating the current one is harmless. */
const TRANSITIONS: Record<Exclude<JourneyStatus, "draft">, JourneyStatus[]> = {
  running: ["draft", "paused", "running"],
  paused: ["running", "paused"],
  stopped: ["draft", "running", "paused", "stopped"],
};

const setStatus = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/journeys/:journey/status",
  role: "marketer",
  summary: "Run, pause (instances are held) or stop (instances end) a journey",
  body: journeyStatusBody,
  async handle({ env, caller, path, body, panel, db }) {
    const journey = await requireJourney(db, panel, path.journey);
    // Mail from a sender domain a real provider would refuse is refused at start, not message by message.
    const senders = body.status === "running" ? await sendersStanding(env, db, panel.id, emailSenders(journey.definition)) : { problems: [], notes: [] };
    if (senders.problems.length) throw fromProblems(senders.problems, 409);
    const now = Date.now();
    const changed = await changeJourneyStatus(db, panel.id, journey.id, TRANSITIONS[body.status], body.status, now);
    forgetLiveJourneys(panel.id);
    if (!changed) {
      throw conflict(`status: a ${journey.status} journey cannot become ${body.status}`, [{ field: "status", message: `cannot go from ${journey.status} to ${body.status}` }]);
    }
    await audited({ db, caller, panel }, journeyStatusAction(journey.status, body.status), journey.id, { name: journey.name, from: journey.status, to: body.status });
    if (changed.status === "running") {
      // Held points go on at once (the cron would take them within a minute), and a segment
      // journey enters its first page of matching contacts now, the rest by the cron.
      await resumeHeldPoints(env, changed, now);
      if (changed.scanCursor !== null) await scanSegment(env, changed, now);
    }
    // The scan above only moves scan_cursor, which the view does not show: no second read.
    return { ...journeyView(changed, await journeyCounters(db, panel.id, changed.id)), warnings: senders.notes };
  },
});

const journeyMessages = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journey-messages",
  role: "viewer",
  summary: "Messages journeys sent on the outbox channels (newest first)",
  query: z.object({
    channel: z.enum(MESSAGE_CHANNELS, { error: "must be email, sms, apn or bpn" }).optional(),
    limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(1000).default(100),
  }),
  async handle({ env, query, panel, db }) {
    const messages = await listMessages(db, panel.id, query.channel, query.limit);
    return {
      messages: messages.map((m) => ({
        msgid: m.msgid,
        channel: m.channel,
        journey_id: m.journeyId,
        step_id: m.stepId,
        contact_id: String(m.contactId),
        recipient: m.recipient,
        status: m.status,
        error: m.error,
        content: m.content,
        created_at: isoTime(m.createdAt),
      })),
    };
  },
});

export const journeyRoutes = [createJourney, listPanelJourneys, readJourney, updateJourney, setStatus, journeyMessages];
