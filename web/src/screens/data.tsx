import { useState, type FormEvent } from "react";
import { admin } from "../api";
import type { ActivityParamType, ActivityView, AttributeType, AttributeView, DefineActivity, DefineAttribute } from "../../../src/domain/answers";
import { PARAM_NAME_PATTERN } from "../../../src/domain/activity";
import { DataTable } from "../components/data-table";
import { EmptyFor, IfAllowed } from "../components/role";
import { ErrorNote, Field, formatTime, Screen, useLoad, useSubmit, unplacedFailure } from "../ui";
import type { PanelRef, ScreenProps } from "../screen-props";

const ATTRIBUTE_TYPES: AttributeType[] = ["string", "integer", "float", "date", "boolean"];
type ScalarParamType = Extract<ActivityParamType, string>;
/** An array parameter (CONTRACT 10): items whose members have scalar types. */
type ArrayParamType = Extract<ActivityParamType, { type: "array" }>;
/** What a parameter row's type select offers: a scalar type, or an array of items. */
type ParamKind = ScalarParamType | ArrayParamType["type"];
const SCALAR_TYPES: ScalarParamType[] = ["string", "integer", "float"];
const PARAM_KINDS: ParamKind[] = [...SCALAR_TYPES, "array"];
/** The server's rule for parameter and member names, checked in the browser so a bad member name is named at its field. */
const NAME_PATTERN = PARAM_NAME_PATTERN.source;

/** `integer`, or `array of {prid: integer, name: string}`. */
function describeParamType(type: ActivityParamType): string {
  return typeof type === "string" ? type : `array of {${Object.entries(type.of).map(([member, of]) => `${member}: ${of}`).join(", ")}}`;
}

