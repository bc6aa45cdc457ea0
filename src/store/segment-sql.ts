import type { ActivityDefinition } from "../domain/activity";
import { definedSpelling } from "../domain/activity-param-types";
import type { AttributeSchema, AttributeType } from "../domain/attributes";
import {
  conditionsOf,
  ENGAGEMENT_EVENTS,
  isoDateMs,
  type ActivityCondition,
  type AttributeCondition,
  type EngagementCondition,
  type ParamClause,
  type SegmentCondition,
  type SegmentNode,
} from "../domain/segments";
import { phoneDigitsSql } from "./phone-digits-sql";

/**
 * Compiles a segment's `match` (CONTRACT 9) to one SQL boolean expression over a contact row
 * `c`: counts, previews, a contact's membership and a campaign's audience all run it, so they
 * cannot disagree. Every statement that embeds it binds the panel id as ?1 and the
 * definition's values, one JSON array, as ?2 (any number of values fit D1's 100 parameters).
 * Names that reach the SQL text (attribute and parameter paths, activity ids, times) come from
 * the panel's catalog or the clock, never from the caller as written.
 *
 * Two shapes: `scan` (a count over the panel: behaviour conditions are uncorrelated IN
 * subqueries, each read once through events_by_name) and `probe` (a few given contacts:
 * correlated subqueries through each contact's own events).
 */

export interface SegmentCatalog {
  attributes: AttributeSchema;
  /** Activity definitions by name key (lower case). */
  activities: ReadonlyMap<string, ActivityDefinition>;
}

export type SegmentSqlMode = "scan" | "probe";

export interface CompiledSegment {
  /** A boolean expression over `c` (a row of contacts of panel ?1). */
  where: string;
  /** The JSON array bound as ?2. */
  values: string;
  /**
   * With `slideFrom`: a SELECT of the contact ids whose status under a sliding window may have
   * changed between then and now (their events or dates crossed a window's edge); null when
   * the match has no such window.
   */
  candidates?: string | null;
}

const DAY_MS = 86_400_000;
/** Epoch ms of an ISO date or date-time text (what date attributes hold). */
const epochMs = (sql: string) => `((julianday(${sql}) - 2440587.5) * 86400000.0)`;

/** Parameter and member names written into the SQL text: checked, though the catalog holds them. */
const SQL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

class Compiler {
  private readonly values: unknown[] = [];

  constructor(
    private readonly catalog: SegmentCatalog,
    private readonly now: number,
    private readonly mode: SegmentSqlMode,
  ) {}

  compile(node: SegmentNode, slideFrom?: number): CompiledSegment {
    // ?2 is named even when no value is used, so every statement binds the same parameters.
    const where = `(?2 IS NOT NULL AND ${this.node(node)})`;
    const candidates = slideFrom === undefined ? undefined : this.candidates(node, slideFrom);
    return { where, values: JSON.stringify(this.values), ...(candidates === undefined ? {} : { candidates }) };
  }

  /** Several matches sharing one value list, so one statement can hold them all. */
  compileMany(nodes: readonly SegmentNode[]): { wheres: string[]; values: string } {
    const wheres = nodes.map((node) => `(?2 IS NOT NULL AND ${this.node(node)})`);
    return { wheres, values: JSON.stringify(this.values) };
  }

  private candidates(node: SegmentNode, from: number): string | null {
    const edges = (lo: number, hi: number) => ({ lo, hi });
    const selects: string[] = [];
    for (const c of conditionsOf(node)) {
      if ("attribute" in c && (c.op === "within_last_days" || c.op === "before_days_ago")) {
        const shift = Number(c.value) * DAY_MS;
        const ranges = [edges(from - shift, this.now - shift), ...(c.op === "within_last_days" ? [edges(from, this.now + 1)] : [])];
        const at = epochMs(attributeSql(c.attribute).replace("c.attrs", "c2.attrs"));
        selects.push(`SELECT c2.id FROM contacts c2 WHERE c2.panel_id = ?1 AND (${ranges.map((r) => `(${at} >= ${r.lo} AND ${at} < ${r.hi})`).join(" OR ")})`);
      } else if ("activity" in c && c.within_days !== undefined) {
        const definition = this.catalog.activities.get(c.activity.toLowerCase());
        if (!definition) continue;
        const shift = c.within_days * DAY_MS;
        selects.push(
          `SELECT e.contact_id FROM events e INDEXED BY events_by_name WHERE e.panel_id = ?1 AND e.channel = 'custom_activity' AND e.name = ${this.value(definition.name)}
             AND e.occurred_at >= ${from - shift} AND e.occurred_at < ${this.now - shift} AND e.contact_id IS NOT NULL`,
        );
      } else if ("engagement" in c && c.within_days !== undefined) {
        const shift = c.within_days * DAY_MS;
        if (c.engagement === "received") {
          selects.push(`SELECT m.contact_id FROM campaign_messages m WHERE m.panel_id = ?1 AND m.status = 'sent' AND m.sent_at >= ${from - shift} AND m.sent_at < ${this.now - shift}`);
        } else {
          selects.push(
            `SELECT e.contact_id FROM events e INDEXED BY events_by_name WHERE e.panel_id = ?1 AND e.channel = 'email' AND e.name = '${ENGAGEMENT_EVENTS[c.engagement]}'
               AND e.occurred_at >= ${from - shift} AND e.occurred_at < ${this.now - shift} AND e.contact_id IS NOT NULL`,
          );
        }
      }
    }
    return selects.length ? selects.join(" UNION ") : null;
  }

