import { ownedElsewhere, z } from "../lib/z";
import { branchLabel, splitLabels, type JourneyDefinition, type SplitGoal, type SplitStep } from "./journey";
import { branchFigures } from "./split-confidence";

/**
 * A split step's branches as a journey simulation reports them (decision 0048): entries, and
 * conversions to the split's goal within its window, with the rate and the confidence against
 * A by the live report's method (`branchFigures`, as GET …/splits). The schema is the answer's
 * (domain/answers/journeys.ts), the type the simulation's.
 */
export const simulatedSplitSchema = z.strictObject({
  step_id: z.string(),
  goal: ownedElsewhere<SplitGoal | null>("The split's goal, as its step has it; null when none (then no branch converts, as live)"),
  /** The branch every entry of this version takes, when promoted. */
  winner: branchLabel.nullable(),
  method: z.literal("two_proportion_z_test_vs_a"),
  conversions_unknown: z
    .string()
    .nullable()
    .meta({ description: "Why the branches' converted, rate and confidence are null: a goal of an open or click of the branch's messages, which the simulation does not send; null when they are counted" }),
  branches: z.array(
    z.strictObject({
      label: branchLabel,
      percent: z.number(),
      then: z.string().nullable(),
      entered: z.number().meta({ description: "Simulated contacts that took the branch" }),
      converted: z.number().nullable().meta({ description: "Of them, those that did the goal's activity within its window after the split; null when it cannot be known" }),
      rate: z.number().nullable().meta({ description: "converted / entered, 0 to 1" }),
      confidence: z.number().nullable().meta({ description: "Against branch A, 0 to 1 (1 − the two-sided p-value); null for A, while a side is empty, or when conversions are unknown" }),
    }),
  ),
});
export type SimulatedSplit = z.output<typeof simulatedSplitSchema>;

/** Why an open or click goal's conversions are not simulated. */
function unknownReason(event: "open" | "click"): string {
  return event === "open"
    ? "the goal is an open of the branch's messages: the simulation sends none, so whether one would have been opened is not known"
    : "the goal is a click in the branch's messages: the simulation sends none, so whether one would have been clicked is not known";
}

/**
 * The split steps of `definition` with their branches' simulated entries and conversions (per
 * step, by branch index). A split without a goal converts nobody (as live); one with an open or
 * click goal reports its conversions as unknown.
 */
export function simulatedSplits(definition: JourneyDefinition, entered: Readonly<Record<string, readonly number[]>>, converted: Readonly<Record<string, readonly number[]>>): SimulatedSplit[] {
  return definition.steps
    .filter((s): s is SplitStep => s.type === "split")
    .map((step) => {
      const labels = splitLabels(step.branches.length);
      const event = step.goal?.message_event;
      const figures = branchFigures(labels.map((_, i) => ({ entered: entered[step.id]?.[i] ?? 0, converted: converted[step.id]?.[i] ?? 0 })));
      return {
        step_id: step.id,
        goal: step.goal ?? null,
        winner: step.winner ?? null,
        method: "two_proportion_z_test_vs_a",
        conversions_unknown: event === undefined ? null : unknownReason(event),
        branches: labels.map((label, i) => ({
          label,
          percent: step.branches[i]!.percent,
          then: step.branches[i]!.then ?? null,
          ...(event === undefined ? figures[i]! : { entered: figures[i]!.entered, converted: null, rate: null, confidence: null }),
        })),
      };
    });
}
