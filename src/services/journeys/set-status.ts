import { journeyStatusAction } from "../../domain/audit";
import { emailSenders } from "../../domain/journey";
import type { FieldProblem } from "../../domain/problems";
import { refused, succeeded, type Result } from "../../lib/problems";
import { changeJourneyStatus, getJourney, type Journey, type JourneyStatus } from "../../store/journeys/definitions";
import type { JourneyCounters } from "../../store/journeys/instances";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { sendersStanding } from "../channels/email/sender-domains";
import { scanSegmentNow } from "./contact-triggers";
import { noSuchJourney } from "./edit";
import { forgetLiveJourneys } from "./live-journeys";
import { mirrorJourneys, type JourneyPanel } from "./mirror";
import { resumeHeldPoints } from "./points";
import { nudgeHeldSends, skipStoppedSends } from "./queued-sends";
import { countersAcross } from "./read";
import { panelOwningShards } from "../access/partitions";

type TargetStatus = Exclude<JourneyStatus, "draft">;

/** Which statuses each status may be reached from; repeating the current one is harmless. */
const TRANSITIONS: Record<TargetStatus, JourneyStatus[]> = {
  running: ["draft", "paused", "running"],
  paused: ["running", "paused"],
  stopped: ["draft", "running", "paused", "stopped"],
};

/**
 * The journey in its new status, with notes on senders a real provider may refuse. Refused when
 * there is no such journey (not_found), or it mails from a refused sender or cannot go from its
 * status to the one asked (conflict).
 */
export type SetJourneyStatusOutcome = Result<{ journey: Journey; counters: JourneyCounters; warnings: FieldProblem[] }>;

/** Runs, pauses (instances are held) or stops (instances end) a journey. */
export async function setJourneyStatus(env: Env, db: ShardDb, panel: JourneyPanel, journeyId: string, status: TargetStatus, by: Auditor): Promise<SetJourneyStatusOutcome> {
  const panelId = panel.id;
  const journey = await getJourney(db, panelId, journeyId);
  if (!journey) return noSuchJourney(journeyId);
  // Mail from a sender domain a real provider would refuse is refused at start, not message by message.
  const senders = status === "running" ? await sendersStanding(env, db, panelId, emailSenders(journey.definition)) : { problems: [], notes: [] };
  if (senders.problems.length) return refused("conflict", senders.problems);
  const now = Date.now();
  // A stop ends the home's instances within its buckets (a split's source's fenced copies are cleaning's, decision 0047).
  const changed = await changeJourneyStatus(db, panelId, journey.id, TRANSITIONS[status], status, now, panelOwningShards(env, panel, db)[0].buckets);
  forgetLiveJourneys(panelId);
  if (!changed) {
    return refused("conflict", [{ field: "status", message: `cannot go from ${journey.status} to ${status}` }], `status: a ${journey.status} journey cannot become ${status}`);
  }
  // The partition shards' copies take the new status (a stop ends their instances too).
  const mirrors = await mirrorJourneys(env, db, panel, [journey.id], changed.status === "stopped" ? [journey.id] : [], now);
  await recordAudit(db, panelId, by, journeyStatusAction(journey.status, status), journey.id, { name: journey.name, from: journey.status, to: status });
  // What waits for the provider on every shard holding some is settled now, not at a nudge.
  if (changed.status === "stopped") await Promise.all([{ db }, ...mirrors].map((at) => skipStoppedSends(changed, at)));
  if (changed.status === "running") {
    // Held points go on at once (the cron would take them within a minute), on every shard
    // holding some, and a segment journey enters its first page of matching contacts now on
    // each shard, the rest by the cron. The SMS and push a pause held go too.
    for (const at of [{ shard: panel.shard, db }, ...mirrors]) {
      if (journey.status === "paused") await nudgeHeldSends(env, changed, at);
      await resumeHeldPoints(env, changed, now, at);
    }
    await scanSegmentNow(env, changed, mirrors, now);
  }
  // The scan above only moves scan_cursor, which the view does not show: no second read.
  return succeeded({ journey: changed, counters: await countersAcross(env, db, panel, changed.id), warnings: senders.notes });
}