  /**
   * The events of a condition, through the index its shape needs: a scan reads one activity's
   * (or email event's) window through events_by_name; a probe reads one contact's events. The
   * planner, without statistics, would take events_by_name for a probe too (more equality
   * columns) and read the whole window once per contact.
   */
  private get events(): string {
    return this.mode === "scan" ? "events e INDEXED BY events_by_name" : "events e INDEXED BY events_by_contact";
  }

  private value(v: unknown): string {
    this.values.push(v);
    return `json_extract(?2, '$[${this.values.length - 1}]')`;
  }

  /**
   * A time that moves with `now`, bound rather than written into the SQL: the statement's text
   * then stays the same from call to call, and D1 can reuse its prepared form (preparing a
   * statement of 20 segments took as long as running it).
   */
  private instant(ms: number): string {
    return this.value(ms);
  }

  private valueList(v: unknown): string {
    this.values.push(v);
    return `json_each(?2, '$[${this.values.length - 1}]')`;
  }

  private node(node: SegmentNode): string {
    if ("all" in node) return `(${[...node.all].sort((a, b) => cost(a) - cost(b)).map((n) => this.node(n)).join(" AND ")})`;
    if ("any" in node) return `(${node.any.map((n) => this.node(n)).join(" OR ")})`;
    if ("not" in node) return `(NOT ${this.node(node.not)})`;
    return this.condition(node);
  }

  private condition(c: SegmentCondition): string {
    if ("attribute" in c) return this.attribute(c);
    if ("list" in c) {
      const member = this.mode === "scan"
        ? `c.id IN (SELECT m.contact_id FROM list_members m WHERE m.list_id = ${c.list} AND m.panel_id = ?1)`
        : `EXISTS (SELECT 1 FROM list_members m WHERE m.list_id = ${c.list} AND m.contact_id = c.id)`;
      return c.op === "in" ? member : `(NOT ${member})`;
    }
    if ("activity" in c) return this.activity(c);
    if ("engagement" in c) return this.engagement(c);
    const attribute = c.reachable === "email" ? "EMAIL" : c.reachable === "sms" ? "MOBILE" : "PUSH_TOKEN";
    const present = presentSql(attributeSql(attribute));
    if (c.reachable === "push") {
      // A PUSH_TOKEN, or a browser or app install registered under the contact's key or one of its visitor ids; not turned off.
      const registered = `EXISTS (SELECT 1 FROM push_subscriptions p WHERE p.panel_id = ?1 AND p.contact_key = c.pk_value)
        OR EXISTS (SELECT 1 FROM anon_profiles ap JOIN push_subscriptions p ON p.panel_id = ap.panel_id AND p.uniqueid = ap.uniqueid WHERE ap.contact_id = c.id AND ap.panel_id = ?1)`;
      return `((${present} OR ${registered}) AND NOT EXISTS (SELECT 1 FROM push_optouts o WHERE o.panel_id = ?1 AND o.contact_id = c.id))`;
    }
    // A stopped number is never texted, as a stopped address is never mailed: the stop found by its key (panel_id, phone).
    if (c.reachable === "sms") return `(${present} AND NOT EXISTS (SELECT 1 FROM sms_suppressions s WHERE s.panel_id = ?1 AND s.phone = ${phoneDigitsSql(attributeSql("MOBILE"))}))`;
    return `(${present} AND NOT EXISTS (SELECT 1 FROM email_suppressions s WHERE s.panel_id = ?1 AND s.address = lower(trim(${attributeSql("EMAIL")}))))`;
  }

