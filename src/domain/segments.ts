import { z } from "../lib/z";
import { listIdParam, nameText } from "./fields";
import { canonicalAttributeName } from "./attributes";
import { attributeName, FILTER_OPS, scalar } from "./filters";

/**
 * The segment language (CONTRACT 9): groups (`all`, `any`, `not`) of conditions on attributes,
 * list membership, behaviour (activities), engagement with campaigns and reachability. Pure:
 * the admin routes parse definitions with `segmentDefinitionSchema`; the store compiles a
 * parsed `match` to SQL (store/segment-sql.ts), so a count, a contact's membership and a
 * campaign's audience are one and the same query.
 */

/** Groups nest at most this deep (`all`/`any`; `not` negates without adding a level). */
export const MAX_GROUP_DEPTH = 3;
/** Conditions one definition may hold in all (each is a subquery of the compiled count). */
export const MAX_CONDITIONS = 30;
/** Longest window in days, and the largest count a behaviour condition may ask for. */
export const MAX_DAYS = 3660;
const MAX_COUNT = 1_000_000;

export const SEGMENT_ATTRIBUTE_OPS = [...FILTER_OPS, "within_last_days", "before_days_ago", "is_empty", "is_not_empty"] as const;
export type SegmentAttributeOp = (typeof SEGMENT_ATTRIBUTE_OPS)[number];
/** Operators whose `value` is a number of days (date attributes only). */
export const DAY_OPS: readonly SegmentAttributeOp[] = ["within_last_days", "before_days_ago"];
const NO_VALUE_OPS: readonly string[] = ["exists", "not_exists", "is_empty", "is_not_empty"];

export const ACTIVITY_OPS = ["performed", "not_performed", "first_performed", "last_performed"] as const;
export type ActivityOp = (typeof ACTIVITY_OPS)[number];
export const ENGAGEMENTS = ["received", "opened", "clicked", "bounced", "unsubscribed"] as const;
export type Engagement = (typeof ENGAGEMENTS)[number];
/** The email event (channel `email`) each engagement but `received` (campaign sends) counts. */
export const ENGAGEMENT_EVENTS: Record<Exclude<Engagement, "received">, string> = { opened: "open", clicked: "click", bounced: "bounce", unsubscribed: "unsubscribe" };
export const REACHABLE_CHANNELS = ["email", "sms", "push"] as const;
export type ReachableChannel = (typeof REACHABLE_CHANNELS)[number];

const days = z.number({ error: "must be a number of days" }).int({ error: "must be a whole number of days" }).min(1).max(MAX_DAYS);
const count = z.number({ error: "must be a number" }).int({ error: "must be a whole number" }).min(0).max(MAX_COUNT);
const ISO_DAY = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?Z?)?$/;

/** An ISO date (UTC midnight) or date-time (UTC) as epoch ms; NaN when it is not one. */
export function isoDateMs(text: string): number {
  if (!ISO_DAY.test(text)) return Number.NaN;
  return Date.parse(text.length === 10 ? `${text}T00:00:00Z` : text.endsWith("Z") ? text : `${text}Z`);
}

const isoDate = z
  .string({ error: "must be an ISO date, YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ" })
  .trim()
  .max(40)
  .refine((text) => Number.isFinite(isoDateMs(text)), { error: "must be an ISO date, YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ (UTC)" });

