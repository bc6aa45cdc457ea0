import { panelFigures } from "../store/overview";
import { instantOf, wallClockAt } from "../domain/time";
import { definePanelRoute } from "./route";

const overview = definePanelRoute({
  method: "GET",
  path: "/panels/:panel/overview",
  role: "viewer",
  summary: "The panel's figures at a glance: contacts, lists, events and sends today (in the panel's time zone), running journeys, webhooks not operational",
  async handle({ env, path, panel }) {
    const today = wallClockAt(Date.now(), panel.timezone);
    const dayStart = instantOf({ ...today, hour: 0, minute: 0, second: 0 }, panel.timezone);
    const figures = await panelFigures(env.DB, panel.id, dayStart);
    return {
      contacts: figures.contacts,
      lists: figures.lists,
      events_today: figures.eventsToday,
      sends_today: figures.sendsToday,
      running_journeys: figures.runningJourneys,
      webhooks_not_operational: figures.webhooksNotOperational,
    };
  },
});

export const overviewRoutes = [overview];
