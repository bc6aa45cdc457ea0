import { readClientValue, typedValues, type AttributeType, type UnknownAttributeMode } from "./attributes";
import { alreadyScalar, checkArrayParam, definedSpelling, MAX_EVENT_PARAMS_CHARS, PREFIX_OF, prefixTypeOf, type ArrayParamType, type ScalarParamType } from "./activity-param-types";
import { MAX_ASSET_ID_LENGTH, MAX_GUID_LENGTH, type NewEvent } from "./events";
import { normalisePrimaryKey } from "./primary-key";
import type { FilterOp } from "./filters";
import { describeJsonType, type FieldProblem } from "./problems";
import { refused, succeeded, type Result } from "../lib/problems";
import { resolveEventTime } from "./time";

/**
 * What a definition says of one parameter: a scalar type, each with its key prefix (spec 2.4),
 * or an array of objects whose members have scalar types (CONTRACT 10, domain/activity-arrays.ts).
 */
export type ActivityParamType = ScalarParamType | ArrayParamType;

export const MAX_ACTIVITY_SOURCE_LENGTH = 32;

/** The sources whose meaning journeys keep (CONTRACT 10); every other text counts as custom. */
const KNOWN_SOURCES: readonly string[] = ["web", "app"];

/**
 * `activity_source` as stored and passed on (CONTRACT 10): `web` and `app` in any case keep
 * their meaning, written in lower case; any other text (`CRM`, `Custom`, `pos`) is kept
 * exactly as sent and counts as custom (no journey rule reads the source today).
 */
export function activitySource(raw: string): string {
  const lower = raw.trim().toLowerCase();
  return KNOWN_SOURCES.includes(lower) ? lower : raw;
}

/** How `activity_source` is described to clients. */
export const ACTIVITY_SOURCE_RULE = `any text of 1 to ${MAX_ACTIVITY_SOURCE_LENGTH} characters: web or app (any case), or the name of another system (e.g. CRM, pos), which counts as custom and is kept exactly as sent`;
export const PARAM_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
export const MAX_PARAMS_PER_ACTIVITY = 50;
export const MAX_ACTIVITY_NAME_LENGTH = 100;
export const MAX_UNIQUEID_LENGTH = 255;

export interface ActivityDefinition {
  id: number;
  name: string;
  params: Record<string, ActivityParamType>;
  createdAt: number;
}

/** Activity names are unique within a panel regardless of case. */
export function activityNameKey(name: string): string {
  return name.trim().toLowerCase();
}

/** One posted activity after its JSON shape was checked (api/activity.ts); values still raw. */
export interface ActivityEventInput {
  /** How the call named the activity: by id (single activity, batch) or by name (upload). */
  activityid?: number;
  activity_name?: string;
  asset_id?: string | number | null;
  cts?: string | number | null;
  timestamp?: string | number | null;
  identity?: string | number | null;
  uniqueid?: string | number | null;
  activity_source?: string | null;
  activity_params?: Record<string, unknown> | unknown[] | null;
  guid?: string | number | null;
}

/** What ingest needs to know of the panel. */
export interface IngestPanel {
  primaryKey: string;
  primaryKeyType: AttributeType;
  timezone: string;
  /** What unknown members of an array parameter's items do (the panel's `unknown_attributes`); reject when absent. */
  unknownAttributes?: UnknownAttributeMode;
}

/** The event to record; refused when the panel defines no such activity (not_found) or the input breaks a rule (invalid, every problem). */
export type PreparedActivity = Result<NewEvent>;

/** Null and empty text count as absent: trackers send `"identity": ""` for visitors not yet known. */
function present<T>(value: T | null | undefined): T | undefined {
  return value === null || (typeof value === "string" && value.trim() === "") ? undefined : value;
}

/** What a key of `activity_params` says against a definition: the parameter it names, with the type of its prefix if any. */
interface ParamKey {
  name: string;
  /** The parameter's type; undefined when the definition has no such parameter. */
  defined: ActivityParamType | undefined;
  given: ScalarParamType | undefined;
}

/**
 * Per definition, the keys already read that name one of its parameters: every event of a batch
 * spells its keys alike, and reading a key (prefix, slice, lookup) was a good part of a batch's
 * parameter checks. At most seven spellings per parameter (none, s^, i^, f^ in either case), so
 * the map stays small whatever callers send; an unknown key is read again each time.
 */
const paramKeysOf = new WeakMap<ActivityDefinition, Map<string, ParamKey>>();

function readParamKey(definition: ActivityDefinition, key: string): ParamKey {
  let known = paramKeysOf.get(definition);
  const cached = known?.get(key);
  if (cached) return cached;
  const given = prefixTypeOf(key);
  const name = given ? key.slice(2) : key;
  const spelled = definedSpelling(definition.params, name);
  const read: ParamKey = { name: spelled ?? name, defined: spelled === undefined ? undefined : definition.params[spelled], given };
  // Only keys spelled as defined are kept, so the map stays bounded whatever other cases callers send.
  if (spelled === name) {
    if (!known) paramKeysOf.set(definition, (known = new Map()));
    known.set(key, read);
  }
  return read;
}

