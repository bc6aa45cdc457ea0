import { useEffect, useState, type FormEvent } from "react";
import { admin, ApiFailure } from "../api";
import type { ActivityView, AttributeView, ListView, SegmentCountRequest, SegmentDefinitionRequest, SegmentView } from "../../../src/domain/answers";
import type { Engagement, ReachableChannel, SegmentAttributeOp } from "../../../src/domain/answers";
import { Link } from "../router";
import { DataTable, PAGE_SIZE } from "../components/data-table";
import { ErrorNote, Field, formatTime, countFigure, Loading, Screen, unplacedFailure, useLoad, useSubmit } from "../ui";
import { EmptyFor, may, RoleNote } from "../components/role";
import { OPERATOR_WORDS } from "../components/operator-words";
import type { ScreenProps } from "../screen-props";

// Labels of the segment language's words (CONTRACT 9).
const ATTRIBUTE_OPS = OPERATOR_WORDS;
const NO_VALUE: SegmentAttributeOp[] = ["exists", "not_exists", "is_empty", "is_not_empty"];
const DAY_OPS: SegmentAttributeOp[] = ["within_last_days", "before_days_ago"];
const ENGAGEMENTS: Record<Engagement, string> = { received: "received", opened: "opened", clicked: "clicked in", bounced: "bounced from", unsubscribed: "unsubscribed from" };
const CHANNELS: Record<ReachableChannel, string> = { email: "by email", sms: "by SMS", push: "by push" };

type Kind = "attribute" | "list" | "activity" | "engagement" | "reachable";
const KINDS: Record<Kind, string> = { attribute: "Attribute", list: "List", activity: "Activity", engagement: "Email engagement", reachable: "Reachable" };

/** One row of the editor: every input of every kind, so switching kinds keeps what was typed. */
export interface Row {
  kind: Kind;
  negate: boolean;
  attribute: string;
  op: SegmentAttributeOp;
  value: string;
  list: string;
  listOp: "in" | "not_in";
  activity: string;
  activityOp: "performed" | "not_performed";
  min: string;
  withinDays: string;
  engagement: Engagement;
  campaign: string;
  reachable: ReachableChannel;
}

const NEW_ROW: Row = {
  kind: "attribute",
  negate: false,
  attribute: "",
  op: "eq",
  value: "",
  list: "",
  listOp: "in",
  activity: "",
  activityOp: "performed",
  min: "",
  withinDays: "",
  engagement: "opened",
  campaign: "any",
  reachable: "email",
};

type Condition = SegmentCountRequest["match"];

/** A typed attribute value from the text typed: numbers for number attributes and day counts, true/false for booleans. */
function valueOf(text: string, type: AttributeView["type"] | undefined, op: SegmentAttributeOp): unknown {
  const one = (part: string): unknown => {
    const trimmed = part.trim();
    if (DAY_OPS.includes(op) || type === "integer" || type === "float") return trimmed !== "" && Number.isFinite(Number(trimmed)) ? Number(trimmed) : trimmed;
    if (type === "boolean") return trimmed === "true" ? true : trimmed === "false" ? false : trimmed;
    return part;
  };
  return op === "in" ? text.split(",").map(one) : one(text);
}

function conditionOf(row: Row, attributes: AttributeView[]): Condition {
  const number = (text: string) => (text.trim() === "" ? undefined : Number(text));
  let condition: Record<string, unknown>;
  switch (row.kind) {
    case "attribute": {
      const type = attributes.find((a) => a.name === row.attribute)?.type;
      condition = { attribute: row.attribute, op: row.op, ...(NO_VALUE.includes(row.op) ? {} : { value: valueOf(row.value, type, row.op) }) };
      break;
    }
    case "list":
      condition = { list: number(row.list) ?? 0, op: row.listOp };
      break;
    case "activity":
      condition = { activity: row.activity, op: row.activityOp, ...(row.activityOp === "performed" && row.min ? { min: number(row.min) } : {}), ...(row.withinDays ? { within_days: number(row.withinDays) } : {}) };
      break;
    case "engagement":
      condition = { engagement: row.engagement, campaign: row.campaign, ...(row.withinDays ? { within_days: number(row.withinDays) } : {}) };
      break;
    case "reachable":
      condition = { reachable: row.reachable };
      break;
  }
  return (row.negate ? { not: condition } : condition) as Condition;
}

/** The editor's definition: its rows under one group. */
function matchOf(join: "all" | "any", rows: Row[], attributes: AttributeView[]): Condition {
  return { [join]: rows.map((row) => conditionOf(row, attributes)) } as Condition;
}

