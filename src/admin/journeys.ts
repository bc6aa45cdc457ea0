import { journeyAnswer, journeyListAnswer, journeyMessagesAnswer, journeySplitsAnswer, journeyVersionsAnswer, simulationAnswer, simulationBody, simulationListAnswer, splitWinnerBody } from "../domain/answers/journeys";
import { NEEDS } from "../domain/permissions";
import { journeyStatusBody, MESSAGE_CHANNELS } from "../domain/journey";
import { journeyBodySchema, splitJourneyBody } from "../domain/journey-layout";
import { notFound, unwrap } from "../lib/http/errors";
import { z } from "../lib/z";
import { panelShards } from "../services/access/partitions";
import { defineJourney } from "../services/journeys/define";
import { editJourney } from "../services/journeys/edit";
import { journeysWithCounters, journeyWithCounters, newestJourneyMessages, versionsOfJourney } from "../services/journeys/read";
import { setJourneyStatus } from "../services/journeys/set-status";
import { promoteSplitWinner, splitReport } from "../services/journeys/splits";
import { readSimulation, simulationsOf, startSimulation, type SimulationView } from "../services/simulations/simulate";
import { getJourney } from "../store/journeys/definitions";
import type { Journey } from "../store/journeys/definitions";
import type { JourneyCounters } from "../store/journeys/instances";
import { isoTime } from "../store/sql";
import { auditorOf } from "./audit";
import { definePanelRoute } from "./route";

// Journeys (CONTRACT 5): definitions are validated whole (schema, then the step graph, then
// what they name in the panel: activity and its parameters, list, webhooks). A draft is edited
// in place; editing a running or paused journey makes a new version, which new entries take
// while instances already inside finish on theirs (decision 0027); a stopped one stays as it is.
// The canvas's layout travels with the definition but is not part of it: an edit that changes
// only the layout makes no new version, whatever the status (decision 0033).

function journeyView(journey: Journey, counters?: JourneyCounters) {
  const { name, trigger: t, filter: f, steps, goal } = journey.definition;
  return {
    id: journey.id,
    name,
    status: journey.status,
    version: journey.version,
    trigger: t,
    filter: f,
    steps,
    ...(goal ? { goal } : {}),
    layout: journey.layout,
    ...(counters ? { counters } : {}),
    created_at: isoTime(journey.createdAt),
    updated_at: isoTime(journey.updatedAt),
  };
}

function noSuchJourney(journeyId: string) {
  return notFound(`No journey with id "${journeyId}" in this panel`);
}

const createJourney = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/journeys",
  role: NEEDS.journeys,
  response: journeyAnswer,
  summary: "Define a journey (CONTRACT 5); it starts as a draft",
  status: 201,
  body: journeyBodySchema,
  async handle({ env, caller, body, panel, db }) {
    const { definition, layout } = splitJourneyBody(body);
    return journeyView(unwrap(await defineJourney(db, panel.id, definition, layout, auditorOf(caller))));
  },
});

const listPanelJourneys = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys",
  role: NEEDS.read,
  response: journeyListAnswer,
  summary: "The panel's journeys with their counters",
  async handle({ env, panel, db }) {
    return { journeys: (await journeysWithCounters(env, db, panel)).map(({ journey, counters }) => journeyView(journey, counters)) };
  },
});

const readJourney = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys/:journey",
  role: NEEDS.read,
  response: journeyAnswer,
  summary: "A journey with its counters: entered, active, completed, exited, and per step acted and waiting",
  async handle({ env, path, panel, db }) {
    const found = await journeyWithCounters(env, db, panel, path.journey);
    if (!found) throw noSuchJourney(path.journey);
    return journeyView(found.journey, found.counters);
  },
});

const updateJourney = definePanelRoute({
  method: "PUT",
  path: "/panels/:panel/journeys/:journey",
  role: NEEDS.journeys,
  response: journeyAnswer,
  summary:
    "Replace a draft's definition, or give a running or paused journey a new version (instances inside finish on theirs); a change of layout alone makes no version; 409 once stopped",
  body: journeyBodySchema,
  async handle({ env, caller, path, body, panel, db }) {
    const { definition, layout } = splitJourneyBody(body);
    const { journey, warnings } = unwrap(await editJourney(env, db, panel, path.journey, definition, layout, auditorOf(caller)));
    return { ...journeyView(journey), ...(warnings.length ? { warnings } : {}) };
  },
});

const journeyVersions = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys/:journey/versions",
  role: NEEDS.read,
  response: journeyVersionsAnswer,
  summary: "A journey's versions, newest first: each one's definition, when it was made, and the instances that entered on it and are still active on it",
  async handle({ path, panel, db }) {
    const versions = await versionsOfJourney(db, panel.id, path.journey);
    if (!versions) throw noSuchJourney(path.journey);
    return {
      versions: versions.map((v) => ({
        version: v.version,
        created_at: isoTime(v.createdAt),
        created_by: v.createdBy,
        entered: v.entered,
        active: v.active,
        definition: { name: v.definition.name, trigger: v.definition.trigger, filter: v.definition.filter, steps: v.definition.steps, ...(v.definition.goal ? { goal: v.definition.goal } : {}) },
      })),
    };
  },
});