/**
 * Checks `activity_params` against the definition: an object (or an array of one object),
 * each key naming a defined parameter, each value of its type. A key may carry the type
 * prefix of spec 2.4 (`s^name`, `i^name`, `f^name`), which must then agree with the
 * definition, or none (`name`: Activity API v2 and many clients), the definition giving the
 * type. An array parameter takes no prefix; its items are checked by checkArrayParam, and an
 * event holding one is held to MAX_EVENT_PARAMS_CHARS. Every offending key is reported.
 * `fromCells`: the values are CSV cells, an array parameter's cell holding the array's JSON.
 */
export function checkActivityParams(
  definition: ActivityDefinition,
  raw: Record<string, unknown> | unknown[] | null | undefined,
  problems: FieldProblem[],
  unknownMembers: UnknownAttributeMode = "reject",
  fromCells = false,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  let object: unknown = raw ?? {};
  if (Array.isArray(object)) {
    if (object.length > 1) {
      problems.push({ field: "activity_params", message: `must be an object or an array of one object, not an array of ${object.length}` });
      return values;
    }
    object = object[0] ?? {};
  }
  if (typeof object !== "object" || object === null || Array.isArray(object)) {
    problems.push({ field: "activity_params", message: `must be an object, not ${describeJsonType(object)}` });
    return values;
  }
  // Names seen so far: a few, so a scan costs less than a Set per event.
  const seen: string[] = [];
  let hasArray = false;
  for (const key in object) {
    const value = (object as Record<string, unknown>)[key];
    const { name, defined, given } = readParamKey(definition, key);
    if (!defined) {
      const known = Object.keys(definition.params);
      problems.push({
        field: `activity_params.${key}`,
        message: `unknown parameter "${name}": activity "${definition.name}" defines ${known.length ? known.join(", ") : "no parameters"}`,
      });
      continue;
    }
    if (given !== undefined && given !== defined) {
      const message =
        typeof defined === "string"
          ? `parameter ${name} is ${defined === "integer" ? "an" : "a"} ${defined}: use the prefix ${PREFIX_OF[defined]}`
          : `parameter ${name} is an array: send it without a type prefix`;
      problems.push({ field: `activity_params.${key}`, message });
      continue;
    }
    if (seen.includes(name)) {
      problems.push({ field: `activity_params.${key}`, message: `parameter ${name} is given more than once` });
      continue;
    }
    seen.push(name);
    // JSON `null` is no value (what Jackson, Json.NET, Python's None and PHP's null send for a
    // field not set): the parameter is absent, as `""` is for a number (CONTRACT 10).
    if (value === null) continue;
    if (typeof defined !== "string") {
      const items = checkArrayParam(defined, value, `activity_params.${key}`, unknownMembers, problems, fromCells);
      if (items !== undefined) values[name] = items;
      hasArray = true;
      continue;
    }
    if (alreadyScalar(defined, value)) {
      values[name] = value;
      continue;
    }
    // `""` for a number parameter is absent (CONTRACT 10): the one reading of client values.
    const checked = readClientValue(defined, value);
    if (!checked.ok) problems.push({ field: `activity_params.${key}`, message: checked.reason });
    else if (checked.value !== null) values[name] = checked.value;
  }
  // Scalar parameters alone stay below the bound (at most 50 of 2,048 characters): only arrays can pass it.
  if (hasArray && JSON.stringify(values).length > MAX_EVENT_PARAMS_CHARS) {
    problems.push({ field: "activity_params", message: `must be at most ${MAX_EVENT_PARAMS_CHARS} characters of JSON per event` });
  }
  return values;
}

/** `cts` (YYMMDDhhmmss) when given, else `timestamp` (ISO 8601 or epoch seconds/ms), else now. */
function occurredAt(input: ActivityEventInput, timezone: string, now: number, problems: FieldProblem[]): number {
  const byCts = present(input.cts) !== undefined;
  const resolved = resolveEventTime(byCts ? input.cts : input.timestamp, byCts ? ["cts"] : ["iso", "epoch"], timezone, now);
  if (resolved.ok) return resolved.value;
  problems.push({ field: byCts ? "cts" : "timestamp", message: resolved.reason });
  return now;
}

/** The problem of an activity the panel does not define, named as the call named it. */
function undefinedActivity(input: ActivityEventInput): FieldProblem {
  return input.activity_name !== undefined
    ? { field: "activity_name", message: `no activity named "${input.activity_name}" is defined in this panel` }
    : { field: "activityid", message: `no activity with id ${input.activityid} is defined in this panel` };
}

/**
 * Whose an input is: the contact's primary-key value (`identity`, normalised), an anonymous
 * visitor id (`uniqueid`), or both; at least one is required. Problems are added to `problems`.
 */