function Attributes({ panel }: { panel: PanelRef }) {
  const panelId = panel.id;
  const { data, error, reload } = useLoad(() => admin<{ attributes: AttributeView[] }>("GET", panelId, "/attributes"), [panelId]);
  const [name, setName] = useState("");
  const [type, setType] = useState<AttributeType>("string");
  const { failure, fields, run } = useSubmit();

  const add = async (event: FormEvent) => {
    event.preventDefault();
    const body: DefineAttribute = { type };
    if (await run(() => admin("PUT", panelId, `/attributes/${encodeURIComponent(name.trim())}`, body))) {
      setName("");
      reload();
    }
  };

  return (
    <section aria-labelledby="attributes-heading">
      <h2 id="attributes-heading">Contact attributes</h2>
      <p className="muted">Names are stored upper-case. A type is fixed once set, so stored values keep one type.</p>
      <ErrorNote error={error ?? unplacedFailure(failure, fields, ["name", "type"])} />
      <IfAllowed panel={panel} work="audience" what="Adding contact attributes">
        <form className="card row" onSubmit={add} aria-label="New attribute">
          <Field label="Attribute name" hint="A letter, then letters, digits or _" error={fields.name}>
            {(props) => <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <Field label="Attribute type" error={fields.type}>
            {(props) => (
              <select {...props} value={type} onChange={(e) => setType(e.target.value as AttributeType)}>
                {ATTRIBUTE_TYPES.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            )}
          </Field>
          <button type="submit">Add attribute</button>
        </form>
      </IfAllowed>
      <DataTable
        caption="Contact attributes"
        rows={data?.attributes}
        rowKey={(attribute) => attribute.name}
        columns={[
          { header: "Name", cell: (attribute) => <code>{attribute.name}</code>, sortBy: (attribute) => attribute.name },
          { header: "Type", cell: (attribute) => attribute.type, sortBy: (attribute) => attribute.type },
        ]}
      />
    </section>
  );
}

type MemberRow = { name: string; type: ScalarParamType };
type ParamRow = { name: string; type: ParamKind; members: MemberRow[] };

const newMember = (): MemberRow => ({ name: "", type: "string" });
const newParam = (): ParamRow => ({ name: "", type: "string", members: [newMember()] });

/** A row as the definition's type: the scalar type, or the array with its named members. */
function paramType(row: ParamRow): ActivityParamType {
  if (row.type !== "array") return row.type;
  const of = Object.fromEntries(row.members.filter((m) => m.name.trim()).map((m) => [m.name.trim(), m.type]));
  return { type: "array", of } satisfies ArrayParamType;
}

/** The members of an array parameter's items, each with its type. */
function MemberRows({ param, index, errors, onChange }: { param: ParamRow; index: number; errors: Record<string, string>; onChange: (members: MemberRow[]) => void }) {
  const name = param.name.trim();
  const setMember = (at: number, change: Partial<MemberRow>) => onChange(param.members.map((m, i) => (i === at ? { ...m, ...change } : m)));
  return (
    <fieldset>
      <legend>Parameter {index + 1} item members</legend>
      <p className="muted">
        Each item of {name ? <code>{name}</code> : "the array"} is an object with these members; journey filters and segments test them as {name || "name"}.member.
      </p>
      {errors[`params.${name}.of`] && <small className="error">{errors[`params.${name}.of`]}</small>}
      {param.members.map((member, at) => (
        <div className="row" key={at}>
          <Field label={`Parameter ${index + 1} member ${at + 1} name`} hint="A letter or _, then letters, digits or _" error={errors[`params.${name}.of.${member.name.trim()}`]}>
            {(props) => <input {...props} pattern={NAME_PATTERN} value={member.name} onChange={(e) => setMember(at, { name: e.target.value })} />}
          </Field>
          <Field label={`Parameter ${index + 1} member ${at + 1} type`}>
            {(props) => (
              <select {...props} value={member.type} onChange={(e) => setMember(at, { type: e.target.value as ScalarParamType })}>
                {SCALAR_TYPES.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
            )}
          </Field>
        </div>
      ))}
      <button type="button" className="secondary" onClick={() => onChange([...param.members, newMember()])}>
        Add a member to parameter {index + 1}
      </button>
    </fieldset>
  );
}

function Activities({ panel }: { panel: PanelRef }) {
  const panelId = panel.id;
  const { data, error, reload } = useLoad(() => admin<{ activities: ActivityView[] }>("GET", panelId, "/activities"), [panelId]);
  const [name, setName] = useState("");
  const [params, setParams] = useState<ParamRow[]>([newParam()]);
  const { failure, fields, run } = useSubmit();
  const setParam = (index: number, change: Partial<ParamRow>) => setParams((rows) => rows.map((row, i) => (i === index ? { ...row, ...change } : row)));

  const define = async (event: FormEvent) => {
    event.preventDefault();
    const body: DefineActivity = { name, params: Object.fromEntries(params.filter((p) => p.name.trim()).map((p) => [p.name.trim(), paramType(p)])) };
    if (await run(() => admin("POST", panelId, "/activities", body))) {
      setName("");
      setParams([newParam()]);
      reload();
    }
  };

  return (
    <section aria-labelledby="activities-heading">
      <h2 id="activities-heading">Activities</h2>
      <p className="muted">
        Clients post an activity by its id (single activity) or its name (Activity API v2); each parameter has a type. An array parameter holds a list of items (a cart&apos;s
        products), each an object whose members have types.
      </p>
      <ErrorNote error={error ?? unplacedFailure(failure, fields, (field) => field === "name" || params.some((param) => field === `params.${param.name.trim()}`))} />
      <IfAllowed panel={panel} work="audience" what="Defining activities">
        <form className="card" onSubmit={define} aria-label="New activity">
          <Field label="Activity name" error={fields.name}>
            {(props) => <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <fieldset>
            <legend>Parameters</legend>
            {params.map((param, index) => (
              <div key={index}>
                <div className="row">
                  <Field label={`Parameter ${index + 1} name`} error={fields[`params.${param.name.trim()}`]}>
                    {(props) => <input {...props} value={param.name} onChange={(e) => setParam(index, { name: e.target.value })} />}
                  </Field>
                  <Field label={`Parameter ${index + 1} type`}>
                    {(props) => (
                      <select {...props} value={param.type} onChange={(e) => setParam(index, { type: e.target.value as ParamKind })}>
                        {PARAM_KINDS.map((t) => (
                          <option key={t} value={t}>
                            {t === "array" ? "array of items" : t}
                          </option>
                        ))}
                      </select>
                    )}
                  </Field>
                </div>
                {param.type === "array" && <MemberRows param={param} index={index} errors={fields} onChange={(members) => setParam(index, { members })} />}
              </div>
            ))}
            <button type="button" className="secondary" onClick={() => setParams((rows) => [...rows, newParam()])}>
              Add a parameter
            </button>
          </fieldset>
          <button type="submit">Define activity</button>
        </form>
      </IfAllowed>
      <DataTable
        caption="Activities"
        rows={data?.activities}
        rowKey={(activity) => activity.activityid}
        empty={
          <EmptyFor panel={panel} work="audience" title="No activities yet">
            Define one above; clients then post it through the activity APIs.
          </EmptyFor>
        }
        columns={[
          { header: "Id", cell: (activity) => activity.activityid, sortBy: (activity) => activity.activityid },
          { header: "Name", cell: (activity) => activity.name, sortBy: (activity) => activity.name },
          {
            header: "Parameters",
            cell: (activity) =>
              Object.entries(activity.params)
                .map(([param, type]) => `${param} (${describeParamType(type)})`)
                .join(", ") || "—",
          },
          { header: "Defined", cell: (activity) => formatTime(activity.created_at), sortBy: (activity) => activity.created_at },
        ]}
      />
    </section>
  );
}

/** The panel's data model: contact attributes and activity definitions. */
export function Data({ panel }: ScreenProps) {
  return (
    <Screen title="Attributes and activities">
      <Attributes panel={panel} />
      <Activities panel={panel} />
    </Screen>
  );
}
