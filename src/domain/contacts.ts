import { parseCallerJson } from "../lib/json";
import { canonicalAttributeName, checkAttributes, type AttributeSchema, type AttributeValue, type EmptyValueMeaning, type UnknownAttributeMode } from "./attributes";
import { EMAIL_ATTRIBUTE, secondaryEmailProblem } from "./email";
import { normalisePrimaryKey } from "./primary-key";
import type { FieldProblem } from "./problems";

export interface KeyedSchema {
  /** Canonical name of the panel's primary-key attribute, e.g. EMAIL. */
  primaryKey: string;
  attributes: AttributeSchema;
}

export type PreparedContact =
  | {
      ok: true;
      key: string;
      values: Record<string, AttributeValue | null>;
      /** Unknown attributes left out, as sent (panel setting `ignore`). */
      ignored: string[];
      /** Attributes to create as strings with the write (panel setting `create`). */
      created: string[];
    }
  | { ok: false; problems: FieldProblem[] };

/**
 * Validates a contact object for add/update: every attribute against the schema (unknown ones
 * as the panel's `unknown_attributes` setting says) and the primary key present and
 * normalised. The normalised key replaces the given spelling. `""` for a non-text attribute
 * is left out of an add and clears the attribute on an update (`empty`).
 */
export function prepareContact(
  schema: KeyedSchema,
  input: Record<string, unknown>,
  unknown: UnknownAttributeMode = "reject",
  fieldPrefix = "data",
  empty: EmptyValueMeaning = "leaves",
): PreparedContact {
  const { values, problems, ignored, created } = checkAttributes(schema.attributes, input, fieldPrefix, unknown, empty);
  const email = values[EMAIL_ATTRIBUTE];
  const emailProblem = schema.primaryKey !== EMAIL_ATTRIBUTE && typeof email === "string" ? secondaryEmailProblem(email) : null;
  if (emailProblem) {
    const rawName = Object.keys(input).find((name) => canonicalAttributeName(name) === EMAIL_ATTRIBUTE)!;
    problems.push({ field: `${fieldPrefix}.${rawName}`, message: emailProblem });
  }
  const keyField = Object.keys(input).find((name) => canonicalAttributeName(name) === schema.primaryKey);
  if (keyField === undefined) {
    problems.push({ field: `${fieldPrefix}.${schema.primaryKey}`, message: "is required: it is the panel's primary key" });
  } else {
    const key = normalisePrimaryKey(schema.primaryKey, schema.attributes.get(schema.primaryKey) ?? "string", input[keyField]);
    if (!key.ok) problems.push({ field: `${fieldPrefix}.${keyField}`, message: key.reason });
    else if (problems.length === 0) {
      // `values` is checkAttributes' own object, made for this call: the key is set in it, not in a copy.
      values[schema.primaryKey] = key.value;
      return { ok: true, key: key.value, values, ignored, created };
    }
  }
  return { ok: false, problems };
}

/**
 * Reads the contact a call names: `data` is the primary-key value itself, or a JSON object
 * holding it (both forms are used by real clients).
 */
export function contactKeyFrom(schema: KeyedSchema, data: unknown): { ok: true; key: string } | { ok: false; message: string } {
  let raw: unknown = data;
  if (typeof data === "string" && /^\s*\{/.test(data)) {
    const json = parseCallerJson(data);
    if (!json.ok) return { ok: false, message: json.reason === "must be valid JSON" ? "looks like JSON but could not be parsed" : json.reason };
    raw = json.value;
  }
  if (typeof raw === "object" && raw !== null && !Array.isArray(raw)) {
    const entry = Object.entries(raw).find(([name]) => canonicalAttributeName(name) === schema.primaryKey);
    if (!entry) return { ok: false, message: `must hold the primary key ${schema.primaryKey}` };
    raw = entry[1];
  }
  const key = normalisePrimaryKey(schema.primaryKey, schema.attributes.get(schema.primaryKey) ?? "string", raw);
  return key.ok ? { ok: true, key: key.value } : { ok: false, message: key.reason };
}
