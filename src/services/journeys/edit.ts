import { emailSenders, type JourneyDefinition } from "../../domain/journey";
import { layoutForDefinition, layoutProblems, type JourneyLayout } from "../../domain/journey-layout";
import type { FieldProblem } from "../../domain/problems";
import { sameJson } from "../../lib/same-json";
import { addJourneyVersion, getJourney, updateDraftJourney, updateJourneyLayout, type Journey } from "../../store/journeys/definitions";
import type { ShardDb } from "../../store/shards";
import { recordAudit, type Auditor } from "../audit/record";
import { sendersStanding } from "../channels/email/sender-domains";
import { checkDefinition } from "./check-definition";
import { scanSegment } from "./contact-triggers";
import { forgetLiveJourneys } from "./live-journeys";

export type EditJourneyOutcome =
  | { ok: true; journey: Journey; warnings: FieldProblem[] }
  | { ok: false; kind: "missing" }
  | { ok: false; kind: "stopped" }
  | { ok: false; kind: "changed_meanwhile" }
  | { ok: false; kind: "invalid" | "senders_refused"; problems: FieldProblem[] };

/**
 * Replaces a draft's definition in place, or gives a running or paused journey a new version
 * (instances already inside finish on theirs, decision 0027); a stopped journey stays as it
 * is. A change of layout alone makes no version, whatever the status (decision 0033).
 */
export async function editJourney(
  env: Env,
  db: ShardDb,
  panelId: string,
  journeyId: string,
  proposed: JourneyDefinition,
  layout: JourneyLayout | undefined,
  by: Auditor,
): Promise<EditJourneyOutcome> {
  const journey = await getJourney(db, panelId, journeyId);
  if (!journey) return { ok: false, kind: "missing" };
  if (journey.status === "stopped") return { ok: false, kind: "stopped" };
  // The definition as stored, or as it is once checked (trigger parameters named as the activity names them).
  if (sameJson(proposed, journey.definition)) return saveLayout(db, journey, layout, by);
  const checked = await checkDefinition(db, panelId, proposed, layout);
  if (!checked.ok) return { ok: false, kind: "invalid", problems: checked.problems };
  const { definition } = checked;
  if (sameJson(definition, journey.definition)) return saveLayout(db, journey, layout, by);
  // A live journey's new email steps meet the sender rule that starting it met.
  const senders = journey.status === "draft" ? { problems: [], notes: [] } : await sendersStanding(env, db, panelId, emailSenders(definition));
  if (senders.problems.length) return { ok: false, kind: "senders_refused", problems: senders.problems };
  const now = Date.now();
  // Without a layout, the positions of the steps the journey keeps stay.
  const nextLayout = layout ?? layoutForDefinition(journey.layout, definition);
  const updated =
    journey.status === "draft"
      ? await updateDraftJourney(db, panelId, journey.id, definition, nextLayout, now)
      : await addJourneyVersion(db, panelId, journey.id, journey.version, definition, nextLayout, now, by.operator?.email ?? null);
  if (!updated) return { ok: false, kind: "changed_meanwhile" };
  // The new version's trigger and filter take new entries at once in this isolate.
  forgetLiveJourneys(panelId);
  await recordAudit(db, panelId, by, "journey.edited", journey.id, { name: updated.name, version: updated.version });
  // A segment trigger scans again from the first contact: its first page now, as at start.
  if (updated.status === "running" && updated.scanCursor !== null) await scanSegment(env, updated, now);
  return { ok: true, journey: updated, warnings: senders.notes };
}

/**
 * An edit whose definition is the journey's own: at most the layout changes, and the journey
 * keeps its version whatever its status (moving a box is no new version for contacts to take).
 * Nothing is written, nor audited, when the layout is absent or the same.
 */
async function saveLayout(db: ShardDb, journey: Journey, layout: JourneyLayout | undefined, by: Auditor): Promise<EditJourneyOutcome> {
  if (layout === undefined || sameJson(layout, journey.layout)) return { ok: true, journey, warnings: [] };
  const problems = layoutProblems(journey.definition, layout);
  if (problems.length) return { ok: false, kind: "invalid", problems };
  const updated = await updateJourneyLayout(db, journey, layout, Date.now());
  if (!updated) return { ok: false, kind: "changed_meanwhile" };
  await recordAudit(db, journey.panelId, by, "journey.edited", journey.id, { name: updated.name, version: updated.version, changed: "layout" });
  return { ok: true, journey: updated, warnings: [] };
}
