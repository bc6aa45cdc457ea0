import { describe, expect, it, vi } from "vitest";
import { jsonArrays, type JsonArrayPart } from "../../src/store/json-arrays";

/** The parts hold every item once, in order, each under the limit unless it holds one item. */
function expectParts(parts: JsonArrayPart[], items: unknown[], maxChars: number) {
  expect(parts.flatMap((part) => JSON.parse(part.json))).toEqual(items);
  parts.forEach((part, i) => {
    expect(part.from).toBe(i === 0 ? 0 : parts[i - 1]!.to);
    expect(JSON.parse(part.json)).toEqual(items.slice(part.from, part.to));
    if (part.to - part.from > 1) expect(part.json.length).toBeLessThanOrEqual(maxChars);
  });
  expect(parts.at(-1)?.to ?? 0).toBe(items.length);
}

describe("jsonArrays", () => {
  it("gives one array for items that fit, none for no items", () => {
    expect(jsonArrays([])).toEqual([]);
    expect(jsonArrays([["a", { N: 1 }], ["b", {}]])).toEqual([{ json: '[["a",{"N":1}],["b",{}]]', from: 0, to: 2 }]);
  });

  it("cuts longer text into arrays under the limit, in order, an oversized item alone", () => {
    const items = ["aaaa", "bbbb", "c".repeat(20), "dd", "ee"];
    const parts = jsonArrays(items, 16);
    expectParts(parts, items, 16);
    expect(parts.find((part) => part.json.length > 16)).toEqual({ json: `["${"c".repeat(20)}"]`, from: 2, to: 3 });
  });

  it("cuts into a few long arrays, not an array per item", () => {
    const items = Array.from({ length: 1000 }, (_, i) => [`key-${i}`, { N: i }]);
    const parts = jsonArrays(items, 5000);
    expectParts(parts, items, 5000);
    expect(parts.length).toBeLessThanOrEqual(8);
  });

  it("stays exact when the first items are no guide to the rest's length", () => {
    const short = Array.from({ length: 200 }, (_, i) => i);
    const long = Array.from({ length: 800 }, (_, i) => `${"x".repeat(40)}${i}`);
    for (const items of [[...short, ...long], [...long, ...short]]) {
      const parts = jsonArrays(items, 4000);
      expectParts(parts, items, 4000);
      expect(parts.length).toBeLessThanOrEqual(20);
    }
  });

  it("gives one array for a list that fits, however uneven its items", () => {
    const items = [...Array.from({ length: 32 }, () => "y".repeat(100)), ...Array.from({ length: 968 }, () => 1)];
    expect(JSON.stringify(items).length).toBeLessThan(10_000);
    expect(jsonArrays(items, 10_000)).toHaveLength(1);
  });

  it("does not stringify a list far longer than one array whole before cutting it", () => {
    const items = Array.from({ length: 2000 }, (_, i) => [`user${i}@example.com`, { NAME: `User ${i}`, AGE: 20 + (i % 50), CITY: `City${i % 300}` }]);
    const whole = JSON.stringify(items).length;
    expect(whole).toBeGreaterThan(2 * 40_000);
    const stringify = vi.spyOn(JSON, "stringify");
    try {
      const parts = jsonArrays(items, 40_000);
      expectParts(parts, items, 40_000);
      const stringified = stringify.mock.results.reduce((sum, result) => sum + (result.value as string).length, 0);
      // The parts' own text plus a probe of a few items: no pass over the whole list first.
      expect(stringified).toBeLessThan(whole * 1.1);
    } finally {
      stringify.mockRestore();
    }
  });
});
