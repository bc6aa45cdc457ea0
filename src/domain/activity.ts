import { MAX_STRING_VALUE_LENGTH, readClientValue, typedValues, type AttributeType } from "./attributes";
import { MAX_ASSET_ID_LENGTH, MAX_GUID_LENGTH, type NewEvent } from "./events";
import { normalisePrimaryKey } from "./primary-key";
import type { FilterOp } from "./filters";
import { describeJsonType, type FieldProblem } from "./problems";
import { resolveEventTime } from "./time";

/** Types an activity parameter may have, each with its key prefix (spec 2.4). */
export const ACTIVITY_PARAM_TYPES = ["string", "integer", "float"] as const;
export type ActivityParamType = (typeof ACTIVITY_PARAM_TYPES)[number];

const PREFIX_OF: Record<ActivityParamType, string> = { string: "s^", integer: "i^", float: "f^" };
const TYPE_OF_PREFIX: Partial<Record<string, ActivityParamType>> = { s: "string", i: "integer", f: "float" };
const CARET = 94;

export const ACTIVITY_SOURCES = ["web", "app", "custom"] as const;
export type ActivitySource = (typeof ACTIVITY_SOURCES)[number];

/** Source values clients send for activities outside web and app (a store, a call centre). */
const SOURCE_ALIASES: Record<string, ActivitySource> = { cus: "custom", offline: "custom", store: "custom", pos: "custom" };

/** `activity_source` read case-insensitively, aliases included; null for anything else. */
export function activitySource(raw: string): ActivitySource | null {
  const lower = raw.trim().toLowerCase();
  if ((ACTIVITY_SOURCES as readonly string[]).includes(lower)) return lower as ActivitySource;
  return Object.hasOwn(SOURCE_ALIASES, lower) ? SOURCE_ALIASES[lower]! : null;
}

/** How `activity_source` is described to clients. */
export const ACTIVITY_SOURCE_RULE = `one of ${ACTIVITY_SOURCES.join(", ")} (any case; ${Object.keys(SOURCE_ALIASES).join(", ")} mean custom)`;
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
  guid?: string | null;
}

/** What ingest needs to know of the panel. */
export interface IngestPanel {
  primaryKey: string;
  primaryKeyType: AttributeType;
  timezone: string;
}

export type PreparedActivity =
  | { ok: true; event: NewEvent }
  | { ok: false; status: 400 | 404; problems: FieldProblem[] };

/** Null and empty text count as absent: trackers send `"identity": ""` for visitors not yet known. */
function present<T>(value: T | null | undefined): T | undefined {
  return value === null || (typeof value === "string" && value.trim() === "") ? undefined : value;
}

/** What a key of `activity_params` says against a definition: the parameter it names, with the type of its prefix if any. */
interface ParamKey {
  name: string;
  /** The parameter's type; undefined when the definition has no such parameter. */
  defined: ActivityParamType | undefined;
  given: ActivityParamType | undefined;
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
  const given = key.length > 2 && key.charCodeAt(1) === CARET ? TYPE_OF_PREFIX[key[0]!.toLowerCase()] : undefined;
  const name = given ? key.slice(2) : key;
  const read: ParamKey = { name, defined: Object.hasOwn(definition.params, name) ? definition.params[name] : undefined, given };
  if (read.defined) {
    if (!known) paramKeysOf.set(definition, (known = new Map()));
    known.set(key, read);
  }
  return read;
}

/** Whether readClientValue would keep `value` as it is (the common case, checked without a result object). */
function alreadyTyped(type: ActivityParamType, value: unknown): boolean {
  if (type === "string") return typeof value === "string" && value.length <= MAX_STRING_VALUE_LENGTH;
  if (type === "integer") return Number.isSafeInteger(value);
  return typeof value === "number" && Number.isFinite(value);
}

/**
 * Checks `activity_params` against the definition: an object (or an array of one object),
 * each key naming a defined parameter, each value of its type. A key may carry the type
 * prefix of spec 2.4 (`s^name`, `i^name`, `f^name`), which must then agree with the
 * definition, or none (`name`: Activity API v2 and many clients), the definition giving the
 * type. Every offending key is reported.
 */
