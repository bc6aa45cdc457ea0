import { ATTRIBUTE_NAME_PATTERN, canonicalAttributeName, isPhoneAttribute, readClientValue, type AttributeSchema, type AttributeType, type AttributeValue } from "./attributes";
import type { KeyedSchema } from "./contacts";
import { EMAIL_ATTRIBUTE, secondaryEmailProblem } from "./email";
import { normalisePrimaryKey } from "./primary-key";
import { NOT_UTF8, NOT_UTF8_REASON, headerFormatProblem } from "./csv";

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
  /** The mapping skips the column: its cells are read past, never stored. */
  skip?: boolean;
}

/**
 * Where one CSV column goes (the panel's import with column mapping): an attribute of the panel
 * by name, a new attribute created before the rows are read, or nowhere (null: skipped).
 */
export type ColumnTarget = string | null | { new: string; type: AttributeType };

/** Header cell (as the file spells it, trimmed) → target; columns it does not name are matched by name as without one. */
export type ColumnMapping = Record<string, ColumnTarget>;

export interface MappingProblem {
  field: string;
  message: string;
}

/** The attributes a mapping creates, by canonical name. */
export function newAttributesOf(mapping: ColumnMapping): Array<[string, AttributeType]> {
  return Object.values(mapping).flatMap((target) => (target !== null && typeof target === "object" ? [[canonicalAttributeName(target.new), target.type] as [string, AttributeType]] : []));
}

/**
 * Checks a mapping against the panel's attributes before a job starts: every named attribute
 * exists, every new one has a valid name and is not an existing attribute of another type, and
 * no two columns go to one attribute. Each problem names its column (`mapping.<header>`).
 */
export function checkMapping(attributes: AttributeSchema, mapping: ColumnMapping): MappingProblem[] {
  const problems: MappingProblem[] = [];
  const taken = new Map<string, string>();
  for (const [header, target] of Object.entries(mapping)) {
    const field = `mapping.${header}`;
    if (target === null) continue;
    const name = canonicalAttributeName(typeof target === "string" ? target : target.new);
    if (typeof target === "string") {
      if (!attributes.has(name)) problems.push({ field, message: `column "${header}": no attribute named ${name} in this panel (map it to a new attribute, or skip it)` });
    } else if (!ATTRIBUTE_NAME_PATTERN.test(name)) {
      problems.push({ field, message: `column "${header}": a new attribute's name must be a letter, then up to 63 letters, digits or underscores` });
    } else if (attributes.has(name) && attributes.get(name) !== target.type) {
      problems.push({ field, message: `column "${header}": attribute ${name} exists already with type ${attributes.get(name)}; map the column to it` });
    }
    const other = taken.get(name);
    if (other !== undefined) problems.push({ field, message: `column "${header}": columns "${other}" and "${header}" both go to ${name}` });
    taken.set(name, header);
  }
  return problems;
}

/** The mapping's entry for a header cell: by its text, else without case (the panel's form keys by the text it read). */
function targetOf(mapping: ColumnMapping, cell: string): ColumnTarget | undefined {
  const text = cell.trim();
  if (Object.hasOwn(mapping, text)) return mapping[text];
  const key = Object.keys(mapping).find((k) => k.toLowerCase() === text.toLowerCase());
  return key === undefined ? undefined : mapping[key];
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
 * does not matter), none twice, and the primary-key column is there. A `mapping` sends a column
 * to another attribute, to a new one (which `schema` must already hold: the engine creates it
 * first) or nowhere; every column it names must be in the file. Everything wrong is named in
 * one reason, so one failed job tells the user all there is to fix.
 */
export function planColumns(schema: KeyedSchema, header: readonly string[], mapping: ColumnMapping | null = null): HeaderCheck {
  const formatProblem = headerFormatProblem(header);
  if (formatProblem) return { ok: false, reason: `The header row is not valid: ${formatProblem}` };
  const problems: string[] = [];
  const columns: ImportColumn[] = [];
  const unknown: string[] = [];
  const seen = new Set<string>();
  if (mapping) {
    const cells = header.map((cell) => cell.trim().toLowerCase());
    const absent = Object.keys(mapping).filter((k) => !cells.includes(k.trim().toLowerCase()));
    if (absent.length) problems.push(`the mapping names ${absent.map((c) => `"${c}"`).join(", ")}, which the header row does not have`);
  }
  header.forEach((cell, i) => {
    const target = mapping ? targetOf(mapping, cell) : undefined;
    if (target === null) {
      columns.push({ name: "", type: "string", phone: false, skip: true });
      return;
    }
    const name = canonicalAttributeName(target === undefined ? cell : typeof target === "string" ? target : target.new);
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
    if (column.skip) continue;
    // The file is read as UTF-8, other bytes as U+FFFD: a cell holding one would be stored damaged.
    if (cell.includes(NOT_UTF8)) refuse(column.name, NOT_UTF8_REASON);
    else if (column.name === plan.primaryKey) {
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
