import { journeyAnswer, journeyListAnswer, journeyMessagesAnswer, journeyVersionsAnswer } from "../domain/answers/journeys";
import type { ShardDb } from "../store/shards";
import { emailSenders, journeyGraphProblems, journeyStatusBody, MESSAGE_CHANNELS, type JourneyDefinition } from "../domain/journey";
import { journeyBodySchema, layoutForDefinition, layoutProblems, splitJourneyBody, type JourneyLayout } from "../domain/journey-layout";
import { conflict, fromProblems, orNotFound } from "../lib/http/errors";
import { sendersStanding } from "../services/channels/email/sender-domains";
import { resumeHeldPoints } from "../services/journeys/points";
import { scanSegment } from "../services/journeys/contact-triggers";
import { forgetLiveJourneys } from "../services/journeys/live-journeys";
import { newId } from "../lib/random";
import { sameJson } from "../lib/same-json";
import { z } from "../lib/z";
import { checkParamClause, type ActivityDefinition } from "../domain/activity";
import type { FieldProblem } from "../domain/problems";
import { findActivityByName } from "../store/activities";
import {
  addJourneyVersion,
  changeJourneyStatus,
  getJourney,
  insertJourney,
  listJourneys,
  updateDraftJourney,
  updateJourneyLayout,
  type Journey,
  type JourneyStatus,
} from "../store/journeys/definitions";
import { listVersions } from "../store/journeys/versions";
import { journeyCounters, type JourneyCounters } from "../store/journeys/instances";
import { listMessages } from "../store/journeys/messages";
import { getList } from "../store/lists";
import type { Panel } from "../store/panels";
import { isoTime } from "../store/sql";
import { getSegment } from "../store/segments";
import { getWebhook } from "../store/webhooks";
import { audited } from "./audit";
import type { AdminCaller } from "./auth";
import { journeyStatusAction } from "../domain/audit";
import { definePanelRoute } from "./route";

// Journeys (CONTRACT 5): definitions are validated whole (schema, then the step graph, then
// what they name in the panel: activity and its parameters, list, webhooks). A draft is edited
// in place; editing a running or paused journey makes a new version, which new entries take
// while instances already inside finish on theirs (decision 0027); a stopped one stays as it is.
// The canvas's layout travels with the definition but is not part of it: an edit that changes
// only the layout makes no new version, whatever the status (decision 0033).

/**
 * What the schema cannot see: the step graph, the activity (with the parameters its trigger
 * filters on), list and webhooks it names, and the layout's step ids. Returns the definition
 * with the trigger's parameter names as the activity defines them and their values in the
 * parameters' types.
 */
