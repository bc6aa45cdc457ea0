import { describe, expect, it } from "vitest";
import { filterMatches } from "../../src/domain/filters";
import { journeyGraphProblems, nextSteps, parseDuration, startSteps, type JourneyDefinition } from "../../src/domain/journey";

describe("durations", () => {
  it("reads minutes, hours and days", () => {
    expect(parseDuration("30m")).toBe(30 * 60_000);
    expect(parseDuration("12h")).toBe(12 * 3_600_000);
    expect(parseDuration("2d")).toBe(2 * 86_400_000);
    for (const bad of ["0m", "2 d", "1w", "", "-1h", "1.5h", "400d"]) expect(parseDuration(bad), bad).toBeNull();
  });
});

describe("filters", () => {
  const attrs = { CITY: "Pune", AGE: 30, VIP: true, NAME: "Ada Lovelace" };
  it("compares strings without case, numbers as numbers", () => {
    expect(filterMatches([{ attribute: "CITY", op: "eq", value: "pune" }], attrs)).toBe(true);
    expect(filterMatches([{ attribute: "AGE", op: "gt", value: 29 }], attrs)).toBe(true);
    expect(filterMatches([{ attribute: "AGE", op: "lte", value: "29" }], attrs)).toBe(false);
    expect(filterMatches([{ attribute: "CITY", op: "in", value: ["Delhi", "PUNE"] }], attrs)).toBe(true);
    expect(filterMatches([{ attribute: "NAME", op: "contains", value: "love" }], attrs)).toBe(true);
    expect(filterMatches([{ attribute: "NAME", op: "starts_with", value: "ada" }], attrs)).toBe(true);
    expect(filterMatches([{ attribute: "VIP", op: "eq", value: true }], attrs)).toBe(true);
  });
  it("treats absent attributes: exists/not_exists, ne holds, the rest fail", () => {
    expect(filterMatches([{ attribute: "STATE", op: "not_exists" }], attrs)).toBe(true);
    expect(filterMatches([{ attribute: "STATE", op: "exists" }], attrs)).toBe(false);
    expect(filterMatches([{ attribute: "STATE", op: "ne", value: "MH" }], attrs)).toBe(true);
    expect(filterMatches([{ attribute: "STATE", op: "eq", value: "MH" }], attrs)).toBe(false);
  });
  it("needs every clause", () => {
    expect(filterMatches([{ attribute: "CITY", op: "eq", value: "Pune" }, { attribute: "AGE", op: "lt", value: 18 }], attrs)).toBe(false);
    expect(filterMatches([], attrs)).toBe(true);
  });
});

describe("step graph", () => {
  const definition: JourneyDefinition = {
    name: "J",
    trigger: { type: "activity", activity: "a" },
    filter: [],
    steps: [
      { id: "sms", type: "sms", text: "hi" },
      { id: "wait", type: "wait_for_event", after: "sms", events: ["delivered"], within: "1h" },
      { id: "yes", type: "webhook", after: "wait", on: "event", webhook: "w", attributes: [], params: {} },
      { id: "no", type: "condition", after: "wait", on: "timeout", filter: [{ attribute: "AGE", op: "gt", value: 1 }], then: "again" },
      { id: "again", type: "delay", for: "1d" },
    ],
  };
  it("accepts a sound graph and walks it", () => {
    expect(journeyGraphProblems(definition)).toEqual([]);
    expect(startSteps(definition).map((s) => s.id)).toEqual(["sms"]);
    const wait = definition.steps[1]!;
    expect(nextSteps(definition, wait, "event").map((s) => s.id)).toEqual(["yes"]);
    expect(nextSteps(definition, wait, "timeout").map((s) => s.id)).toEqual(["no"]);
    expect(nextSteps(definition, definition.steps[3]!, true).map((s) => s.id)).toEqual(["again"]);
    expect(nextSteps(definition, definition.steps[3]!, false)).toEqual([]);
  });
  it("refuses a step after a condition: a condition goes on by its then or else only", () => {
    const steps = [...definition.steps, { id: "lost", type: "delay" as const, for: "1h", after: "no" }];
    expect(journeyGraphProblems({ ...definition, steps })).toEqual([{ field: "steps.5.after", message: '"no" is a condition: name this step in its then or else' }]);
  });
  it("refuses a step with two parents", () => {
    const steps = [...definition.steps, { id: "twice", type: "delay" as const, for: "1h", after: "sms" }];
    steps[4] = { ...steps[4]!, after: "sms" } as never;
    expect(journeyGraphProblems({ ...definition, steps }).map((p) => p.field)).toContain("steps.4.after");
  });
});
