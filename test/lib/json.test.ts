import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, parseCallerJson } from "../../src/lib/json";

const arrays = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;

describe("parseCallerJson", () => {
  it("takes up to MAX_JSON_DEPTH levels and refuses one more", () => {
    expect(parseCallerJson(arrays(MAX_JSON_DEPTH)).ok).toBe(true);
    expect(parseCallerJson(arrays(MAX_JSON_DEPTH + 1))).toEqual({ ok: false, path: [], reason: "nests deeper than 32 levels of arrays and objects" });
    expect(parseCallerJson(arrays(100_000)).ok).toBe(false);
  });

  it("answers each refusal as its own object: a caller that prefixes its path changes no later answer", () => {
    const first = parseCallerJson(arrays(MAX_JSON_DEPTH + 1));
    if (first.ok) throw new Error("refused expected");
    first.path.unshift("data");
    expect(parseCallerJson(arrays(MAX_JSON_DEPTH + 1))).toEqual({ ok: false, path: [], reason: "nests deeper than 32 levels of arrays and objects" });
  });

  it("does not count brackets inside strings, escaped quotes included", () => {
    const text = JSON.stringify({ a: "[[[[".repeat(20), b: '\\"{{{{'.repeat(20), c: [[1]] });
    expect(parseCallerJson(text)).toEqual({ ok: true, value: JSON.parse(text) });
  });

  it("ends a string at the first quote after an even run of backslashes", () => {
    const deeper = { ok: false, path: [], reason: "nests deeper than 32 levels of arrays and objects" };
    const nested = `${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`;
    // `"a\\"`, then brackets: they are outside the string and count.
    expect(parseCallerJson(`["a\\\\",${nested}]`)).toEqual(deeper);
    expect(parseCallerJson(`["\\\\\\\\\\\\",${nested}]`)).toEqual(deeper);
    // `"a\"...`: the quote is escaped, so the brackets are inside the string.
    expect(parseCallerJson(`["a\\"${nested}"]`).ok).toBe(true);
    expect(parseCallerJson(`["a\\\\\\"${nested}"]`).ok).toBe(true);
  });

  it("answers an unterminated string as invalid JSON, after counting what came before it", () => {
    expect(parseCallerJson(`["abc\\"${"[".repeat(40)}`)).toEqual({ ok: false, path: [], reason: "must be valid JSON" });
    expect(parseCallerJson(`["abc\\`)).toEqual({ ok: false, path: [], reason: "must be valid JSON" });
    expect(parseCallerJson(`${"[".repeat(40)}"abc`)).toMatchObject({ reason: "nests deeper than 32 levels of arrays and objects" });
  });

  it("counts nesting as a character-by-character scan does, on many texts of quotes, backslashes and brackets", () => {
    // The scan before this one: every character looked at, a backslash in a string skipping the next.
    const reference = (text: string) => {
      let depth = 0;
      let inString = false;
      for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (inString) {
          if (c === "\\") i++;
          else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === "{" || c === "[") {
          if (++depth > MAX_JSON_DEPTH) return true;
        } else if (c === "}" || c === "]") depth--;
      }
      return false;
    };
    const alphabet = ['"', "\\", "[", "]", "{", "}", "a", ","];
    let seed = 15;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const fragment = () => Array.from({ length: Math.floor(random() * 12) }, () => alphabet[Math.floor(random() * alphabet.length)]).join("");
    const parses = (text: string) => {
      try {
        JSON.parse(text);
        return true;
      } catch {
        return false;
      }
    };
    let deep = 0;
    for (let n = 0; n < 5000; n++) {
      // A run of brackets deep enough to count, inside or outside a string as the fragments before it decide.
      const text = fragment() + (random() < 0.6 ? "[".repeat(MAX_JSON_DEPTH - Math.floor(random() * 3)) : "") + fragment() + "{" + fragment();
      const result = parseCallerJson(text);
      if (reference(text)) {
        deep++;
        expect(result, text).toEqual({ ok: false, path: [], reason: "nests deeper than 32 levels of arrays and objects" });
      } else expect(result.ok, text).toBe(parses(text));
    }
    expect(deep).toBeGreaterThan(500);
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
