import { useState, type FormEvent } from "react";
import { admin } from "../api";
import type { ActivityParamType, ActivityView, AttributeType, AttributeView, DefineActivity, DefineAttribute } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { Empty, ErrorNote, Field, formatTime, Screen, useLoad, useSubmit } from "../ui";
import type { ScreenProps } from "../screen-props";

const ATTRIBUTE_TYPES: AttributeType[] = ["string", "integer", "float", "date", "boolean"];
/** The types this form defines; array parameters are defined through the admin API. */
type ScalarParamType = Extract<ActivityParamType, string>;
const PARAM_TYPES: ScalarParamType[] = ["string", "integer", "float"];

/** `integer`, or `array of {prid: integer, name: string}`. */
function describeParamType(type: ActivityParamType): string {
  return typeof type === "string" ? type : `array of {${Object.entries(type.of).map(([member, of]) => `${member}: ${of}`).join(", ")}}`;
}

function Attributes({ panelId }: { panelId: string }) {
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
      <ErrorNote error={error ?? failure} />
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

type ParamRow = { name: string; type: ScalarParamType };

function Activities({ panelId }: { panelId: string }) {
  const { data, error, reload } = useLoad(() => admin<{ activities: ActivityView[] }>("GET", panelId, "/activities"), [panelId]);
  const [name, setName] = useState("");
  const [params, setParams] = useState<ParamRow[]>([{ name: "", type: "string" }]);
  const { failure, fields, run } = useSubmit();
  const setParam = (index: number, change: Partial<ParamRow>) => setParams((rows) => rows.map((row, i) => (i === index ? { ...row, ...change } : row)));

  const define = async (event: FormEvent) => {
    event.preventDefault();
    const body: DefineActivity = { name, params: Object.fromEntries(params.filter((p) => p.name.trim()).map((p) => [p.name.trim(), p.type])) };
    if (await run(() => admin("POST", panelId, "/activities", body))) {
      setName("");
      setParams([{ name: "", type: "string" }]);
      reload();
    }
  };

  return (
    <section aria-labelledby="activities-heading">
      <h2 id="activities-heading">Activities</h2>
      <p className="muted">Clients post an activity by its id (single activity) or its name (Activity API v2); each parameter has a type.</p>
      <ErrorNote error={error ?? failure} />
      <form className="card" onSubmit={define} aria-label="New activity">
        <Field label="Activity name" error={fields.name}>
          {(props) => <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <fieldset>
          <legend>Parameters</legend>
          {params.map((param, index) => (
            <div className="row" key={index}>
              <Field label={`Parameter ${index + 1} name`} error={fields[`params.${param.name.trim()}`]}>
                {(props) => <input {...props} value={param.name} onChange={(e) => setParam(index, { name: e.target.value })} />}
              </Field>
              <Field label={`Parameter ${index + 1} type`}>
                {(props) => (
                  <select {...props} value={param.type} onChange={(e) => setParam(index, { type: e.target.value as ScalarParamType })}>
                    {PARAM_TYPES.map((t) => (
                      <option key={t}>{t}</option>
                    ))}
                  </select>
                )}
              </Field>
            </div>
          ))}
          <button type="button" className="secondary" onClick={() => setParams((rows) => [...rows, { name: "", type: "string" }])}>
            Add a parameter
          </button>
        </fieldset>
        <button type="submit">Define activity</button>
      </form>
      <DataTable
        caption="Activities"
        rows={data?.activities}
        rowKey={(activity) => activity.activityid}
        empty={<Empty title="No activities yet">Define one above; clients then post it through the activity APIs.</Empty>}
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
      <Attributes panelId={panel.id} />
      <Activities panelId={panel.id} />
    </Screen>
  );
}