function valueRules(c: { op: string; value?: unknown }, ctx: z.RefinementCtx, dayOps: boolean): void {
  const needsValue = !NO_VALUE_OPS.includes(c.op);
  if (needsValue && c.value === undefined) ctx.addIssue({ code: "custom", path: ["value"], message: `is required for ${c.op}` });
  if (!needsValue && c.value !== undefined) ctx.addIssue({ code: "custom", path: ["value"], message: `must be absent for ${c.op}` });
  if (c.value === undefined) return;
  if (c.op === "in" && !Array.isArray(c.value)) ctx.addIssue({ code: "custom", path: ["value"], message: "must be an array for in" });
  if (c.op !== "in" && Array.isArray(c.value)) ctx.addIssue({ code: "custom", path: ["value"], message: "may be an array only for in" });
  if (dayOps && (DAY_OPS as readonly string[]).includes(c.op) && !(typeof c.value === "number" && Number.isInteger(c.value) && c.value >= 0 && c.value <= MAX_DAYS)) {
    ctx.addIssue({ code: "custom", path: ["value"], message: `must be a whole number of days (0 to ${MAX_DAYS}) for ${c.op}` });
  }
}

const clauseValue = z.union([scalar, z.array(scalar).max(100)]).optional();

const attributeCondition = z
  .object({
    attribute: attributeName,
    op: z.enum(SEGMENT_ATTRIBUTE_OPS, { error: `must be one of ${SEGMENT_ATTRIBUTE_OPS.join(", ")}` }),
    value: clauseValue,
  })
  .strict()
  .superRefine((c, ctx) => valueRules(c, ctx, true));

const listCondition = z.object({ list: listIdParam, op: z.enum(["in", "not_in"], { error: "must be in or not_in" }) }).strict();

const paramClause = z
  .object({
    // A parameter, or ARRAY.MEMBER for "any item where" (CONTRACT 10).
    param: z.string({ error: "must be a parameter name" }).trim().min(1).max(129),
    op: z.enum(FILTER_OPS, { error: `must be one of ${FILTER_OPS.join(", ")}` }),
    value: clauseValue,
  })
  .strict()
  .superRefine((c, ctx) => valueRules(c, ctx, false));

const activityCondition = z
  .object({
    activity: z.string({ error: "must be an activity name" }).trim().min(1).max(100),
    op: z.enum(ACTIVITY_OPS, { error: `must be one of ${ACTIVITY_OPS.join(", ")}` }),
    min: count.optional(),
    max: count.optional(),
    within_days: days.optional(),
    from: isoDate.optional(),
    to: isoDate.optional(),
    where: z.array(paramClause).max(10).optional(),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.within_days !== undefined && (c.from !== undefined || c.to !== undefined)) {
      ctx.addIssue({ code: "custom", path: ["within_days"], message: "may not be given with from or to" });
    }
    if (c.from !== undefined && c.to !== undefined && isoDateMs(c.from) >= isoDateMs(c.to)) ctx.addIssue({ code: "custom", path: ["to"], message: "must be after from" });
    if (c.op !== "performed") {
      for (const field of ["min", "max"] as const) {
        if (c[field] !== undefined) ctx.addIssue({ code: "custom", path: [field], message: `is only for performed (${c.op} counts no events)` });
      }
    }
    if ((c.op === "first_performed" || c.op === "last_performed") && c.from === undefined && c.to === undefined && c.within_days === undefined) {
      ctx.addIssue({ code: "custom", path: ["op"], message: `${c.op} needs from, to or within_days` });
    }
    if (c.min !== undefined && c.max !== undefined && c.min > c.max) ctx.addIssue({ code: "custom", path: ["max"], message: "must be at least min" });
  });

const engagementCondition = z
  .object({
    engagement: z.enum(ENGAGEMENTS, { error: `must be one of ${ENGAGEMENTS.join(", ")}` }),
    campaign: z.string({ error: 'must be a campaign id or "any"' }).trim().min(1).max(64).optional(),
    within_days: days.optional(),
  })
  .strict()
  .transform((c) => ({ ...c, campaign: c.campaign ?? "any" }));

const reachableCondition = z.object({ reachable: z.enum(REACHABLE_CHANNELS, { error: `must be one of ${REACHABLE_CHANNELS.join(", ")}` }) }).strict();

