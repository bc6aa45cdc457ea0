import { settleEach } from "../../lib/tasks";
import { instancesGoing } from "../../store/journeys/instances";
import type { ShardDb } from "../../store/shards";

/**
 * Points whose emails go out together (a provider call each, all at once). Before each group
 * the points' journey and instances are read again: what a stop, a pause or a goal leaves
 * still going out is at most one group, as a campaign re-checks before each group of sends.
 */
export const EMAIL_GROUP = 25;

/**
 * What became of one point's emails: sent (`send` returned), failed (its error), or not sent
 * because its journey was paused (`held`) or its instance ended, by a stop or its goal (`ended`).
 */
export type EmailGroupOutcome = { sent: true } | { failure: unknown } | { left: "held" | "ended" };

/**
 * Sends the emails of many points of one panel on `db` group by group, each group's after one
 * read (by primary keys) of the state of its points' instances and journeys; a point not
 * `go` any more is not sent. Returns the outcomes in the order of `points`.
 */
export async function sendEmailGroups<T extends { point: { instanceId: string } }>(
  db: ShardDb,
  panelId: string,
  points: readonly T[],
  send: (point: T) => Promise<void>,
): Promise<EmailGroupOutcome[]> {
  const outcomes: EmailGroupOutcome[] = [];
  for (let from = 0; from < points.length; from += EMAIL_GROUP) {
    const group = points.slice(from, from + EMAIL_GROUP);
    const states = await instancesGoing(db, panelId, group.map((p) => p.point.instanceId));
    const state = (p: T) => states.get(p.point.instanceId) ?? "ended";
    const going = group.filter((p) => state(p) === "go");
    const settled = new Map((await settleEach(going, EMAIL_GROUP, send)).map((outcome, i) => [going[i]!, outcome]));
    for (const p of group) {
      const outcome = settled.get(p);
      if (!outcome) outcomes.push({ left: state(p) === "held" ? "held" : "ended" });
      else outcomes.push(outcome.status === "fulfilled" ? { sent: true } : { failure: outcome.reason });
    }
  }
  return outcomes;
}