  private attribute(c: AttributeCondition): string {
    const type = this.catalog.attributes.get(c.attribute) ?? "string";
    const raw = attributeSql(c.attribute);
    if (c.op === "within_last_days" || c.op === "before_days_ago") {
      const bound = this.instant(this.now - Number(c.value) * DAY_MS);
      const at = epochMs(raw);
      return c.op === "within_last_days" ? `coalesce(${at} >= ${bound} AND ${at} <= ${this.instant(this.now)}, 0)` : `coalesce(${at} < ${bound}, 0)`;
    }
    return this.comparison(raw, type, c.op, c.value);
  }

  /** A filter operator (domain/filters.ts semantics: strings trimmed and case-insensitive; absent fails all but ne). */
  private comparison(raw: string, type: AttributeType | "param", op: string, value: unknown): string {
    const present = presentSql(raw);
    if (op === "exists" || op === "is_not_empty") return present;
    if (op === "not_exists" || op === "is_empty") return `(NOT ${present})`;
    const textual = type === "string" || type === "param" || op === "contains" || op === "starts_with";
    const norm = (sql: string) => (textual ? `lower(trim(${sql}))` : type === "date" ? `julianday(${sql})` : sql);
    const x = norm(raw);
    let test: string;
    if (op === "in") test = `${x} IN (SELECT ${norm("value")} FROM ${this.valueList(value)})`;
    else {
      const y = norm(this.value(typeof value === "boolean" ? Number(value) : value));
      switch (op) {
        case "contains":
          test = `instr(${x}, ${y}) > 0`;
          break;
        case "starts_with":
          test = `substr(${x}, 1, length(${y})) = ${y}`;
          break;
        case "eq":
        case "ne":
          test = `${x} = ${y}`;
          break;
        default:
          test = `${x} ${{ gt: ">", gte: ">=", lt: "<", lte: "<=" }[op as "gt"]} ${y}`;
      }
    }
    const holds = `coalesce(${present} AND ${test}, 0)`;
    return op === "ne" ? `(NOT ${holds})` : holds;
  }

  private activity(c: ActivityCondition): string {
    const definition = this.catalog.activities.get(c.activity.toLowerCase());
    if (!definition) return "0"; // checked when saved; an activity cannot be deleted
    const where = (c.where ?? []).map((w) => this.param(w, definition));
    // The name (unique in the panel) finds the activity's events in events_by_name alone.
    const base = [`e.panel_id = ?1`, `e.channel = 'custom_activity'`, `e.name = ${this.value(definition.name)}`, `e.contact_id IS NOT NULL`, ...where];
    const window = this.window(c.within_days, c.from, c.to);
    if (c.op === "first_performed" || c.op === "last_performed") {
      const at = c.op === "first_performed" ? "MIN(e.occurred_at)" : "MAX(e.occurred_at)";
      const range = window.map((w) => w.replace("e.occurred_at", at)).join(" AND ");
      if (this.mode === "scan") return `c.id IN (SELECT e.contact_id FROM ${this.events} WHERE ${base.join(" AND ")} GROUP BY e.contact_id HAVING ${range})`;
      return `coalesce((SELECT ${range} FROM ${this.events} WHERE ${base.join(" AND ")} AND e.contact_id = c.id), 0)`;
    }
    const filter = [...base, ...window].join(" AND ");
    const [min, max] = c.op === "not_performed" ? [0, 0] : [c.min ?? 1, c.max];
    return this.counted(filter, min, max);
  }

  /** Contacts with between min and max (inclusive; no max: unbounded) events passing `filter`. */
  private counted(filter: string, min: number, max: number | undefined): string {
    if (this.mode === "probe") {
      const n = `(SELECT COUNT(*) FROM ${this.events} WHERE ${filter} AND e.contact_id = c.id)`;
      return max === undefined ? `${n} >= ${min}` : `${n} BETWEEN ${min} AND ${max}`;
    }
    if (min === 0 && max === undefined) return "1";
    if (min === 0) {
      if (max === 0) return `c.id NOT IN (SELECT e.contact_id FROM ${this.events} WHERE ${filter})`;
      return `c.id NOT IN (SELECT e.contact_id FROM ${this.events} WHERE ${filter} GROUP BY e.contact_id HAVING COUNT(*) > ${max})`;
    }
    if (min === 1 && max === undefined) return `c.id IN (SELECT e.contact_id FROM ${this.events} WHERE ${filter})`;
    const having = max === undefined ? `COUNT(*) >= ${min}` : `COUNT(*) BETWEEN ${min} AND ${max}`;
    return `c.id IN (SELECT e.contact_id FROM ${this.events} WHERE ${filter} GROUP BY e.contact_id HAVING ${having})`;
  }

