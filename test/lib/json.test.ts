import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, parseCallerJson } from "../../src/lib/json";

const arrays = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

describe("parseCallerJson", () => {
  it("takes up to MAX_JSON_DEPTH levels and refuses one more", () => {
    expect(parseCallerJson(arrays(MAX_JSON_DEPTH)).ok).toBe(true);
    expect(parseCallerJson(arrays(MAX_JSON_DEPTH + 1))).toEqual({ ok: false, path: [], reason: "nests deeper than 32 levels of arrays and objects" });
    expect(parseCallerJson(arrays(100_000)).ok).toBe(false);
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const text = JSON.stringify({ a: "[[[[".repeat(20), b: '\\"{{{{'.repeat(20), c: [[1]] });
    expect(parseCallerJson(text)).toEqual({ ok: true, value: JSON.parse(text) });
  });

  it("refuses __proto__ names wherever they are, and nothing else", () => {
    expect(parseCallerJson('{"a":[{"b":1},{"__proto__":2}]}')).toEqual({ ok: false, path: ["a", 1, "__proto__"], reason: "__proto__ is not allowed as a member name" });
    expect(parseCallerJson('{"\\u005f_proto__":1}')).toMatchObject({ ok: false, path: ["__proto__"] });
    expect(parseCallerJson('{"a":"__proto__","constructor":1,"prototype":2}').ok).toBe(true);
  });

  it("answers invalid JSON as such", () => {
    expect(parseCallerJson("{")).toEqual({ ok: false, path: [], reason: "must be valid JSON" });
  });
});
