import type { QueueHandler } from "../../lib/tasks";
import { ENTRIES_PER_MESSAGE, enterListEntries, nudgeListEntries } from "./list-entries";
import { continueFreePoints, POINTS_PER_MESSAGE, pointsNudge } from "./points";

/**
 * The JOURNEYS queue: each message names a panel and a kind of journey work there, entering
 * one leased page of its list entries or continuing one leased page of its free points. While
 * pages come back full the message passes the work on in a new one, so a backlog drains
 * through as many chains as were started (uploads nudge once per step, the cron one per page
 * of a backlog up to a few); leases keep the chains apart.
 */
export interface JourneysNudge {
  type: "list-entries" | "points";
  panel: string;
  /** The shard holding the work (a partition's, decision 0038); absent: the panel's home. */
  shard?: number;
}

export function readJourneysNudge(body: unknown): JourneysNudge | null {
  if (typeof body !== "object" || body === null) return null;
  const { type, panel, shard } = body as Record<string, unknown>;
  if ((type !== "list-entries" && type !== "points") || typeof panel !== "string") return null;
  return Number.isInteger(shard) ? { type, panel, shard: shard as number } : { type, panel };
}

export function journeysQueueHandler(now: () => number = Date.now): QueueHandler {
  return async (batch, env) => {
    for (const message of batch.messages) {
      const nudge = readJourneysNudge(message.body);
      if (!nudge) {
        console.error(`journeys queue: message ${message.id} is not a journeys nudge; retried`, message.body);
        message.retry();
        continue;
      }
      try {
        if (nudge.type === "list-entries") {
          if ((await enterListEntries(env, nudge.panel, now(), { shard: nudge.shard })) === ENTRIES_PER_MESSAGE) await nudgeListEntries(env, nudge.panel, nudge.shard);
        } else if ((await continueFreePoints(env, nudge.panel, now(), nudge.shard)) === POINTS_PER_MESSAGE) {
          await env.JOURNEYS.send(pointsNudge(nudge.panel, nudge.shard));
        }
        message.ack();
      } catch (error) {
        // The page stays leased and comes back after the lease; the retry takes the next page.
        console.error(`journeys queue: ${nudge.type} of panel ${nudge.panel} failed`, error);
        message.retry({ delaySeconds: 5 });
      }
    }
  };
}

export const handleJourneysQueue = journeysQueueHandler();
