import { contactJourneysAnswer, journeyReportAnswer } from "../domain/answers/journeys";
import { NEEDS } from "../domain/permissions";
import { journeyReportQuery, periodProblem, resolvePeriod, type ContactJourneys, type JourneyReport } from "../domain/journey-report";
import { fromProblems, notFound, orNotFound } from "../lib/http/errors";
import { contactJourneyPaths, journeyReport } from "../services/journeys/report";
import { getContactByKey } from "../store/contacts";
import { contactDb, panelShards } from "../services/access/partitions";
import { getJourney } from "../store/journeys/definitions";
import { definePanelRoute } from "./route";

const readJourneyReport = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/journeys/:journey/report",
  role: NEEDS.read,
  response: journeyReportAnswer,
  summary:
    "A journey's report over a period (`from`, `to`: ISO dates or UTC date-times; default the last 30 days, at most 366) from aggregates: instances entered, completed and exited; per step entered, waiting (now), passed, failed and timed out; messages per channel and their engagement; deliveries of its webhook events per hour",
  query: journeyReportQuery,
  async handle({ env, path, query, panel, db }): Promise<JourneyReport> {
    const journey = await orNotFound(getJourney(db, panel.id, path.journey), `No journey with id "${path.journey}" in this panel`);
    const period = resolvePeriod(query, Date.now());
    const problem = periodProblem(period);
    if (problem) throw fromProblems([problem]);
    // The partitions' shards count their own contacts' instances and messages (decision 0038).
    return journeyReport(env, panelShards(env, panel, db), journey, period);
  },
});

const CONTACT_JOURNEYS_LIMIT = 50;

const readContactJourneys = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/contacts/:key/journeys",
  role: NEEDS.read,
  response: contactJourneysAnswer,
  summary: `A contact's path through journeys (the contact by primary-key value): its ${CONTACT_JOURNEYS_LIMIT} newest journey entries, newest first, each with the steps it ran in order and what each came to`,
  async handle({ env, path, panel, db: home }): Promise<ContactJourneys> {
    // The contact and its journey instances are on its key's partition (decision 0038).
    const db = contactDb(env, panel, home, path.key);
    const contact = await getContactByKey(db, panel.id, path.key);
    if (!contact) throw notFound(`No contact with ${panel.primaryKey} "${path.key}" in this panel`);
    return { journeys: await contactJourneyPaths(db, panel.id, contact.id, CONTACT_JOURNEYS_LIMIT) };
  },
});

export const journeyReportRoutes = [readJourneyReport, readContactJourneys];