  private window(withinDays: number | undefined, from: string | undefined, to: string | undefined): string[] {
    const out: string[] = [];
    if (withinDays !== undefined) out.push(`e.occurred_at >= ${this.instant(this.now - withinDays * DAY_MS)}`);
    if (from !== undefined) out.push(`e.occurred_at >= ${isoDateMs(from)}`);
    if (to !== undefined) out.push(`e.occurred_at < ${isoDateMs(to)}`);
    return out;
  }

  private param(w: ParamClause, definition: ActivityDefinition): string {
    // The definition's own spelling of the parameter (and member): a name the catalog holds reaches the SQL text.
    const dot = w.param.indexOf(".");
    const wanted = (dot === -1 ? w.param : w.param.slice(0, dot)).toLowerCase();
    const name = Object.keys(definition.params).find((p) => p.toLowerCase() === wanted);
    if (name === undefined || !SQL_NAME.test(name)) return "0";
    const type = definition.params[name]!;
    if (typeof type === "string") return dot === -1 ? this.comparison(`json_extract(e.params, '$.${name}')`, type === "string" ? "param" : type, w.op, w.value) : "0";
    // "Any item where …" (CONTRACT 10): the clause on the member of some item of the array.
    const member = dot === -1 ? undefined : definedSpelling(type.of, w.param.slice(dot + 1));
    if (member === undefined || !SQL_NAME.test(member)) return "0";
    const memberType = type.of[member]!;
    const test = this.comparison(`json_extract(i.value, '$.${member}')`, memberType === "string" ? "param" : memberType, w.op, w.value);
    return `EXISTS (SELECT 1 FROM json_each(e.params, '$.${name}') i WHERE ${test})`;
  }

  private engagement(c: EngagementCondition): string {
    if (c.engagement === "received") {
      const filter = [`m.panel_id = ?1`, `m.status = 'sent'`];
      if (c.campaign !== "any") filter.push(`m.campaign_id = ${this.value(c.campaign)}`);
      if (c.within_days !== undefined) filter.push(`m.sent_at >= ${this.instant(this.now - c.within_days * DAY_MS)}`);
      return this.mode === "scan"
        ? `c.id IN (SELECT m.contact_id FROM campaign_messages m WHERE ${filter.join(" AND ")})`
        : `EXISTS (SELECT 1 FROM campaign_messages m WHERE ${filter.join(" AND ")} AND m.contact_id = c.id)`;
    }
    const filter = [`e.panel_id = ?1`, `e.channel = 'email'`, `e.name = '${ENGAGEMENT_EVENTS[c.engagement]}'`, `e.contact_id IS NOT NULL`];
    if (c.campaign !== "any") filter.push(`e.campaign_id = ${this.value(c.campaign)}`);
    filter.push(...this.window(c.within_days, undefined, undefined));
    return this.counted(filter.join(" AND "), 1, undefined);
  }
}

/** The value of an attribute of `c` (names are canonical: upper-case letters, digits and _). */
function attributeSql(name: string): string {
  if (!/^[A-Z][A-Z0-9_]*$/.test(name)) throw new Error(`not a canonical attribute name: ${name}`);
  return `json_extract(c.attrs, '$.${name}')`;
}

function presentSql(sql: string): string {
  return `coalesce(${sql} IS NOT NULL AND ${sql} <> '', 0)`;
}

/** Cheap conditions first, so `all` stops early on most contacts. */
function cost(node: SegmentNode): number {
  if ("attribute" in node || "reachable" in node) return 0;
  if ("list" in node) return 1;
  if ("activity" in node || "engagement" in node) return 2;
  return 3;
}

export function compileSegment(match: SegmentNode, catalog: SegmentCatalog, now: number, mode: SegmentSqlMode, slideFrom?: number): CompiledSegment {
  return new Compiler(catalog, now, mode).compile(match, slideFrom);
}

/** Several segments' matches compiled together: `wheres[i]` is the i-th match, all binding ?1 and the one `values` as ?2. */
export function compileSegments(matches: readonly SegmentNode[], catalog: SegmentCatalog, now: number, mode: SegmentSqlMode): { wheres: string[]; values: string } {
  return new Compiler(catalog, now, mode).compileMany(matches);
}
