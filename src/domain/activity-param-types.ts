import { checkJsonValue, MAX_STRING_VALUE_LENGTH, readClientValue, type UnknownAttributeMode } from "./attributes";
import { describeJsonType, type FieldProblem } from "./problems";

/**
 * The types an activity parameter may have (spec 2.4, CONTRACT 10): a scalar type, which a key
 * may announce with its prefix (`s^`, `i^`, `f^`), or an array of objects whose members have
 * scalar types, defined as `{"type":"array","of":{"prid":"integer","name":"string"}}`
 * (a product list: `"items":[{"prid":12,"name":"Kettle"},…]`).
 */
export const SCALAR_PARAM_TYPES = ["string", "integer", "float"] as const;
export type ScalarParamType = (typeof SCALAR_PARAM_TYPES)[number];

export interface ArrayParamType {
  type: "array";
  /** Each member of an item by name, with its type. */
  of: Record<string, ScalarParamType>;
}

/** Items one array parameter may hold. */
export const MAX_ARRAY_ITEMS = 50;
/** Members an array parameter's items may define. */
export const MAX_ARRAY_MEMBERS = 20;
/**
 * The JSON of one event's parameters, in characters, when it holds an array (scalar parameters
 * alone stay below it: 50 of at most 2,048 characters). Keeps a 1,000-event batch's recorded
 * JSON within what a few D1 values hold.
 */
export const MAX_EVENT_PARAMS_CHARS = 64 * 1024;

export const PREFIX_OF: Record<ScalarParamType, string> = { string: "s^", integer: "i^", float: "f^" };
const TYPE_OF_PREFIX: Partial<Record<string, ScalarParamType>> = { s: "string", i: "integer", f: "float" };
const CARET = 94;

/** The type a key's prefix announces (`i^prid`: integer), or undefined when it carries none. */
export function prefixTypeOf(key: string): ScalarParamType | undefined {
  return key.length > 2 && key.charCodeAt(1) === CARET ? TYPE_OF_PREFIX[key[0]!.toLowerCase()] : undefined;
}

/** Whether readClientValue would keep `value` as it is (checked without a result object). */
export function alreadyScalar(type: ScalarParamType, value: unknown): boolean {
  if (type === "string") return typeof value === "string" && value.length <= MAX_STRING_VALUE_LENGTH;
  if (type === "integer") return Number.isSafeInteger(value);
  return typeof value === "number" && Number.isFinite(value);
}

/**
 * The name a definition spells `name` with (its parameters, or an array type's members): `name`
 * itself when defined, else the one defined name equal to it in another case (`Price` for
 * `price`), as attribute names match; undefined when none is, or when two defined names differ
 * only in case and neither is `name` exactly.
 */
export function definedSpelling(defined: Readonly<Record<string, unknown>>, name: string): string | undefined {
  if (Object.hasOwn(defined, name)) return name;
  const lower = name.toLowerCase();
  const matches = Object.keys(defined).filter((known) => known.toLowerCase() === lower);
  return matches.length === 1 ? matches[0] : undefined;
}

/**
 * The items a CSV cell of an array parameter holds (CONTRACT 10 is silent on CSV; our rule): the
 * array's JSON as the cell's text, `[{"prid":12,"name":"Kettle"}]` (a CSV writer quotes it and
 * doubles its quotes). Anything else is left to checkArrayParam, which names its type; text that
 * is not JSON is reported here, with a hint for the Python list a pandas column holds when it was
 * not json.dumps'ed.
 */
