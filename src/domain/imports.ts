import { canonicalAttributeName, isPhoneAttribute, readClientValue, type AttributeType, type AttributeValue } from "./attributes";
import type { KeyedSchema } from "./contacts";
import { EMAIL_ATTRIBUTE, secondaryEmailProblem } from "./email";
import { normalisePrimaryKey } from "./primary-key";

/**
 * Rules of a bulk import (CONTRACT 2.3) without I/O: what the header row must hold, and how a
 * row of text cells becomes a contact or a refusal with reasons.
 */

export interface ImportColumn {
  /** Canonical attribute name (upper-case). */
  name: string;
  type: AttributeType;
  /** isPhoneAttribute(name), asked once per column rather than per cell. */
  phone: boolean;
}

export interface ColumnPlan {
  /** The header row as the file spells it (for the error report). */
  header: string[];
  columns: ImportColumn[];
  primaryKey: string;
}

export type HeaderCheck = { ok: true; plan: ColumnPlan } | { ok: false; reason: string };

/**
 * Checks a header row against the panel's schema: every column names a known attribute (case
 * does not matter), none twice, and the primary-key column is there. Everything wrong is named
 * in one reason, so one failed job tells the user all there is to fix.
 */
export function planColumns(schema: KeyedSchema, header: readonly string[]): HeaderCheck {
  const problems: string[] = [];
  const columns: ImportColumn[] = [];
  const unknown: string[] = [];
  const seen = new Set<string>();
  header.forEach((cell, i) => {
    const name = canonicalAttributeName(cell);
    if (name === "") {
      problems.push(`column ${i + 1} has no name`);
      return;
    }
    const type = schema.attributes.get(name);
    if (!type) unknown.push(cell.trim());
    else if (seen.has(name)) problems.push(`column ${name} appears more than once`);
    seen.add(name);
    columns.push({ name, type: type ?? "string", phone: isPhoneAttribute(name) });
  });
  if (unknown.length) {
    problems.unshift(
      `unknown column${unknown.length > 1 ? "s" : ""} ${unknown.map((c) => `"${c}"`).join(", ")}: not in the panel's attribute schema`,
    );
  }
  if (!seen.has(schema.primaryKey)) problems.push(`the primary-key column ${schema.primaryKey} is missing`);
  if (problems.length) return { ok: false, reason: `The header row is not valid: ${problems.join("; ")}` };
  return { ok: true, plan: { header: [...header], columns, primaryKey: schema.primaryKey } };
}

/** Whether two files' header rows name the same columns in the same order. */
export function sameColumns(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((cell, i) => canonicalAttributeName(cell) === canonicalAttributeName(b[i]!));
}

export type PreparedRow =
  | { ok: true; key: string; attrs: Record<string, AttributeValue> }
  | { ok: false; columns: string[]; reasons: string[] };

/**
 * One data row. An empty cell leaves the attribute as it is (CSV cannot tell "no value" from
 * "empty"); the primary key is required and normalised. Every problem of the row is reported.
 */
export function prepareRow(plan: ColumnPlan, fields: readonly string[], malformed = false): PreparedRow {
  const { columns } = plan;
  if (malformed) {
    return { ok: false, columns: [], reasons: ["the quotes of the row are malformed: text after a closing quote, or a quoted field never closed"] };
  }
  if (fields.length !== columns.length) {
    return { ok: false, columns: [], reasons: [`the row has ${fields.length} field${fields.length === 1 ? "" : "s"}; the header has ${columns.length}`] };
  }
  const attrs: Record<string, AttributeValue> = {};
  const refused: { columns: string[]; reasons: string[] } = { columns: [], reasons: [] };
  const refuse = (name: string, reason: string) => {
    refused.columns.push(name);
    refused.reasons.push(`${name} ${reason}`);
  };
  let key: string | undefined;
  for (let i = 0; i < columns.length; i++) {
    const column = columns[i]!;
    const cell = fields[i]!;
    if (column.name === plan.primaryKey) {
      const checked = normalisePrimaryKey(column.name, column.type, cell);
      if (checked.ok) key = checked.value;
      else refuse(column.name, checked.reason);
    } else if (cell.trim() !== "") {
      const checked = readClientValue(column.type, cell, column.phone, "text");
      const problem = checked.ok && column.name === EMAIL_ATTRIBUTE && typeof checked.value === "string" ? secondaryEmailProblem(checked.value) : null;
      if (!checked.ok) refuse(column.name, checked.reason);
      else if (problem) refuse(column.name, problem);
      else if (checked.value !== null) attrs[column.name] = checked.value;
    }
  }
  if (key === undefined || refused.columns.length) return { ok: false, ...refused };
  attrs[plan.primaryKey] = key;
  return { ok: true, key, attrs };
}

/** The error report's columns: where the row is, why it was refused, then the row as it was. */
export function errorReportHeader(plan: ColumnPlan, withFile: boolean): string[] {
  return [...(withFile ? ["file"] : []), "row", "column", "reason", ...plan.header];
}

export function errorReportRow(
  file: string | null,
  row: number,
  columns: readonly string[],
  reasons: readonly string[],
  fields: readonly string[],
): string[] {
  return [...(file === null ? [] : [file]), String(row), columns.join("; "), reasons.join("; "), ...fields];
}