export type AttributeCondition = z.output<typeof attributeCondition>;
export type ListCondition = z.output<typeof listCondition>;
export type ActivityCondition = z.output<typeof activityCondition>;
export type ParamClause = z.output<typeof paramClause>;
export type EngagementCondition = z.output<typeof engagementCondition>;
export type ReachableCondition = z.output<typeof reachableCondition>;
export type SegmentCondition = AttributeCondition | ListCondition | ActivityCondition | EngagementCondition | ReachableCondition;
export type SegmentNode = SegmentCondition | { all: SegmentNode[] } | { any: SegmentNode[] } | { not: SegmentNode };

const CONDITION_SCHEMAS = {
  attribute: attributeCondition,
  list: listCondition,
  activity: activityCondition,
  engagement: engagementCondition,
  reachable: reachableCondition,
} as const;
const NODE_KEYS = ["all", "any", "not", ...Object.keys(CONDITION_SCHEMAS)];
const NODE_RULE = `must be a group ({"all":[…]}, {"any":[…]}, {"not":…}) or a condition (attribute, list, activity, engagement or reachable)`;

/**
 * A node at group level `level`. Dispatched on the member that names its kind, so a failure
 * is reported from that kind's rules (a union would only say that no form matched).
 */
function nodeSchema(level: number): z.ZodType<SegmentNode> {
  const parseWith = (schema: z.ZodType, value: unknown, ctx: z.RefinementCtx) => {
    const result = schema.safeParse(value);
    if (result.success) return result.data as SegmentNode;
    for (const issue of result.error.issues) ctx.addIssue({ ...(issue as z.core.$ZodRawIssue), path: issue.path } as never);
    return z.NEVER;
  };
  return z
    .unknown()
    .transform((value, ctx): SegmentNode => {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        ctx.addIssue({ code: "custom", message: NODE_RULE });
        return z.NEVER;
      }
      const kind = Object.keys(value).find((key) => NODE_KEYS.includes(key));
      if (kind === undefined) {
        ctx.addIssue({ code: "custom", message: NODE_RULE });
        return z.NEVER;
      }
      if (kind === "all" || kind === "any") {
        if (level > MAX_GROUP_DEPTH) {
          ctx.addIssue({ code: "custom", path: [kind], message: `groups nest at most ${MAX_GROUP_DEPTH} levels deep` });
          return z.NEVER;
        }
        const group = z.object({ [kind]: z.array(nodeSchema(level + 1)).min(1).max(MAX_CONDITIONS) }).strict();
        return parseWith(group, value, ctx);
      }
      if (kind === "not") return parseWith(z.object({ not: nodeSchema(level) }).strict(), value, ctx);
      return parseWith(CONDITION_SCHEMAS[kind as keyof typeof CONDITION_SCHEMAS], value, ctx);
    })
    .meta({ description: `A group or a condition (CONTRACT 9); groups nest at most ${MAX_GROUP_DEPTH} levels`, example: { attribute: "CITY", op: "eq", value: "Pune" } });
}

/** Every condition of a node, depth first. */
export function conditionsOf(node: SegmentNode): SegmentCondition[] {
  if ("all" in node) return node.all.flatMap(conditionsOf);
  if ("any" in node) return node.any.flatMap(conditionsOf);
  if ("not" in node) return conditionsOf(node.not);
  return [node];
}

/** The `match` of a definition or of a count preview; at most MAX_CONDITIONS conditions. */
export const segmentMatch = nodeSchema(1).superRefine((node, ctx) => {
  const n = conditionsOf(node).length;
  if (n > MAX_CONDITIONS) ctx.addIssue({ code: "custom", message: `holds ${n} conditions; a segment may hold at most ${MAX_CONDITIONS}` });
});

/** The body of POST/PUT /panels/{panel}/segments (CONTRACT 9). */
export const segmentDefinitionSchema = z.object({ name: nameText(200), match: segmentMatch }).strict();
export type SegmentDefinition = z.output<typeof segmentDefinitionSchema>;