/** The refusals naming row `index` (match.all.2.value → value), keyed by the condition's own field. */
function rowErrors(fields: Record<string, string>, join: string, index: number): Record<string, string> {
  const prefix = `match.${join}.${index}`;
  const errors: Record<string, string> = {};
  for (const [name, message] of Object.entries(fields)) {
    if (name === prefix || name.startsWith(`${prefix}.`)) errors[name.slice(prefix.length + 1).replace(/^not\.?/, "") || "condition"] ??= message;
  }
  return errors;
}

/** The field of a condition as the API names it, for each input of the row. */
const API_FIELD: Partial<Record<keyof Row, string>> = {
  attribute: "attribute",
  op: "op",
  value: "value",
  listOp: "op",
  list: "list",
  activityOp: "op",
  activity: "activity",
  min: "min",
  withinDays: "within_days",
  engagement: "engagement",
  campaign: "campaign",
  reachable: "reachable",
};

/** Whether the row names what it tests: an incomplete one would only be refused, so it is not counted. */
function complete(row: Row): boolean {
  switch (row.kind) {
    case "attribute":
      return row.attribute !== "" && (NO_VALUE.includes(row.op) || row.value.trim() !== "");
    case "list":
      return row.list !== "";
    case "activity":
      return row.activity !== "";
    default:
      return true;
  }
}

interface Choices {
  attributes: AttributeView[];
  lists: ListView[];
  activities: ActivityView[];
  campaigns: { id: string; name: string }[];
}