async function checkDefinition(db: ShardDb, panel: Panel, definition: JourneyDefinition, layout?: JourneyLayout): Promise<JourneyDefinition> {
  const problems = [...journeyGraphProblems(definition), ...(layout ? layoutProblems(definition, layout) : [])];
  let { trigger: t } = definition;
  if (t.type === "activity") {
    const activity = await findActivityByName(db, panel.id, t.activity);
    if (!activity) problems.push({ field: "trigger.activity", message: `no activity named "${t.activity}" is defined in this panel` });
    else if (t.params) t = { ...t, params: checkedTriggerParams(activity, t.params, problems) };
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
  return { ...definition, trigger: t };
}

type ParamFilter = NonNullable<Extract<JourneyDefinition["trigger"], { type: "activity" }>["params"]>;

/** An activity trigger's parameter filter: each clause names a parameter of the activity, with an operator and value that fit its type. */
function checkedTriggerParams(activity: ActivityDefinition, params: ParamFilter, problems: FieldProblem[]): ParamFilter {
  return params.map((clause, i) => {
    const at = `trigger.params.${i}`;
    const fit = checkParamClause(activity, { name: clause.attribute, op: clause.op, value: clause.value }, { name: `${at}.attribute`, op: `${at}.op`, value: `${at}.value` }, problems);
    return fit ? { ...clause, attribute: fit.name, value: fit.value as typeof clause.value } : clause;
  });
}

/** Who made a change, as journey versions record it: the operator's email, or null for the deployment's ADMIN_TOKEN. */
function actorOf(caller: AdminCaller): string | null {
  return caller.kind === "operator" ? caller.session.operator.email : null;
}

function journeyView(journey: Journey, counters?: JourneyCounters) {
  const { name, trigger: t, filter: f, steps } = journey.definition;
  return {
    id: journey.id,
    name,
    status: journey.status,
    version: journey.version,
    trigger: t,
    filter: f,
    steps,
    layout: journey.layout,
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
  response: journeyAnswer,
  summary: "Define a journey (CONTRACT 5); it starts as a draft",
  status: 201,
  body: journeyBodySchema,
  async handle({ env, caller, body, panel, db }) {
    const { definition: proposed, layout } = splitJourneyBody(body);
    const definition = await checkDefinition(db, panel, proposed, layout);
    const now = Date.now();
    const journey: Journey = {
      id: newId("jny"),
      panelId: panel.id,
      name: definition.name,
      definition,
      version: 1,
      status: "draft",
      scanCursor: null,
      layout: layout ?? null,
      createdAt: now,
      updatedAt: now,
    };
    await insertJourney(db, journey, actorOf(caller));
    await audited({ db, caller, panel }, "journey.created", journey.id, { name: journey.name });
    return journeyView(journey);
  },
});

const listPanelJourneys = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys",
  role: "viewer",
  response: journeyListAnswer,
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
  response: journeyAnswer,
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
  response: journeyAnswer,
  summary:
    "Replace a draft's definition, or give a running or paused journey a new version (instances inside finish on theirs); a change of layout alone makes no version; 409 once stopped",
  body: journeyBodySchema,
  async handle({ env, caller, path, body, panel, db }) {
    const journey = await requireJourney(db, panel, path.journey);
    if (journey.status === "stopped") {
      throw conflict("status: the journey is stopped; a stopped journey cannot be edited (a draft is edited in place, a running or paused one gets a new version)", [
        { field: "status", message: "is stopped" },
      ]);
    }
    const { definition: proposed, layout } = splitJourneyBody(body);
    // The definition as stored, or as it is once checked (trigger parameters named as the activity names them).
    if (sameJson(proposed, journey.definition)) return saveLayout({ db, caller, panel }, journey, layout);
    const definition = await checkDefinition(db, panel, proposed, layout);
    if (sameJson(definition, journey.definition)) return saveLayout({ db, caller, panel }, journey, layout);
    // A live journey's new email steps meet the sender rule that starting it met.
    const senders = journey.status === "draft" ? { problems: [], notes: [] } : await sendersStanding(env, db, panel.id, emailSenders(definition));
    if (senders.problems.length) throw fromProblems(senders.problems, 409);
    const now = Date.now();
    // Without a layout, the positions of the steps the journey keeps stay.
    const nextLayout = layout ?? layoutForDefinition(journey.layout, definition);
    const updated =
      journey.status === "draft"
        ? await updateDraftJourney(db, panel.id, journey.id, definition, nextLayout, now)
        : await addJourneyVersion(db, panel.id, journey.id, journey.version, definition, nextLayout, now, actorOf(caller));
    if (!updated) throw changedMeanwhile();
    // The new version's trigger and filter take new entries at once in this isolate.
    forgetLiveJourneys(panel.id);
    await audited({ db, caller, panel }, "journey.edited", journey.id, { name: updated.name, version: updated.version });
    // A segment trigger scans again from the first contact: its first page now, as at start.
    if (updated.status === "running" && updated.scanCursor !== null) await scanSegment(env, updated, now);
    return { ...journeyView(updated), ...(senders.notes.length ? { warnings: senders.notes } : {}) };
  },
});

function changedMeanwhile() {
  return conflict("status: the journey changed meanwhile (its status or version); read it again and retry", [{ field: "status", message: "changed meanwhile" }]);
}

/**
 * A PUT whose definition is the journey's own: at most the layout changes, and the journey
 * keeps its version whatever its status (moving a box is no new version for contacts to take).
 * Nothing is written, nor audited, when the layout is absent or the same.
 */
async function saveLayout(context: { db: ShardDb; caller: AdminCaller; panel: Panel }, journey: Journey, layout: JourneyLayout | undefined) {
  if (layout === undefined || sameJson(layout, journey.layout)) return journeyView(journey);
  const problems = layoutProblems(journey.definition, layout);
  if (problems.length) throw fromProblems(problems);
  const updated = await updateJourneyLayout(context.db, journey, layout, Date.now());
  if (!updated) throw changedMeanwhile();
  await audited(context, "journey.edited", journey.id, { name: updated.name, version: updated.version, changed: "layout" });
  return journeyView(updated);
}

const journeyVersions = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys/:journey/versions",
  role: "viewer",
  response: journeyVersionsAnswer,
  summary: "A journey's versions, newest first: each one's definition, when it was made, and the instances that entered on it and are still active on it",
  async handle({ path, panel, db }) {
    const journey = await requireJourney(db, panel, path.journey);
    const versions = await listVersions(db, panel.id, journey.id);
    return {
      versions: versions.map((v) => ({
        version: v.version,
        created_at: isoTime(v.createdAt),
        created_by: v.createdBy,
        entered: v.entered,
        active: v.active,
        definition: { name: v.definition.name, trigger: v.definition.trigger, filter: v.definition.filter, steps: v.definition.steps },
      })),
    };
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
  response: journeyAnswer,
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
  response: journeyMessagesAnswer,
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

export const journeyRoutes = [createJourney, listPanelJourneys, readJourney, updateJourney, journeyVersions, setStatus, journeyMessages];