export function checkActivityParams(
  definition: ActivityDefinition,
  raw: Record<string, unknown> | unknown[] | null | undefined,
  problems: FieldProblem[],
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
      problems.push({ field: `activity_params.${key}`, message: `parameter ${name} is ${defined === "integer" ? "an" : "a"} ${defined}: use the prefix ${PREFIX_OF[defined]}` });
      continue;
    }
    if (seen.includes(name)) {
      problems.push({ field: `activity_params.${key}`, message: `parameter ${name} is given more than once` });
      continue;
    }
    seen.push(name);
    if (alreadyTyped(defined, value)) {
      values[name] = value;
      continue;
    }
    // `""` for a number parameter is absent (CONTRACT 10): the one reading of client values.
    const checked = readClientValue(defined, value);
    if (!checked.ok) problems.push({ field: `activity_params.${key}`, message: checked.reason });
    else if (checked.value !== null) values[name] = checked.value;
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
 * `activity_name`), undefined when the panel has none.
 */
export function prepareActivityEvent(
  input: ActivityEventInput,
  definition: ActivityDefinition | undefined,
  panel: IngestPanel,
  now: number,
): PreparedActivity {
  if (!definition) return { ok: false, status: 404, problems: [undefinedActivity(input)] };
  const problems: FieldProblem[] = [];
  const event: NewEvent = { channel: "custom_activity", name: definition.name, activityId: definition.id, occurredAt: now };

  const owner = ownerOf(input, panel, problems);
  if (owner.identity !== undefined) event.identity = owner.identity;
  if (owner.uniqueid !== undefined) event.uniqueid = owner.uniqueid;

  const source = present(input.activity_source);
  if (source !== undefined) {
    const known = activitySource(source);
    if (known) event.source = known;
    else problems.push({ field: "activity_source", message: `must be ${ACTIVITY_SOURCE_RULE}, not "${source}"` });
  }

  const assetId = present(input.asset_id);
  if (assetId !== undefined) {
    const text = String(assetId).trim();
    if (text.length > MAX_ASSET_ID_LENGTH) problems.push({ field: "asset_id", message: `must be at most ${MAX_ASSET_ID_LENGTH} characters` });
    else event.assetId = text;
  }

  const guid = present(input.guid);
  if (guid !== undefined) {
    if (guid.trim().length > MAX_GUID_LENGTH) problems.push({ field: "guid", message: `must be at most ${MAX_GUID_LENGTH} characters` });
    else event.guid = guid.trim();
  }

  event.occurredAt = occurredAt(input, panel.timezone, now, problems);
  event.params = checkActivityParams(definition, input.activity_params, problems);
  return problems.length ? { ok: false, status: 400, problems } : { ok: true, event };
}

/**
 * A filter clause on one of an activity's parameters (a journey trigger's `params`, a segment's
 * `where`): the parameter as the definition names it (matched regardless of case) and the
 * value in the parameter's type; null when the clause does not fit, its problems added under
 * the clause's fields.
 */
export function checkParamClause(
  activity: ActivityDefinition,
  clause: { name: string; op: FilterOp; value?: unknown },
  fields: { name: string; op: string; value: string },
  problems: FieldProblem[],
): { name: string; value: unknown } | null {
  const name = Object.keys(activity.params).find((p) => p.toLowerCase() === clause.name.toLowerCase());
  if (name === undefined) {
    const known = Object.keys(activity.params);
    problems.push({ field: fields.name, message: `${activity.name} has no parameter "${clause.name}" (${known.length ? known.join(", ") : "it has none"})` });
    return null;
  }
  const type = activity.params[name]!;
  if (clause.value === undefined) return { name, value: undefined };
  if ((clause.op === "contains" || clause.op === "starts_with") && type !== "string") {
    problems.push({ field: fields.op, message: `${clause.op} is for string parameters; ${name} is ${type}` });
    return null;
  }
  return { name, value: typedValues(type, clause.value, fields.value, problems) };
}