function ConditionRow({ row, index, choices, errors, onChange, onRemove }: { row: Row; index: number; choices: Choices; errors: Record<string, string>; onChange: (row: Row) => void; onRemove?: () => void }) {
  const set = <K extends keyof Row>(key: K, value: Row[K]) => onChange({ ...row, [key]: value });
  const n = index + 1;
  const shown = new Set<string>();
  // Each refusal under the input it is about; what names no input of the row, below the row.
  const errorOf = (key: keyof Row) => {
    const field = API_FIELD[key];
    if (!field || !errors[field]) return undefined;
    shown.add(field);
    return errors[field];
  };
  const select = <K extends keyof Row>(key: K, label: string, options: [string, string][]) => (
    <Field label={label} error={errorOf(key)}>
      {(props) => (
        <select {...props} value={String(row[key])} onChange={(e) => set(key, e.target.value as Row[K])}>
          {options.map(([value, text]) => (
            <option key={value} value={value}>
              {text}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
  const input = (key: "value" | "min" | "withinDays", label: string, type = "text") => (
    <Field label={label} error={errorOf(key)}>
      {(props) => <input {...props} type={type} value={row[key]} onChange={(e) => set(key, e.target.value)} />}
    </Field>
  );
  const body = (
    <div className="row">
        {select("kind", "Condition on", Object.entries(KINDS))}
        {row.kind === "attribute" && (
          <>
            {select("attribute", "Attribute", [["", "(choose)"], ...choices.attributes.map((a): [string, string] => [a.name, `${a.name} (${a.type})`])])}
            {select("op", "Comparison", Object.entries(ATTRIBUTE_OPS))}
            {!NO_VALUE.includes(row.op) && input("value", row.op === "in" ? "Values (comma separated)" : DAY_OPS.includes(row.op) ? "Days" : "Value")}
          </>
        )}
        {row.kind === "list" && (
          <>
            {select("listOp", "Membership", [["in", "is in"], ["not_in", "is not in"]])}
            {select("list", "List", [["", "(choose)"], ...choices.lists.map((l): [string, string] => [String(l.id), l.name])])}
          </>
        )}
        {row.kind === "activity" && (
          <>
            {select("activityOp", "Did", [["performed", "performed"], ["not_performed", "did not perform"]])}
            {select("activity", "Activity", [["", "(choose)"], ...choices.activities.map((a): [string, string] => [a.name, a.name])])}
            {row.activityOp === "performed" && input("min", "At least (times)", "number")}
            {input("withinDays", "Within the last (days)", "number")}
          </>
        )}
        {row.kind === "engagement" && (
          <>
            {select("engagement", "Engagement", Object.entries(ENGAGEMENTS))}
            {select("campaign", "Campaign", [["any", "any campaign"], ...choices.campaigns.map((c): [string, string] => [c.id, c.name])])}
            {input("withinDays", "Within the last (days)", "number")}
          </>
        )}
        {row.kind === "reachable" && select("reachable", "Reachable", Object.entries(CHANNELS))}
        <label className="check">
          <input type="checkbox" checked={row.negate} onChange={(e) => set("negate", e.target.checked)} />
          Not
        </label>
        {onRemove && (
          <button type="button" className="secondary" onClick={onRemove} aria-label={`Remove condition ${n}`}>
            Remove
          </button>
        )}
    </div>
  );
  const rest = Object.entries(errors).filter(([field]) => !shown.has(field));
  return (
    <li className="card condition" aria-label={`Condition ${n}`}>
      <fieldset>
        <legend>Condition {n}</legend>
        {body}
      </fieldset>
      {rest.map(([field, message]) => (
        <p key={field} className="error">
          {message}
        </p>
      ))}
    </li>
  );
}

/** A saved condition as an editor row; null when the row editor cannot show it (parameter clauses, dates, at most). */
function rowOf(node: Condition): Row | null {
  const outer = node as Record<string, unknown>;
  const negate = "not" in outer;
  const c = (negate ? outer.not : outer) as Record<string, unknown>;
  const text = (value: unknown) => (value === undefined ? "" : Array.isArray(value) ? value.join(",") : String(value));
  if ("attribute" in c) return { ...NEW_ROW, negate, kind: "attribute", attribute: String(c.attribute), op: c.op as SegmentAttributeOp, value: text(c.value) };
  if ("list" in c) return { ...NEW_ROW, negate, kind: "list", list: String(c.list), listOp: c.op as Row["listOp"] };
  if ("activity" in c) {
    if (c.op !== "performed" && c.op !== "not_performed") return null;
    if (["max", "from", "to", "where"].some((key) => c[key] !== undefined)) return null;
    return { ...NEW_ROW, negate, kind: "activity", activity: String(c.activity), activityOp: c.op, min: text(c.min), withinDays: text(c.within_days) };
  }
  if ("engagement" in c) return { ...NEW_ROW, negate, kind: "engagement", engagement: c.engagement as Engagement, campaign: text(c.campaign ?? "any"), withinDays: text(c.within_days) };
  if ("reachable" in c) return { ...NEW_ROW, negate, kind: "reachable", reachable: c.reachable as ReachableChannel };
  return null;
}

/** A saved definition as the editor's group and rows; null when it nests groups or says what rows cannot. */
export function editorStateOf(match: Condition): { join: "all" | "any"; rows: Row[] } | null {
  const group = match as Record<string, unknown>;
  const join = "all" in group ? "all" : "any" in group ? "any" : null;
  if (!join || !Array.isArray(group[join])) return null;
  const rows = (group[join] as Condition[]).map(rowOf);
  return rows.length > 0 && rows.every((row): row is Row => row !== null) ? { join, rows } : null;
}

/**
 * The segment editor: conditions joined by all or any, with the count of matching contacts as
 * they are edited. With `segment`, it starts from that segment's definition and saves over it.
 */
export function SegmentEditor({ panelId, segment, onSaved }: { panelId: string; segment?: { id: string; name: string; join: "all" | "any"; rows: Row[] }; onSaved: () => void }) {
  const choices = useLoad(async (): Promise<Choices> => {
    const [attributes, lists, activities, campaigns] = await Promise.all([
      admin<{ attributes: AttributeView[] }>("GET", panelId, "/attributes"),
      admin<{ lists: ListView[] }>("GET", panelId, "/lists"),
      admin<{ activities: ActivityView[] }>("GET", panelId, "/activities"),
      admin<{ campaigns: { id: string; name: string }[] }>("GET", panelId, "/campaigns"),
    ]);
    return { attributes: attributes.attributes, lists: lists.lists, activities: activities.activities, campaigns: campaigns.campaigns };
  }, [panelId]);
  const [name, setName] = useState(segment?.name ?? "");
  const [join, setJoin] = useState<"all" | "any">(segment?.join ?? "all");
  const [rows, setRows] = useState<Row[]>(segment?.rows ?? [NEW_ROW]);
  const [count, setCount] = useState<{ count?: number; fields: Record<string, string>; message?: string }>({ fields: {} });
  // Nothing is asked (nor refused) for a form nobody has changed yet, nor for a condition not yet chosen.
  const [touched, setTouched] = useState(false);
  const saved = useSubmit(onSaved);
  const match = choices.data ? matchOf(join, rows, choices.data.attributes) : undefined;
  const matchText = JSON.stringify(match);
  const countable = touched && rows.every(complete);

  // The live count: asked for a moment after the last change, the stale answer dropped.
  useEffect(() => {
    if (!match || !countable) {
      setCount({ fields: {} });
      return;
    }
    let live = true;
    const timer = setTimeout(() => {
      const body: SegmentCountRequest = { match };
      admin<{ count: number }>("POST", panelId, "/segments/count", body).then(
        (answer) => live && setCount({ count: answer.count, fields: {} }),
        (failure: unknown) =>
          live && setCount({ fields: failure instanceof ApiFailure ? Object.fromEntries(failure.errors.map((e) => [e.field, e.message])) : {}, message: failure instanceof Error ? failure.message : String(failure) }),
      );
    }, 350);
    return () => {
      live = false;
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [panelId, matchText, countable]);

  const save = async (event: FormEvent) => {
    event.preventDefault();
    const body: SegmentDefinitionRequest = { name, match: match! };
    const write = segment ? () => admin("PUT", panelId, `/segments/${encodeURIComponent(segment.id)}`, body) : () => admin("POST", panelId, "/segments", body);
    if ((await saved.run(write)) && !segment) {
      setName("");
      setRows([NEW_ROW]);
      setTouched(false);
    }
  };

  if (!choices.data) return choices.error ? <ErrorNote error={choices.error} /> : <Loading />;
  const fields = { ...count.fields, ...saved.fields };
  const change = (next: Row[]) => {
    setTouched(true);
    setRows(next);
  };
  // A refusal naming the name or a condition's field is shown there; anything else, at the top.
  const placed = Object.keys(saved.fields).filter((field) => field === "name" || field.startsWith(`match.${join}.`));
  return (
    <form className="card" onSubmit={save} aria-label={segment ? "Edit segment" : "New segment"}>
      <ErrorNote error={unplacedFailure(saved.failure, saved.fields, placed)} />
      <div className="row">
        <Field label="Segment name" error={fields.name}>
          {(props) => <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <Field label="Contacts match">
          {(props) => (
            <select
              {...props}
              value={join}
              onChange={(e) => {
                setTouched(true);
                setJoin(e.target.value as "all" | "any");
              }}
            >
              <option value="all">every condition</option>
              <option value="any">any condition</option>
            </select>
          )}
        </Field>
      </div>
      <ol className="plain">
        {rows.map((row, index) => (
          <ConditionRow
            key={index}
            row={row}
            index={index}
            choices={choices.data!}
            errors={rowErrors(fields, join, index)}
            onChange={(next) => change(rows.map((r, i) => (i === index ? next : r)))}
            onRemove={rows.length > 1 ? () => change(rows.filter((_, i) => i !== index)) : undefined}
          />
        ))}
      </ol>
      <button type="button" className="secondary" onClick={() => change([...rows, NEW_ROW])}>
        Add a condition
      </button>
      <p role="status" className="count" aria-live="polite">
        {count.count !== undefined ? (
          <>
            <strong>{count.count}</strong> {count.count === 1 ? "contact matches" : "contacts match"} now.
          </>
        ) : !touched ? (
          <span className="muted">{segment ? "The count follows as you change the conditions." : "Choose conditions to see how many contacts match."}</span>
        ) : count.message || !countable ? (
          <span className="muted">No count until the conditions are complete.</span>
        ) : (
          <span className="muted">Counting…</span>
        )}
      </p>
      <details>
        <summary>The definition as the API takes it</summary>
        <pre aria-label="Segment definition">{JSON.stringify({ name, match }, null, 2)}</pre>
      </details>
      <button type="submit">{segment ? "Save changes" : "Save segment"}</button>
    </form>
  );
}

/** Saved segments with their member counts, and the editor for a new one. */
export function Segments({ panel }: ScreenProps) {
  const { data, error, reload } = useLoad(() => admin<{ segments: SegmentView[] }>("GET", panel.id, "/segments"), [panel.id]);
  return (
    <Screen title="Segments">
      <p className="muted">A segment is the contacts that match its conditions, kept current as contacts change and events arrive. Campaigns send to segments; journeys can start when a contact enters one.</p>
      <ErrorNote error={error} />
      <DataTable
        caption="Saved segments"
        rows={data?.segments}
        rowKey={(segment) => segment.id}
        pageSize={PAGE_SIZE}
        empty={
          <EmptyFor panel={panel} work="audience" title="No segments yet">
            Build one below: pick conditions on attributes, lists, activities or email engagement and watch the count.
          </EmptyFor>
        }
        columns={[
          {
            header: "Name",
            cell: (segment) => <Link href={`/panels/${encodeURIComponent(panel.id)}/segments/${encodeURIComponent(segment.id)}`}>{segment.name}</Link>,
            sortBy: (segment) => segment.name,
          },
          {
            header: "Members",
            cell: (segment) => (
              <>
                {segment.members === undefined ? "—" : countFigure(segment.members, segment.members_counted_at, segment.members_at_least)}
                {segment.building && <span className="badge">building</span>}
              </>
            ),
            sortBy: (segment) => segment.members,
          },
          { header: "Updated", cell: (segment) => formatTime(segment.updated_at), sortBy: (segment) => segment.updated_at },
        ]}
      />
      <h2>New segment</h2>
      <RoleNote panel={panel} work="audience" what="Building a segment" />
      {may(panel, "audience") && <SegmentEditor panelId={panel.id} onSaved={reload} />}
    </Screen>
  );
}
