import { emailSenders, type ProposedJourneyDefinition } from "../../domain/journey";
import { layoutForDefinition, layoutProblems, type JourneyLayout } from "../../domain/journey-layout";
import type { FieldProblem } from "../../domain/problems";
import { refused, succeeded, type Result } from "../../lib/problems";
import { sameJson } from "../../lib/same-json";
import { addJourneyVersion, getJourney, updateDraftJourney, updateJourneyLayout, type Journey } from "../../store/journeys/definitions";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { sendersStanding } from "../channels/email/sender-domains";
import { checkDefinition } from "./check-definition";
import { scanSegmentNow } from "./contact-triggers";
import { forgetLiveJourneys } from "./live-journeys";
import { mirrorJourneys, type JourneyPanel } from "./mirror";

/**
 * The journey as saved, with notes on senders a real provider may refuse. Refused when there is
 * no such journey (not_found), the definition or layout breaks a rule (invalid), the journey is
 * stopped, changed meanwhile or mails from a refused sender (conflict).
 */
export type EditJourneyOutcome = Result<{ journey: Journey; warnings: FieldProblem[] }>;

export const noSuchJourney = (journeyId: string) => refused("not_found", [], `No journey with id "${journeyId}" in this panel`);

const changedMeanwhile = () =>
  refused("conflict", [{ field: "status", message: "changed meanwhile" }], "status: the journey changed meanwhile (its status or version); read it again and retry");

/**
 * Replaces a draft's definition in place, or gives a running or paused journey a new version
 * (instances already inside finish on theirs, decision 0027); a stopped journey stays as it
 * is. A change of layout alone makes no version, whatever the status (decision 0033).
 */
export async function editJourney(
  env: Env,
  db: ShardDb,
  panel: JourneyPanel,
  journeyId: string,
  proposed: ProposedJourneyDefinition,
  layout: JourneyLayout | undefined,
  by: Auditor,
): Promise<EditJourneyOutcome> {
  const panelId = panel.id;
  const journey = await getJourney(db, panelId, journeyId);
  if (!journey) return noSuchJourney(journeyId);
  if (journey.status === "stopped") {
    return refused(
      "conflict",
      [{ field: "status", message: "is stopped" }],
      "status: the journey is stopped; a stopped journey cannot be edited (a draft is edited in place, a running or paused one gets a new version)",
    );
  }
  // The definition as stored, or as it is once checked (trigger parameters named as the activity
  // names them). The copies are written again: a retry of an edit whose copy failed repairs them.
  const unchanged = async () => {
    await mirrorJourneys(env, db, panel, [journey.id]);
    return saveLayout(db, journey, layout, by);
  };
  if (sameJson(proposed, journey.definition)) return unchanged();
  const checked = await checkDefinition(db, panelId, proposed, layout);
  if (!checked.ok) return checked;
  const definition = checked.value;
  if (sameJson(definition, journey.definition)) return unchanged();
  // A live journey's new email steps meet the sender rule that starting it met.
  const senders = journey.status === "draft" ? { problems: [], notes: [] } : await sendersStanding(env, db, panelId, emailSenders(definition));
  if (senders.problems.length) return refused("conflict", senders.problems);
  const now = Date.now();
  // Without a layout, the positions of the steps the journey keeps stay.
  const nextLayout = layout ?? layoutForDefinition(journey.layout, definition);
  const updated =
    journey.status === "draft"
      ? await updateDraftJourney(db, panelId, journey.id, definition, nextLayout, now)
      : await addJourneyVersion(db, panelId, journey.id, journey.version, definition, nextLayout, now, by.operator?.email ?? null);
  if (!updated) return changedMeanwhile();
  // The partition shards' copies take the new version (a draft's copy, if any, its new text).
  const mirrors = await mirrorJourneys(env, db, panel, [journey.id]);
  // The new version's trigger and filter take new entries at once in this isolate.
  forgetLiveJourneys(panelId);
  await recordAudit(db, panelId, by, "journey.edited", journey.id, { name: updated.name, version: updated.version });
  // A segment trigger scans again from the first contact: its first page now on each shard, as at start.
  if (updated.status === "running") await scanSegmentNow(env, updated, mirrors, now);
  return succeeded({ journey: updated, warnings: senders.notes });
}

/**
 * An edit whose definition is the journey's own: at most the layout changes, and the journey
 * keeps its version whatever its status (moving a box is no new version for contacts to take).
 * Nothing is written, nor audited, when the layout is absent or the same.
 */
async function saveLayout(db: ShardDb, journey: Journey, layout: JourneyLayout | undefined, by: Auditor): Promise<EditJourneyOutcome> {
  if (layout === undefined || sameJson(layout, journey.layout)) return succeeded({ journey, warnings: [] });
  const problems = layoutProblems(journey.definition, layout);
  if (problems.length) return refused("invalid", problems);
  const updated = await updateJourneyLayout(db, journey, layout, Date.now());
  if (!updated) return changedMeanwhile();
  await recordAudit(db, journey.panelId, by, "journey.edited", journey.id, { name: updated.name, version: updated.version, changed: "layout" });
  return succeeded({ journey: updated, warnings: [] });
}
