import { overviewAnswer, panelHistoryAnswer } from "../domain/answers/panels";
import { NEEDS } from "../domain/permissions";
import { emailSetup } from "../services/channels/email/providers";
import { instantOf, wallClockAt } from "../domain/time";
import { historyQuery, type PanelHistory } from "../domain/overview";
import { panelHistory } from "../services/overview/history";
import { overviewFigures, panelContactsFigure } from "../services/overview/counts";
import { panelOwningShards, panelShards } from "../services/access/partitions";
import { isoTime } from "../store/sql";
import { definePanelRoute } from "./route";

const overview = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/overview",
  role: NEEDS.read,
  response: overviewAnswer,
  summary:
    "The panel's figures at a glance: contacts (as last counted, with the time of the count), lists, events received and sends today (in the panel's time zone), running journeys, webhooks not operational; and the deployment's email: its provider, whether it sends real email, and why not when it refuses to",
  async handle({ env, path, panel, db }) {
    const now = Date.now();
    const today = wallClockAt(now, panel.timezone);
    const dayStart = instantOf({ ...today, hour: 0, minute: 0, second: 0 }, panel.timezone);
    // Contacts and the day's events and sends are counted on each shard holding a partition (decision 0038).
    const shards = panelShards(env, panel, db);
    const [figures, contacts] = await Promise.all([overviewFigures(shards, panel.id, dayStart), panelContactsFigure(panelOwningShards(env, panel, db), panel.id, now)]);
    const email = emailSetup(env);
    return {
      contacts: contacts.n,
      contacts_counted_at: isoTime(contacts.countedAt),
      contacts_at_least: contacts.atLeast,
      lists: figures.lists,
      events_today: figures.eventsToday,
      sends_today: figures.sendsToday,
      running_journeys: figures.runningJourneys,
      webhooks_not_operational: figures.webhooksNotOperational,
      email: { provider: email.provider, real_email: email.realEmail, problem: email.problem },
    };
  },
});

const history = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/overview/history",
  role: NEEDS.read,
  response: panelHistoryAnswer,
  summary:
    "The panel's history per UTC day over the last `days` (default 30, at most 366), from aggregates: contacts at each day's start (today: as last counted), events per day by activity (the 8 most frequent), messages sent per day by channel",
  query: historyQuery,
  async handle({ env, query, panel, db }): Promise<PanelHistory> {
    const now = Date.now();
    const shards = panelShards(env, panel, db);
    return panelHistory(shards, panel.id, query.days, now, (await panelContactsFigure(panelOwningShards(env, panel, db), panel.id, now)).n);
  },
});

export const overviewRoutes = [overview, history];