const setStatus = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/journeys/:journey/status",
  role: NEEDS.journeys,
  response: journeyAnswer,
  summary: "Run, pause (instances are held) or stop (instances end) a journey",
  body: journeyStatusBody,
  async handle({ env, caller, path, body, panel, db }) {
    const { journey, counters, warnings } = unwrap(await setJourneyStatus(env, db, panel, path.journey, body.status, auditorOf(caller)));
    return { ...journeyView(journey, counters), warnings };
  },
});

const journeyMessages = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journey-messages",
  role: NEEDS.read,
  response: journeyMessagesAnswer,
  summary: "Messages journeys sent on the outbox channels (newest first)",
  query: z.object({
    channel: z.enum(MESSAGE_CHANNELS, { error: "must be email, sms, apn or bpn" }).optional(),
    limit: z.coerce.number({ error: "must be a number" }).int().min(1).max(1000).default(100),
  }),
  async handle({ env, query, panel, db }) {
    const messages = await newestJourneyMessages(env, db, panel, query.channel, query.limit);
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

const journeySplits = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys/:journey/splits",
  role: NEEDS.read,
  response: journeySplitsAnswer,
  summary:
    "The A/B split steps of the journey's current version: per branch the instances that took it (all versions), those that reached the split's goal within its window, the rate, and the confidence that it differs from branch A (two-sided two-proportion z-test)",
  async handle({ env, path, panel, db }) {
    const journey = await getJourney(db, panel.id, path.journey);
    if (!journey) throw noSuchJourney(path.journey);
    return { splits: await splitReport(panelShards(env, panel, db), journey) };
  },
});

const promoteWinner = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/journeys/:journey/splits/:step/winner",
  role: NEEDS.journeys,
  response: journeyAnswer,
  summary:
    "Promote a split's branch: a new version of the journey sends every new entry down it, while instances already inside keep the branch they were hashed to; 409 once stopped",
  body: splitWinnerBody,
  async handle({ env, caller, path, body, panel, db }) {
    const { journey, warnings } = unwrap(await promoteSplitWinner(env, db, panel, path.journey, path.step, body.branch, auditorOf(caller)));
    return { ...journeyView(journey), ...(warnings.length ? { warnings } : {}) };
  },
});

function simulationView({ simulation: s, progress }: SimulationView) {
  return {
    id: s.id,
    journey_id: s.journeyId,
    version: s.version,
    days: s.days,
    from: isoTime(s.from),
    to: isoTime(s.to),
    state: s.state,
    progress,
    events_read: s.eventsRead,
    error: s.error,
    result: (s.result ?? null) as z.output<typeof simulationAnswer>["result"],
    created_at: isoTime(s.createdAt),
    finished_at: s.finishedAt === null ? null : isoTime(s.finishedAt),
  };
}

const startJourneySimulation = definePanelRoute({
  method: "POST",
  path: "/panels/:panel/journeys/:journey/simulations",
  role: NEEDS.journeys,
  response: simulationAnswer,
  status: 202,
  summary:
    "Simulate a version of the journey (the current one when no version is given) on the panel's recorded activities of the last `days` days (1–30, the archive included; a list trigger enters the list's members when each was added, a saved segment's trigger the contacts that joined it, each once at its first join in the range, a segment filter of the journey's own the contacts matching it now at their last write in the range; messages the senders would skip are counted with their reason; a wait for an open, click or delivery is followed to its timeout and counted as unknown; an A/B split's branches count their entries and, with an activity goal, the contacts that did it within the goal's window, an open or click goal's conversions being null and unknown), sending nothing and changing no journey state; worked in queue steps: read its progress and, once done, per step figures, messages per channel, webhook calls, each split's branches and samples with GET …/simulations/{simulation}",
  body: simulationBody,
  async handle({ env, caller, path, body, panel, db }) {
    return simulationView(unwrap(await startSimulation(env, db, panel, path.journey, body, auditorOf(caller), Date.now())));
  },
});

const listJourneySimulations = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys/:journey/simulations",
  role: NEEDS.read,
  response: simulationListAnswer,
  summary: "The journey's latest simulations, newest first (of one version with ?version=)",
  query: z.object({ version: z.coerce.number({ error: "must be a version number" }).int({ error: "must be a version number" }).min(1, { error: "must be a version number" }).optional() }),
  async handle({ path, query, panel, db }) {
    return { simulations: unwrap(await simulationsOf(db, panel.id, path.journey, query.version ?? null)).map(simulationView) };
  },
});

const readJourneySimulation = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys/:journey/simulations/:simulation",
  role: NEEDS.read,
  response: simulationAnswer,
  summary: "A simulation of the journey: its state, progress (0–1) and, once done, its result",
  async handle({ path, panel, db }) {
    return simulationView(unwrap(await readSimulation(db, panel.id, path.journey, path.simulation)));
  },
});

export const journeyRoutes = [
  createJourney,
  listPanelJourneys,
  readJourney,
  updateJourney,
  journeyVersions,
  setStatus,
  journeyMessages,
  journeySplits,
  promoteWinner,
  startJourneySimulation,
  listJourneySimulations,
  readJourneySimulation,
];
