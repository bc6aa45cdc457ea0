import { splitLabels, type BranchLabel, type SplitGoal, type SplitStep } from "../../domain/journey";
import { branchFigures } from "../../domain/split-confidence";
import { refused, refusedField, succeeded } from "../../lib/problems";
import { getJourney, type Journey } from "../../store/journeys/definitions";
import { splitTallies } from "../../store/journeys/splits";
import type { ShardDb } from "../../store/shards";
import type { Auditor } from "../audit/record";
import { editJourney, noSuchJourney, type EditJourneyOutcome } from "./edit";
import type { JourneyPanel } from "./mirror";

/** One split step's branches as the report shows them (admin GET …/splits). */
export interface SplitReport {
  step_id: string;
  goal: SplitGoal | null;
  winner: BranchLabel | null;
  method: "two_proportion_z_test_vs_a";
  branches: Array<{ label: string; percent: number | null; then: string | null; entered: number; converted: number; rate: number; confidence: number | null; winner: boolean }>;
}

/**
 * The split steps of the journey's current version, each branch with the instances that took
 * it and those converted, over every version (a split keeps its step id across versions), and
 * each branch's confidence against A (domain/split-confidence.ts).
 */
export async function splitReport(shards: readonly ShardDb[], journey: Journey): Promise<SplitReport[]> {
  const splits = journey.definition.steps.filter((s): s is SplitStep => s.type === "split");
  if (splits.length === 0) return [];
  // Each shard of the panel's partitions (panelShards) holds its contacts' split entries: summed.
  const tallies: Awaited<ReturnType<typeof splitTallies>> = [];
  for (const rows of await Promise.all(shards.map((db) => splitTallies(db, journey.panelId, journey.id)))) {
    for (const row of rows) {
      const sum = tallies.find((t) => t.stepId === row.stepId && t.branch === row.branch);
      if (sum) {
        sum.entered += row.entered;
        sum.converted += row.converted;
      } else tallies.push({ ...row });
    }
  }
  return splits.map((step) => {
    const labels = splitLabels(step.branches.length);
    // Branches an earlier version had beyond this one's still show what they did.
    for (const t of tallies) if (t.stepId === step.id && !labels.includes(t.branch as BranchLabel)) labels.push(t.branch as BranchLabel);
    const counted = labels.map((label) => tallies.find((t) => t.stepId === step.id && t.branch === label) ?? { entered: 0, converted: 0 });
    const figures = branchFigures(counted);
    return {
      step_id: step.id,
      goal: step.goal ?? null,
      winner: step.winner ?? null,
      method: "two_proportion_z_test_vs_a",
      branches: labels.map((label, i) => ({
        label,
        percent: step.branches[i]?.percent ?? null,
        then: step.branches[i]?.then ?? null,
        ...figures[i]!,
        winner: step.winner === label,
      })),
    };
  });
}

/**
 * Promotes a split's branch: a new version of the journey (decision 0027) whose split sends
 * every new entry down `branch`, while instances already inside finish on their own version,
 * and so on their own hashed branch. Refused when there is no such journey or split step, the
 * split has no such branch, or the edit is refused (a stopped journey).
 */
export async function promoteSplitWinner(env: Env, db: ShardDb, panel: JourneyPanel, journeyId: string, stepId: string, branch: BranchLabel, by: Auditor): Promise<EditJourneyOutcome> {
  const journey = await getJourney(db, panel.id, journeyId);
  if (!journey) return noSuchJourney(journeyId);
  const step = journey.definition.steps.find((s) => s.id === stepId);
  if (!step || step.type !== "split") return refused("not_found", [], `No split step "${stepId}" in this journey`);
  const labels = splitLabels(step.branches.length);
  if (!labels.includes(branch)) return refusedField("invalid", "branch", `names no branch of this split (${labels.join(", ")})`);
  if (step.winner === branch) return succeeded({ journey, warnings: [] });
  const definition = { ...journey.definition, steps: journey.definition.steps.map((s) => (s.id === stepId ? { ...step, winner: branch } : s)) };
  return editJourney(env, db, panel, journeyId, definition, undefined, by);
}
