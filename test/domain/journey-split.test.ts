import { describe, expect, it } from "vitest";
import { journeyDefinitionSchema, journeyGraphProblems, nextSteps, splitBranchOf, startSteps, type JourneyDefinition } from "../../src/domain/journey";
import { branchFigures, normalCdf, twoProportionConfidence } from "../../src/domain/split-confidence";

const base = { name: "J", trigger: { type: "activity", activity: "a" } };
const split = { id: "s", type: "split", branches: [{ percent: 50, then: "x" }, { percent: 50, then: "y" }] };
const delays = [
  { id: "x", type: "delay", for: "1d" },
  { id: "y", type: "delay", for: "2d" },
];

function problemsOf(body: unknown): Array<{ path: string; message: string }> {
  const parsed = journeyDefinitionSchema.safeParse(body);
  return parsed.success ? [] : parsed.error.issues.map((i) => ({ path: i.path.join("."), message: i.message }));
}

describe("split node schema", () => {
  it("takes 2 to 4 branches whose percents add up to 100, a goal and a winner", () => {
    expect(problemsOf({ ...base, steps: [split, ...delays] })).toEqual([]);
    expect(problemsOf({ ...base, steps: [{ ...split, goal: { activity: "purchase", within: "7d" }, winner: "B" }, ...delays] })).toEqual([]);
    expect(problemsOf({ ...base, steps: [{ ...split, goal: { message_event: "click", within: "2d" } }, ...delays] })).toEqual([]);
  });
  it("names the field and the reason of each mistake", () => {
    expect(problemsOf({ ...base, steps: [{ ...split, branches: [{ percent: 60 }, { percent: 30 }] }] })).toEqual([{ path: "steps.0.branches", message: "the branches' percents must add up to 100 (they add up to 90)" }]);
    expect(problemsOf({ ...base, steps: [{ ...split, branches: [{ percent: 50 }] }] })).toContainEqual({ path: "steps.0.branches", message: "must have 2 to 4 branches" });
    expect(problemsOf({ ...base, steps: [{ ...split, branches: Array.from({ length: 5 }, () => ({ percent: 20 })) }] })[0]).toMatchObject({ path: "steps.0.branches", message: "must have 2 to 4 branches" });
    expect(problemsOf({ ...base, steps: [{ ...split, branches: [{ percent: 0.5 }, { percent: 99.5 }] }] })[0]).toMatchObject({ path: "steps.0.branches.0.percent" });
    expect(problemsOf({ ...base, steps: [{ ...split, winner: "C" }, ...delays] })).toEqual([{ path: "steps.0.winner", message: "names no branch of this split (A, B)" }]);
    expect(problemsOf({ ...base, steps: [{ ...split, goal: { within: "7d" } }, ...delays] })[0]).toMatchObject({ path: "steps.0.goal.activity" });
    expect(problemsOf({ ...base, steps: [{ ...split, goal: { activity: "p", within: "forever" } }, ...delays] })[0]).toMatchObject({ path: "steps.0.goal.within" });
    expect(problemsOf({ ...base, steps: [{ ...split, goal: { message_event: "bounce", within: "1d" } }, ...delays] })[0]).toMatchObject({ path: "steps.0.goal.message_event" });
  });
  it("checks the branches' steps in the graph", () => {
    const parse = (steps: unknown[]) => journeyGraphProblems(journeyDefinitionSchema.parse({ ...base, steps }));
    expect(parse([split, ...delays])).toEqual([]);
    expect(parse([{ ...split, branches: [{ percent: 50, then: "x" }, { percent: 50, then: "nope" }] }, delays[0]])).toEqual([{ field: "steps.0.branches.1.then", message: 'names no step ("nope")' }]);
    expect(parse([{ ...split, branches: [{ percent: 50, then: "x" }, { percent: 50, then: "x" }] }, delays[0]])).toEqual([
      { field: "steps.0.branches.1.then", message: 'step "x" already follows "s"; a step follows one step only' },
    ]);
    expect(parse([split, ...delays, { id: "z", type: "delay", for: "1d", after: "s" }])).toEqual([{ field: "steps.3.after", message: `"s" is a split: name this step in one of its branches' then` }]);
  });
  it("starts at the split and walks the branch taken", () => {
    const definition = journeyDefinitionSchema.parse({ ...base, steps: [split, ...delays] }) as JourneyDefinition;
    expect(startSteps(definition).map((s) => s.id)).toEqual(["s"]);
    const s = definition.steps[0]!;
    expect(nextSteps(definition, s, { branch: 0 }).map((x) => x.id)).toEqual(["x"]);
    expect(nextSteps(definition, s, { branch: 1 }).map((x) => x.id)).toEqual(["y"]);
  });
});

describe("split branch of a contact", () => {
  const step = { id: "s", branches: [{ percent: 20 }, { percent: 30 }, { percent: 50 }] };
  it("is the same for the same contact and spreads by the percents", () => {
    const counts = [0, 0, 0];
    for (let contact = 1; contact <= 10_000; contact++) {
      const branch = splitBranchOf("jrn_1", step, contact);
      expect(splitBranchOf("jrn_1", step, contact)).toBe(branch);
      counts[branch]!++;
    }
    expect(counts[0]).toBeGreaterThan(1700);
    expect(counts[0]).toBeLessThan(2300);
    expect(counts[1]).toBeGreaterThan(2600);
    expect(counts[1]).toBeLessThan(3400);
    expect(counts[2]).toBeGreaterThan(4600);
    expect(counts[2]).toBeLessThan(5400);
  });
  it("differs between journeys and goes down the winner once promoted", () => {
    const other = Array.from({ length: 100 }, (_, c) => splitBranchOf("jrn_1", step, c) !== splitBranchOf("jrn_2", step, c)).filter(Boolean).length;
    expect(other).toBeGreaterThan(20);
    for (let contact = 1; contact < 50; contact++) expect(splitBranchOf("jrn_1", { ...step, winner: "B" }, contact)).toBe(1);
  });
});

describe("split confidence (two-proportion z-test against branch A)", () => {
  it("computes the normal distribution", () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 6);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 5);
    expect(normalCdf(-1.644854)).toBeCloseTo(0.05, 5);
  });
  it("matches a worked example", () => {
    // 200/1000 against 250/1000: z = 2.68, two-sided p = 0.0073.
    expect(twoProportionConfidence({ entered: 1000, converted: 200 }, { entered: 1000, converted: 250 })).toBeCloseTo(0.9926, 3);
    expect(twoProportionConfidence({ entered: 100, converted: 10 }, { entered: 100, converted: 10 })).toBeCloseTo(0, 6);
    expect(twoProportionConfidence({ entered: 0, converted: 0 }, { entered: 10, converted: 1 })).toBeNull();
    expect(twoProportionConfidence({ entered: 10, converted: 0 }, { entered: 10, converted: 0 })).toBe(0);
  });
  it("gives each branch its rate and A none", () => {
    expect(branchFigures([{ entered: 10, converted: 5 }, { entered: 0, converted: 0 }])).toEqual([
      { entered: 10, converted: 5, rate: 0.5, confidence: null },
      { entered: 0, converted: 0, rate: 0, confidence: null },
    ]);
  });
});
