/**
 * JSON from callers. Two things JSON.parse lets through are refused here, where every body and
 * every JSON-valued parameter is parsed:
 * - nesting deeper than MAX_JSON_DEPTH arrays and objects. Deep values cost stack in every
 *   recursive walk after the parse (zod, JSON.stringify of an echo), and no input of this API
 *   needs more than a few levels. V8's JSON.parse is iterative, so the parsed value is walked
 *   (its containers only, at most MAX_JSON_DEPTH + 1 deep: a quarter of a scan of the text's
 *   characters for a batch of events); a text that does not parse is scanned, so the answer
 *   names its depth as before.
 * - members named `__proto__`. JSON.parse keeps them as own members, but any copy through an
 *   ordinary assignment (zod's records, spreads into objects) turns them into a prototype
 *   change or drops them silently; the caller is told instead.
 */

export const MAX_JSON_DEPTH = 32;

/** Where a problem is, from the root of the parsed value: member names and array indexes. */
export type JsonPath = Array<string | number>;

export type JsonParsed = { ok: true; value: unknown } | { ok: false; path: JsonPath; reason: string };

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_BRACE = 123;
const OPEN_BRACKET = 91;
const CLOSE_BRACE = 125;
const CLOSE_BRACKET = 93;

/**
 * Whether arrays and objects nest deeper than `limit` outside strings. Most of a body's
 * characters are inside strings (every member name is one), so each string is skipped with
 * indexOf to its closing quote, the first one not escaped: preceded by an even run of
 * backslashes. An unterminated string ends the scan (JSON.parse refuses the text).
 */
function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = text.indexOf('"', i + 1);
      while (end !== -1 && isEscaped(text, end)) end = text.indexOf('"', end + 1);
      if (end === -1) return false;
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}

/** Whether the character at `at` follows an odd run of backslashes. */
function isEscaped(text: string, at: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * The path of the first member name or string (depth first, in document order) that `test`
 * picks, or null. Values come from JSON.parse within MAX_JSON_DEPTH, so recursion is shallow.
 */
export function findInJson(value: unknown, test: (text: string, isName: boolean) => boolean, path: JsonPath = []): JsonPath | null {
  if (typeof value === "string") return test(value, false) ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findInJson(value[i], test, [...path, i]);
      if (found) return found;
    }
    return null;
  }
  if (typeof value === "object" && value !== null) {
    for (const [name, member] of Object.entries(value)) {
      if (test(name, true)) return [...path, name];
      const found = findInJson(member, test, [...path, name]);
      if (found) return found;
    }
  }
  return null;
}

/** Whether arrays and objects in a parsed value nest deeper than `limit`; stops at the first that does. */
function valueNestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  if (limit === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (valueNestsDeeperThan(value[i], limit - 1)) return true;
    return false;
  }
  for (const name in value) if (valueNestsDeeperThan((value as Record<string, unknown>)[name], limit - 1)) return true;
  return false;
}

/** A new answer each time: callers prefix its path in place. */
const tooDeep = (): JsonParsed => ({ ok: false, path: [], reason: `nests deeper than ${MAX_JSON_DEPTH} levels of arrays and objects` });

export function parseCallerJson(text: string): JsonParsed {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return nestsDeeperThan(text, MAX_JSON_DEPTH) ? tooDeep() : { ok: false, path: [], reason: "must be valid JSON" };
  }
  if (valueNestsDeeperThan(value, MAX_JSON_DEPTH)) return tooDeep();
  // A `__proto__` name may be spelled with \u escapes; without either form in the text there is none.
  if (text.includes("__proto__") || text.includes("\\u")) {
    const proto = findInJson(value, (name, isName) => isName && name === "__proto__");
    if (proto) return { ok: false, path: proto, reason: "__proto__ is not allowed as a member name" };
  }
  return { ok: true, value };
}

/** `data.params.__proto__`: a path as the `field` of an error, under `prefix` when given. */
export function jsonFieldName(path: JsonPath, prefix?: string): string {
  const parts = [...(prefix ? [prefix] : []), ...path.map(String)];
  return parts.length ? parts.join(".") : "body";
}