function itemsOfCell(text: string, field: string, problems: FieldProblem[]): unknown {
  // Longer text could only be refused once parsed (MAX_EVENT_PARAMS_CHARS): refused unread.
  if (text.length > MAX_EVENT_PARAMS_CHARS) {
    problems.push({ field, message: `must be at most ${MAX_EVENT_PARAMS_CHARS} characters of JSON` });
    return undefined;
  }
  try {
    return JSON.parse(text);
  } catch {
    const python = /^\s*\[\s*\{\s*'/.test(text) ? " (single quotes are Python's repr of a list, not JSON: write the column with json.dumps)" : "";
    problems.push({ field, message: `must be the array's JSON, e.g. [{"prid":12}], not text that is not JSON${python}` });
    return undefined;
  }
}

/**
 * Checks the value of an array parameter: a JSON array of at most MAX_ARRAY_ITEMS objects,
 * each member (its key unprefixed, or prefixed as a parameter's, the prefix then agreeing)
 * typed as scalar parameters are. A member the type does not define follows the panel's
 * `unknown_attributes`: refused (reject), dropped (ignore) or kept as text (create; the
 * definition is not changed, so filters cannot name it until it is defined). Returns the
 * checked items, or undefined with the problems added under `field`. `fromCells`: the value is
 * a CSV cell, text holding the array's JSON (itemsOfCell).
 */
export function checkArrayParam(
  type: ArrayParamType,
  given: unknown,
  field: string,
  unknownMembers: UnknownAttributeMode,
  problems: FieldProblem[],
  fromCells = false,
): Array<Record<string, unknown>> | undefined {
  let value = given;
  if (fromCells && typeof given === "string") {
    const before = problems.length;
    value = itemsOfCell(given, field, problems);
    if (problems.length !== before) return undefined;
  }
  if (!Array.isArray(value)) {
    problems.push({ field, message: `must be an array of objects (members ${Object.keys(type.of).join(", ")}), not ${describeJsonType(value)}` });
    return undefined;
  }
  if (value.length > MAX_ARRAY_ITEMS) {
    problems.push({ field, message: `must hold at most ${MAX_ARRAY_ITEMS} items, not ${value.length}` });
    return undefined;
  }
  const before = problems.length;
  const items: Array<Record<string, unknown>> = [];
  value.forEach((item, index) => {
    const at = `${field}.${index}`;
    if (typeof item !== "object" || item === null || Array.isArray(item)) {
      problems.push({ field: at, message: `must be an object, not ${describeJsonType(item)}` });
      return;
    }
    const checked: Record<string, unknown> = {};
    for (const [key, member] of Object.entries(item as Record<string, unknown>)) {
      const given = prefixTypeOf(key);
      const spelled = given ? key.slice(2) : key;
      const definedName = definedSpelling(type.of, spelled);
      const name = definedName ?? spelled;
      const defined = definedName === undefined ? undefined : type.of[definedName];
      if (defined === undefined) {
        if (unknownMembers === "ignore" || (unknownMembers === "create" && member === null)) continue;
        const text = unknownMembers === "create" ? checkJsonValue("string", member) : undefined;
        if (text?.ok) checked[name] = text.value;
        else problems.push({ field: `${at}.${key}`, message: text ? text.reason : `unknown member "${name}": items define ${Object.keys(type.of).join(", ")}` });
        continue;
      }
      if (given !== undefined && given !== defined) {
        problems.push({ field: `${at}.${key}`, message: `member ${name} is ${defined === "integer" ? "an" : "a"} ${defined}: use the prefix ${PREFIX_OF[defined]}` });
        continue;
      }
      if (Object.hasOwn(checked, name)) {
        problems.push({ field: `${at}.${key}`, message: `member ${name} is given more than once` });
        continue;
      }
      // `null` is no value, as for a parameter (checkActivityParams): the member is absent.
      if (member === null) continue;
      if (alreadyScalar(defined, member)) {
        checked[name] = member;
        continue;
      }
      // The one reading of client values: `""` for a number member is absent, `34.0` is 34.
      const typed = readClientValue(defined, member);
      if (!typed.ok) problems.push({ field: `${at}.${key}`, message: typed.reason });
      else if (typed.value !== null) checked[name] = typed.value;
    }
    items.push(checked);
  });
  return problems.length === before ? items : undefined;
}
