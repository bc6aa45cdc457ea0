import { z } from "../lib/z";
import { canonicalAttributeName, type AttributeValue } from "./attributes";

/**
 * Demographic filters of journeys (CONTRACT 5: the journey `filter`, segment triggers and
 * condition steps): every clause must hold (AND). Pure; evaluated on a contact's attributes.
 */
export const FILTER_OPS = ["eq", "ne", "gt", "gte", "lt", "lte", "contains", "starts_with", "in", "exists", "not_exists"] as const;
export type FilterOp = (typeof FILTER_OPS)[number];

/** An attribute named in a journey, in its canonical (upper-case) form. */
export const attributeName = z
  .string()
  .trim()
  .min(1)
  .max(64)
  .transform((name) => canonicalAttributeName(name));

/** A value a clause or a webhook parameter may hold. */
export const scalar = z.union([z.string().max(2048), z.number(), z.boolean()]);

/** A clause on `attribute` (a contact attribute, or an activity parameter for activity trigger `params`). */
function clauseOf(name: z.ZodType<string, string>) {
  return z
    .object({
      attribute: name,
      op: z.enum(FILTER_OPS, { error: `must be one of ${FILTER_OPS.join(", ")}` }),
      /** Absent for exists/not_exists; an array for `in`. */
      value: z.union([scalar, z.array(scalar).max(100)]).optional(),
    })
    .strict()
    .superRefine((c, ctx) => {
      const needsValue = c.op !== "exists" && c.op !== "not_exists";
      if (needsValue && c.value === undefined) ctx.addIssue({ code: "custom", path: ["value"], message: `is required for ${c.op}` });
      if (!needsValue && c.value !== undefined) ctx.addIssue({ code: "custom", path: ["value"], message: `must be absent for ${c.op}` });
      if (c.op === "in" && !Array.isArray(c.value)) ctx.addIssue({ code: "custom", path: ["value"], message: "must be an array for in" });
      if (c.op !== "in" && Array.isArray(c.value)) ctx.addIssue({ code: "custom", path: ["value"], message: "may be an array only for in" });
    });
}

const clause = clauseOf(attributeName);

/** A filter: up to 50 clauses, all of which must hold. */
export const filterSchema = z.array(clause).max(50);

/**
 * A filter on an activity's parameters (activity trigger `params`): the same clauses, naming a
 * parameter as written (parameter names keep their case; the journey check matches them to
 * the definition's), or `ARRAY.MEMBER`: any item of an array parameter whose member passes.
 */
export const paramFilterSchema = z.array(clauseOf(z.string({ error: "must be a parameter name" }).trim().min(1, { error: "must be a parameter name" }).max(129))).max(50);

export type FilterClause = z.output<typeof clause>;
export type Filter = readonly FilterClause[];

/** Strings compare case-insensitively and trimmed ("pune" matches "Pune"); numbers as numbers. */
function normal(value: AttributeValue): string | number | boolean {
  if (typeof value === "string") {
    const text = value.trim();
    const number = Number(text);
    return text !== "" && Number.isFinite(number) && /^-?\d+(\.\d+)?$/.test(text) ? number : text.toLowerCase();
  }
  return value;
}

function compare(a: AttributeValue, b: AttributeValue): number | null {
  const x = normal(a);
  const y = normal(b);
  if (typeof x !== typeof y) return null;
  if (x === y) return 0;
  return x < y ? -1 : 1;
}

export function clauseHolds(clause: FilterClause, attributes: Readonly<Record<string, AttributeValue>>): boolean {
  return valueHolds(clause, attributes[clause.attribute]);
}

/** Whether one value (undefined when absent) passes the clause. */
function valueHolds(clause: FilterClause, actual: AttributeValue | undefined): boolean {
  const present = actual !== undefined && actual !== null && actual !== "";
  if (clause.op === "exists") return present;
  if (clause.op === "not_exists") return !present;
  if (!present) return clause.op === "ne";
  const expected = clause.value;
  if (clause.op === "in") return Array.isArray(expected) && expected.some((v) => compare(actual, v) === 0);
  if (expected === undefined || Array.isArray(expected)) return false;
  if (clause.op === "contains") return String(normal(actual)).includes(String(normal(expected)));
  if (clause.op === "starts_with") return String(normal(actual)).startsWith(String(normal(expected)));
  const order = compare(actual, expected);
  switch (clause.op) {
    case "eq":
      return order === 0;
    case "ne":
      return order !== 0;
    case "gt":
      return order !== null && order > 0;
    case "gte":
      return order !== null && order >= 0;
    case "lt":
      return order !== null && order < 0;
    case "lte":
      return order !== null && order <= 0;
  }
}

export function filterMatches(filter: Filter | undefined, attributes: Readonly<Record<string, AttributeValue>>): boolean {
  return (filter ?? []).every((clause) => clauseHolds(clause, attributes));
}

/** A scalar the filters compare, or undefined (arrays and objects count as absent). */
function scalarOf(value: unknown): AttributeValue | undefined {
  return typeof value === "string" || typeof value === "number" || typeof value === "boolean" ? value : undefined;
}

/**
 * Whether an event's parameters (by bare name) pass a parameter filter; values other than text,
 * numbers and booleans count as absent. A clause on `ARRAY.MEMBER` (names checked against the
 * definition, so a dot means an array parameter) holds when it holds for any item of the array.
 */
export function paramsMatch(filter: Filter | undefined, params: Readonly<Record<string, unknown>> | undefined): boolean {
  if (!filter?.length) return true;
  const values = params ?? {};
  return filter.every((clause) => {
    const dot = clause.attribute.indexOf(".");
    if (dot === -1) return valueHolds(clause, scalarOf(values[clause.attribute]));
    const items = values[clause.attribute.slice(0, dot)];
    const member = clause.attribute.slice(dot + 1);
    return Array.isArray(items) && items.some((item) => typeof item === "object" && item !== null && valueHolds(clause, scalarOf((item as Record<string, unknown>)[member])));
  });
}