export function ownerOf(
  input: { identity?: string | number | null; uniqueid?: string | number | null },
  panel: Pick<IngestPanel, "primaryKey" | "primaryKeyType">,
  problems: FieldProblem[],
): { identity?: string; uniqueid?: string } {
  const owner: { identity?: string; uniqueid?: string } = {};
  const identity = present(input.identity);
  if (identity !== undefined) {
    const key = normalisePrimaryKey(panel.primaryKey, panel.primaryKeyType, identity);
    if (key.ok) owner.identity = key.value;
    else problems.push({ field: "identity", message: key.reason });
  }
  const uniqueid = present(input.uniqueid);
  if (uniqueid !== undefined) {
    const text = String(uniqueid).trim();
    if (text.length > MAX_UNIQUEID_LENGTH) problems.push({ field: "uniqueid", message: `must be at most ${MAX_UNIQUEID_LENGTH} characters` });
    else owner.uniqueid = text;
  }
  if (identity === undefined && uniqueid === undefined) {
    problems.push({ field: "identity", message: `either identity (the contact's ${panel.primaryKey}) or uniqueid is required` });
  }
  return owner;
}

/**
 * Turns one posted activity (CONTRACT 3 and 8) into an event to record, or says everything
 * wrong with it. `definition` is the activity the input names (by `activityid` or
 * `activity_name`), undefined when the panel has none. `fromCells`: the parameters are CSV
 * cells (the CSV batch), an array parameter's cell holding the array's JSON.
 */
export function prepareActivityEvent(
  input: ActivityEventInput,
  definition: ActivityDefinition | undefined,
  panel: IngestPanel,
  now: number,
  fromCells = false,
): PreparedActivity {
  if (!definition) return refused("not_found", [undefinedActivity(input)]);
  const problems: FieldProblem[] = [];
  const event: NewEvent = { channel: "custom_activity", name: definition.name, activityId: definition.id, occurredAt: now };

  const owner = ownerOf(input, panel, problems);
  if (owner.identity !== undefined) event.identity = owner.identity;
  if (owner.uniqueid !== undefined) event.uniqueid = owner.uniqueid;

  const source = present(input.activity_source);
  if (source !== undefined) {
    if (source.length > MAX_ACTIVITY_SOURCE_LENGTH) problems.push({ field: "activity_source", message: `must be at most ${MAX_ACTIVITY_SOURCE_LENGTH} characters` });
    else event.source = activitySource(source);
  }

  const assetId = present(input.asset_id);
  if (assetId !== undefined) {
    const text = String(assetId).trim();
    if (text.length > MAX_ASSET_ID_LENGTH) problems.push({ field: "asset_id", message: `must be at most ${MAX_ASSET_ID_LENGTH} characters` });
    else event.assetId = text;
  }

  // A number (an order id a client reuses as the event's guid) is its decimal text, as asset_id's.
  const guid = present(input.guid);
  if (guid !== undefined) {
    const text = String(guid).trim();
    if (text.length > MAX_GUID_LENGTH) problems.push({ field: "guid", message: `must be at most ${MAX_GUID_LENGTH} characters` });
    else event.guid = text;
  }

  event.occurredAt = occurredAt(input, panel.timezone, now, problems);
  event.params = checkActivityParams(definition, input.activity_params, problems, panel.unknownAttributes, fromCells);
  return problems.length ? refused("invalid", problems) : succeeded(event);
}

/**
 * A filter clause on one of an activity's parameters (a journey trigger's `params`, a segment's
 * `where`): the parameter as the definition names it (matched regardless of case) and the
 * value in the parameter's type; null when the clause does not fit, its problems added under
 * the clause's fields. `items.prid` names a member of an array parameter's items: the clause
 * holds for an event when it holds for any of its items (paramsMatch, segment-sql).
 */
export function checkParamClause(
  activity: ActivityDefinition,
  clause: { name: string; op: FilterOp; value?: unknown },
  fields: { name: string; op: string; value: string },
  problems: FieldProblem[],
): { name: string; value: unknown } | null {
  const dot = clause.name.indexOf(".");
  const wanted = dot === -1 ? clause.name : clause.name.slice(0, dot);
  const name = definedSpelling(activity.params, wanted);
  if (name === undefined) {
    const known = Object.keys(activity.params);
    problems.push({ field: fields.name, message: `${activity.name} has no parameter "${wanted}" (${known.length ? known.join(", ") : "it has none"})` });
    return null;
  }
  const defined = activity.params[name]!;
  let type: ScalarParamType;
  let named = name;
  if (typeof defined === "string") {
    if (dot !== -1) {
      problems.push({ field: fields.name, message: `${name} is ${defined === "integer" ? "an" : "a"} ${defined}, not an array: it has no members` });
      return null;
    }
    type = defined;
  } else {
    const member = dot === -1 ? undefined : definedSpelling(defined.of, clause.name.slice(dot + 1));
    if (member === undefined) {
      problems.push({ field: fields.name, message: `${name} is an array: name one of its members as ${name}.MEMBER (${Object.keys(defined.of).join(", ")})` });
      return null;
    }
    type = defined.of[member]!;
    named = `${name}.${member}`;
  }
  if (clause.value === undefined) return { name: named, value: undefined };
  if ((clause.op === "contains" || clause.op === "starts_with") && type !== "string") {
    problems.push({ field: fields.op, message: `${clause.op} is for string parameters; ${named} is ${type}` });
    return null;
  }
  return { name: named, value: typedValues(type, clause.value, fields.value, problems) };
}
