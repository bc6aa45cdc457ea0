import { describeJsonType, fail, ok, type Checked, type FieldProblem } from "./problems";

export const ATTRIBUTE_TYPES = ["string", "integer", "float", "date", "boolean"] as const;
export type AttributeType = (typeof ATTRIBUTE_TYPES)[number];
export type AttributeValue = string | number | boolean;

/** The panel's attribute schema, keyed by canonical (upper-case) attribute name. */
export type AttributeSchema = ReadonlyMap<string, AttributeType>;

/** Attributes every new panel starts with (CONTRACT 4). */
export const DEFAULT_ATTRIBUTES: ReadonlyArray<readonly [string, AttributeType]> = [
  ["NAME", "string"],
  ["FIRSTNAME", "string"],
  ["LASTNAME", "string"],
  ["EMAIL", "string"],
  ["MOBILE", "string"],
  ["CITY", "string"],
  ["STATE", "string"],
  ["COUNTRY", "string"],
  ["AGE", "integer"],
];

export const ATTRIBUTE_NAME_PATTERN = /^[A-Z][A-Z0-9_]{0,63}$/;
export const MAX_STRING_VALUE_LENGTH = 2048;

/**
 * Attribute names are matched case-insensitively and stored upper-case, the spelling the
 * spec's samples use (NAME, EMAIL, MOBILE): a client sending `email` means EMAIL.
 */
export function canonicalAttributeName(name: string): string {
  return name.trim().toUpperCase();
}

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Whether the day exists, as a Date reads it. Years 1000 to 9999 are counted out (every
 * activity's cts passes here, and a Date per event was a measurable part of a batch's CPU);
 * others go to Date, which reads years 0 to 99 as 1900 to 1999 and has limits of its own.
 */