/**
 * The body of POST /panels/{panel}/segments/count: `{"match"}`, or the definition a client saves
 * (`{"name","match"}`, the name not read), or that definition as `definition` (CONTRACT 9: "the
 * `definition` of a count preview"); read as its match.
 */
export const segmentCountBody = z
  .object({
    match: segmentMatch.optional(),
    name: z.string().max(200).optional(),
    definition: z.object({ name: z.string().max(200).optional(), match: segmentMatch }).strict().optional(),
  })
  .strict()
  .superRefine((body, ctx) => {
    if (body.match === undefined && body.definition === undefined) ctx.addIssue({ code: "custom", path: ["match"], message: "is required: the conditions to count (or a definition holding them)" });
    if (body.match !== undefined && body.definition !== undefined) ctx.addIssue({ code: "custom", path: ["definition"], message: "must not come with match: send one of them" });
  })
  .transform((body) => ({ match: (body.match ?? body.definition?.match)! }));

/** The query of POST /panels/{panel}/segments/{id}/export: the attributes written after the primary key. */
export const segmentExportQuery = z
  .object({
    attributes: z
      .string()
      .max(4000)
      .optional()
      .transform((text, ctx) => {
        const names = (text ?? "").split(",").map((name) => name.trim()).filter(Boolean);
        if (names.length > 100) ctx.addIssue({ code: "custom", message: "may name at most 100 attributes" });
        return [...new Set(names.map(canonicalAttributeName))];
      })
      .meta({ description: "Attribute names, comma-separated, written after the primary key", example: "NAME,CITY" }),
  })
  .strict();

/** What can change whether a contact matches: kept current on each (CONTRACT 9 "membership is current"). */
export interface SegmentDependencies {
  attributes: boolean;
  lists: boolean;
  /** Recorded events (activities, email engagement). */
  events: boolean;
  /** Campaign sends (engagement `received`). */
  sends: boolean;
  /** Conditions relative to now, re-checked as time passes. */
  slides: boolean;
  /** SMS stops and lifts (`reachable: sms`): shard migration 0124's triggers mark only such segments for a build. */
  smsStops: boolean;
}

export function dependenciesOf(node: SegmentNode): SegmentDependencies {
  const deps: SegmentDependencies = { attributes: false, lists: false, events: false, sends: false, slides: false, smsStops: false };
  for (const c of conditionsOf(node)) {
    if ("attribute" in c) {
      deps.attributes = true;
      if ((DAY_OPS as readonly string[]).includes(c.op)) deps.slides = true;
    } else if ("reachable" in c) {
      deps.attributes = true;
      if (c.reachable === "email") deps.events = true; // an unsubscribe or a bounce suppresses the address
      if (c.reachable === "sms") deps.smsStops = true; // a stop names a number, not a contact
    } else if ("list" in c) deps.lists = true;
    else if ("activity" in c) {
      deps.events = true;
      if (c.within_days !== undefined) deps.slides = true;
    } else {
      if (c.engagement === "received") deps.sends = true;
      else deps.events = true;
      if (c.within_days !== undefined) deps.slides = true;
    }
  }
  return deps;
}

/**
 * Whether recording an event of `channel` and `name` can change whether a contact matches
 * `node`: it has a behaviour condition on that activity, an engagement condition counting that
 * email event, or email reachability (a bounce or an unsubscribe suppresses the address). The
 * event pipeline re-checks a contact only against the segments its events concern.
 */
export function readsEvent(node: SegmentNode, event: { channel: string; name: string }): boolean {
  return conditionsOf(node).some((c) => {
    if ("activity" in c) return event.channel === "custom_activity" && event.name.toLowerCase() === c.activity.toLowerCase();
    if ("engagement" in c) return c.engagement !== "received" && event.channel === "email" && event.name === ENGAGEMENT_EVENTS[c.engagement];
    if ("reachable" in c) return c.reachable === "email" && event.channel === "email";
    return false;
  });
}
