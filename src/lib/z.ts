import { z } from "zod";

/** How a JSON value is named in a message: "a string", "an array"… */
function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (value === undefined) return "missing";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "number") return Number.isInteger(value) ? "an integer" : "a number";
  const type = typeof value;
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

export const EXPECTED: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "an integer",
  boolean: "a boolean",
  object: "an object",
  array: "an array",
  bigint: "an integer",
};

/**
 * Messages in the API's own words ("must be at most 200 characters"), for every schema that
 * does not give its own: each says what the field must be, so a caller can fix it.
 */
function houseMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case "invalid_type": {
      if (issue.input === undefined) return "is required";
      return `must be ${EXPECTED[issue.expected] ?? issue.expected}, not ${describeValue(issue.input)}`;
    }
    case "too_big": {
      const bound = `${issue.inclusive === false ? "less than" : "at most"} ${issue.maximum}`;
      if (issue.origin === "string") return `must be ${bound} characters`;
      if (issue.origin === "array" || issue.origin === "set") return `must hold ${bound} items`;
      return `must be ${bound}`;
    }
    case "too_small": {
      if (issue.origin === "string") return Number(issue.minimum) === 1 ? "must not be empty" : `must be at least ${issue.minimum} characters`;
      if (issue.origin === "array" || issue.origin === "set") return `must hold at least ${issue.minimum} item${Number(issue.minimum) === 1 ? "" : "s"}`;
      return `must be ${issue.inclusive === false ? "more than" : "at least"} ${issue.minimum}`;
    }
    case "invalid_value":
      return issue.values.length === 1 ? `must be ${JSON.stringify(issue.values[0])}` : `must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "invalid_format":
      return issue.format === "regex" ? "is not in the expected form" : `must be a valid ${issue.format}`;
    case "not_multiple_of":
      return `must be a multiple of ${issue.divisor}`;
    case "unrecognized_keys":
      return `${issue.keys.join(", ")}: not members of this object`;
    case "invalid_union":
      return "does not match any of the accepted forms";
    case "invalid_key":
      // A record's key is named by the issue's path; the key schema's own issue says why.
      return issue.issues[0]?.message;
    default:
      return undefined;
  }
}

// Workers forbid runtime code generation, which zod's JIT object parser uses.
// Every module imports zod from here so the setting is in force before any schema runs.
z.config({ jitless: true, customError: houseMessage });

/** A part of an answer whose shape another schema or type owns: typed for the compiler, described for readers. */
export function ownedElsewhere<T>(description: string) {
  return z.custom<T>((value) => value !== undefined).meta({ description });
}

export { z };