export function isRealCalendarDate(year: number, month: number, day: number): boolean {
  if (Number.isInteger(year) && year >= 1000 && year <= 9999 && Number.isInteger(month) && Number.isInteger(day)) {
    if (month < 1 || month > 12 || day < 1) return false;
    const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
    return day <= (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!);
  }
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

function checkDate(text: string): Checked<string> {
  const match = ISO_DATE.exec(text.trim());
  if (!match) return fail("must be a date, YYYY-MM-DD or an ISO 8601 date-time");
  const [, y, m, d, hh, mm, ss] = match;
  if (!isRealCalendarDate(Number(y), Number(m), Number(d))) return fail(`is not a real calendar date: ${text}`);
  if (hh !== undefined && (Number(hh) > 23 || Number(mm) > 59 || Number(ss ?? 0) > 59)) {
    return fail(`is not a real time of day: ${text}`);
  }
  return ok(text.trim());
}

/** Decimal notation, as people and spreadsheets write numbers: `22`, `-3`, `12.50`, `.5`, `1.5E+07`. */
const NUMBER_TEXT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * The one reading of a number written as text (a CSV cell, a JSON string such as `"22"`): the
 * text must be exactly a decimal number, nothing around it; null otherwise (`"22 years"`,
 * `""`, `"0x10"`, `"Infinity"`).
 */
export function parseNumberText(text: string): number | null {
  if (!NUMBER_TEXT.test(text)) return null;
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

/** A number as JSON gives it, or as a JSON string that is exactly a decimal number; else null. */
function numberOf(value: unknown): number | null {
  if (typeof value === "number") return Number.isFinite(value) ? value : null;
  return typeof value === "string" ? parseNumberText(value) : null;
}

function describeGiven(value: unknown): string {
  return typeof value === "string" ? `"${value}"` : describeJsonType(value);
}

function checkInteger(value: number | null, given: unknown): Checked<AttributeValue> {
  if (value === null || !Number.isInteger(value)) return fail(`must be an integer, not ${describeGiven(given)}`);
  if (!Number.isSafeInteger(value)) return fail("is outside the range of integers that can be stored exactly");
  return ok(value);
}

function checkFloat(value: number | null, given: unknown): Checked<AttributeValue> {
  return value === null ? fail(`must be a number, not ${describeGiven(given)}`) : ok(value);
}

/**
 * Checks a value that arrived as JSON. Types must match, with one leniency real clients need:
 * an integer or float may come as a string that is exactly a decimal number (`"22"`, `"-3"`,
 * `"12.50"`); it is stored as the number. `"12.5"` is still not an integer.
 */
export function checkJsonValue(type: AttributeType, value: unknown): Checked<AttributeValue> {
  switch (type) {
    case "string":
      // Clients commonly send numeric strings such as MOBILE as JSON numbers; they are text.
      if (typeof value === "number" && Number.isFinite(value)) return ok(String(value));
      if (typeof value !== "string") return fail(`must be a string, not ${describeJsonType(value)}`);
      if (value.length > MAX_STRING_VALUE_LENGTH) return fail(`must be at most ${MAX_STRING_VALUE_LENGTH} characters`);
      return ok(value);
    case "integer":
      return checkInteger(numberOf(value), value);
    case "float":
      return checkFloat(numberOf(value), value);
    case "boolean":
      if (typeof value !== "boolean") return fail(`must be true or false, not ${describeJsonType(value)}`);
      return ok(value);
    case "date":
      if (typeof value !== "string") return fail(`must be a date string, not ${describeJsonType(value)}`);
      return checkDate(value);
  }
}

/**
 * A compared value in `type`: one value, or an array of them (`in`). A value that does not fit
 * is kept as it came and its problem added under `field` (`field.<i>` in an array).
 */
export function typedValues(type: AttributeType, value: unknown, field: string, problems: FieldProblem[]): unknown {
  const many = Array.isArray(value);
  const out = (many ? (value as unknown[]) : [value]).map((v, i) => {
    const checked = checkJsonValue(type, v);
    if (!checked.ok) problems.push({ field: many ? `${field}.${i}` : field, message: checked.reason });
    return checked.ok ? checked.value : v;
  });
  return many ? out : out[0];
}

/** Checks a value that arrived as text (a CSV cell): the text is read as the attribute's type. */
export function checkTextValue(type: AttributeType, text: string): Checked<AttributeValue> {
  const trimmed = text.trim();
  switch (type) {
    case "string":
      if (text.length > MAX_STRING_VALUE_LENGTH) return fail(`must be at most ${MAX_STRING_VALUE_LENGTH} characters`);
      return ok(text);
    case "integer":
      return checkInteger(parseNumberText(trimmed), text);
    case "float":
      return checkFloat(parseNumberText(trimmed), text);
    case "boolean": {
      const lower = trimmed.toLowerCase();
      if (["true", "1", "yes"].includes(lower)) return ok(true);
      if (["false", "0", "no"].includes(lower)) return ok(false);
      return fail(`must be true or false, not "${text}"`);
    }
    case "date":
      return checkDate(text);
  }
}

/**
 * Phone-number attributes, whose values spreadsheets and pandas turn into floats: the canonical
 * name is MOBILE or PHONE, or holds one of them (MOBILE_NO, ALT_MOBILE, PHONENUMBER,
 * WORK_PHONE). MOBILE is the one the service itself reads as a number (primary key, SMS
 * recipient); the others are named as people name phone columns.
 */
export function isPhoneAttribute(name: string): boolean {
  const canonical = canonicalAttributeName(name);
  return canonical.includes("MOBILE") || canonical.includes("PHONE");
}

/** `9876500001.0` as pandas writes a phone number it read as a float: digits (a leading + kept), then `.0`. */
const PHONE_AS_FLOAT = /^(\+?\d+)\.0$/;

/** A phone number without the `.0` a spreadsheet or pandas added; other text as it is. */
export function withoutFloatTail(phone: string): string {
  // Most numbers have no tail: the regular expression only where one could be (bench:import reads one per row).
  return phone.endsWith(".0") ? (PHONE_AS_FLOAT.exec(phone)?.[1] ?? phone) : phone;
}

/**
 * The one reading of a client's value for a typed field, shared by contact attributes and
 * activity parameters (and the members of array parameters) (CONTRACT 8 and 10):
 * - `""` (or blanks only) for an integer, float, date or boolean means "no value": the result is
 *   null, which a contact add leaves unset, an update clears, and an event treats as absent.
 *   A string field keeps `""` as given.
 * - Numbers may come as text that is exactly a decimal number; an integer accepts integral
 *   decimals (`34.0`, `"34.0"`, `"3.4e1"` are 34; `34.5` is refused).
 * - A phone attribute's text (`phone`: the field isPhoneAttribute) loses the `.0` of pandas:
 *   `"9876500001.0"` is `"9876500001"`. Callers say it once per field, not per value: an
 *   import asks per column, not per cell (bench:import).
 * `source` says how the value came: as JSON (a string, number or boolean) or as a CSV cell's text.
 */
export function readClientValue(type: AttributeType, value: unknown, phone = false, source: "json" | "text" = "json"): Checked<AttributeValue | null> {
  if (type !== "string" && typeof value === "string" && value.trim() === "") return ok(null);
  const checked = source === "text" && typeof value === "string" ? checkTextValue(type, value) : checkJsonValue(type, value);
  if (!phone || !checked.ok || typeof checked.value !== "string") return checked;
  // The pattern only where an exponent could be (bench:import reads a phone per row).
  if ((checked.value.includes("E") || checked.value.includes("e")) && PHONE_IN_EXPONENT.test(checked.value)) return fail(`is a number Excel wrote in scientific notation ("${checked.value}"), which lost its last digits: format the column as text and export the file again`);
  const number = withoutFloatTail(checked.value);
  return number === checked.value ? checked : ok(number);
}

/** `9.1987E+11`: a phone number a spreadsheet shortened to a few significant digits; what was cut cannot be told. */
const PHONE_IN_EXPONENT = /^\s*\+?\d(?:\.\d+)?e\+?\d+\s*$/i;

/** What a call does with attributes the panel's schema does not have (a panel setting). */
export const UNKNOWN_ATTRIBUTE_MODES = ["reject", "ignore", "create"] as const;
export type UnknownAttributeMode = (typeof UNKNOWN_ATTRIBUTE_MODES)[number];

/** Edits (insert, delete, replace, swap two neighbours) from `a` to `b`: EMIAL is one from EMAIL. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const row = rows[i]!;
      row[j] = Math.min(rows[i - 1]![j]! + 1, row[j - 1]! + 1, rows[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(row[j]!, rows[i - 2]![j - 2]! + 1);
    }
  }
  return rows[a.length]![b.length]!;
}

/**
 * The attribute of the schema an unknown name most likely means, if one is close: the same
 * name apart from case and separators (`FIRST_NAME`, `first-name`: FIRSTNAME), a few typing
 * slips (`EMIAL`), or a known name of four letters or more that the unknown one begins or
 * ends with (`CUSTOMERNAME`: NAME, `MOBILE_NO`: MOBILE).
 */
export function nearestAttribute(name: string, schema: AttributeSchema): string | undefined {
  const squash = (text: string) => canonicalAttributeName(text).replace(/[^A-Z0-9]/g, "");
  const wanted = squash(name);
  if (wanted === "") return undefined;
  let best: { name: string; score: number } | undefined;
  for (const candidate of schema.keys()) {
    const known = squash(candidate);
    let score = editDistance(wanted, known);
    if (score > Math.max(1, Math.floor(known.length / 3))) {
      const affix = known.length >= 4 && (wanted.startsWith(known) || wanted.endsWith(known));
      if (!affix) continue;
    }
    if (!best || score < best.score) best = { name: candidate, score };
  }
  return best?.name;
}

function unknownAttribute(rawName: string, schema: AttributeSchema, reason: string): string {
  const nearest = nearestAttribute(rawName, schema);
  return `unknown attribute "${rawName}": ${reason}${nearest ? `; did you mean ${nearest}?` : ""}`;
}

export interface CheckedAttributes {
  /** Accepted values by canonical name; `null` asks for the attribute to be removed. */
  values: Record<string, AttributeValue | null>;
  problems: FieldProblem[];
  /** Unknown names left out (mode `ignore`), as the call spelt them. */
  ignored: string[];
  /** Unknown names to create as string attributes with this write (mode `create`), canonical. */
  created: string[];
}

/**
 * What `""` for a non-text attribute does (CONTRACT 10): a contact add leaves the attribute as
 * it is (`leaves`: unset on a new contact), an update removes it (`clears`).
 */
export type EmptyValueMeaning = "leaves" | "clears";

/**
 * Checks a JSON object of attributes against the panel's schema. Every unknown name and every
 * wrongly typed value is reported, so one failed call tells the client everything to fix. An
 * unknown name is refused naming the nearest known attribute (mode `reject`), left out
 * (`ignore`), or becomes a new string attribute when it is a valid name (`create`).
 */
export function checkAttributes(
  schema: AttributeSchema,
  input: Record<string, unknown>,
  fieldPrefix = "data",
  unknown: UnknownAttributeMode = "reject",
  empty: EmptyValueMeaning = "leaves",
): CheckedAttributes {
  const values: Record<string, AttributeValue | null> = {};
  const problems: FieldProblem[] = [];
  const ignored: string[] = [];
  const created: string[] = [];
  // Names only, and a field's name only when it is refused: this runs on every contact write.
  for (const rawName of Object.keys(input)) {
    const value = input[rawName];
    const name = canonicalAttributeName(rawName);
    let type = schema.get(name);
    if (!type && unknown === "ignore") {
      ignored.push(rawName);
      continue;
    }
    if (!type && unknown === "create" && ATTRIBUTE_NAME_PATTERN.test(name)) {
      if (!created.includes(name)) created.push(name);
      type = "string";
    }
    if (!type) {
      const reason = unknown === "create"
        ? "an attribute name is a letter, then up to 63 letters, digits or _"
        : "it is not in the panel's attribute schema";
      problems.push({ field: `${fieldPrefix}.${rawName}`, message: unknownAttribute(rawName, schema, reason) });
      continue;
    }
    if (name in values) {
      problems.push({ field: `${fieldPrefix}.${rawName}`, message: `attribute ${name} is given more than once` });
      continue;
    }
    if (value === null) {
      values[name] = null;
      continue;
    }
    const checked = readClientValue(type, value, isPhoneAttribute(name));
    if (!checked.ok) problems.push({ field: `${fieldPrefix}.${rawName}`, message: checked.reason });
    else if (checked.value !== null) values[name] = checked.value;
    else if (empty === "clears") values[name] = null;
  }
  const kept = created.length ? created.filter((name) => values[name] !== undefined && values[name] !== null) : created;
  return { values, problems, ignored, created: kept };
}
