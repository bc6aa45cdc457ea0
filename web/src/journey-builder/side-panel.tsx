import type { Edge } from "@xyflow/react";
import { createContext, useContext, type ReactNode } from "react";
import { FILTER_OPS, type FilterOp } from "../../../src/domain/filters";
import { MAX_SPLIT_BRANCHES, MIN_SPLIT_BRANCHES, splitLabels, WAITABLE_EVENTS } from "../../../src/domain/journey";
import type { JourneyInput } from "../../../src/domain/answers";
import { Field, listedOrNone, orNone } from "../ui";
import { OPERATOR_WORDS } from "../components/operator-words";
import { filterableParams, type Catalog } from "./catalog";
import { HANDLE_LABELS, handlesOf, TRIGGER_ID, type BuilderNode, type OutHandle, type StepSettings, type TriggerData } from "./model";
import { STEP_LABELS } from "./templates";

// Every setting of a node as a plain form: the way to build a journey with the keyboard or a
// screen reader, and the place where the canvas's drag-and-connect ends up being written down.
// Where the journey cannot be saved (a stopped journey, a role that may not edit journeys) the
// same settings are shown as text, as the panel's other read-only screens show theirs: an input
// there would invite a change that goes nowhere.

type Clause = NonNullable<JourneyInput["filter"]>[number];
type MessageChannel = keyof typeof WAITABLE_EVENTS;

const NONE = { value: "", label: "(choose)" };

/** Whether the settings are shown as text (the journey cannot be saved). */
const ReadOnly = createContext(false);

/** A setting shown as text, named as its input would be. */
function Setting({ label, children }: { label: string; children: ReactNode }) {
  return (
    <dl className="setting">
      <dt>{label}</dt>
      <dd>{children}</dd>
    </dl>
  );
}

function TextField({ label, value, onChange, hint, multiline }: { label: string; value: string; onChange: (value: string) => void; hint?: string; multiline?: boolean }) {
  if (useContext(ReadOnly)) return <Setting label={label}>{multiline && value.trim() ? <pre>{value}</pre> : orNone(value)}</Setting>;
  return (
    <Field label={label} hint={hint}>
      {(props) => (multiline ? <textarea {...props} rows={6} value={value} onChange={(e) => onChange(e.target.value)} /> : <input {...props} value={value} onChange={(e) => onChange(e.target.value)} />)}
    </Field>
  );
}

function Choice({ label, value, options, onChange }: { label: string; value: string; options: { value: string; label: string }[]; onChange: (value: string) => void }) {
  if (useContext(ReadOnly)) {
    const chosen = options.find((option) => option.value === value);
    return <Setting label={label}>{chosen && chosen !== NONE ? chosen.label : orNone(value)}</Setting>;
  }
  return (
    <Field label={label}>
      {(props) => (
        <select {...props} value={value} onChange={(e) => onChange(e.target.value)}>
          {options.map((option) => (
            <option key={option.value} value={option.value}>
              {option.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** A clause in words: "PLAN is one of pro, team". */
function clauseWords(clause: Clause): string {
  const op = clause.op ?? "eq";
  if (op === "exists" || op === "not_exists") return `${clause.attribute} ${OPERATOR_WORDS[op]}`;
  return `${clause.attribute} ${OPERATOR_WORDS[op]} ${Array.isArray(clause.value) ? clause.value.join(", ") : String(clause.value ?? "")}`;
}

/** Attribute clauses, all of which must hold (the journey filter, a condition). */
function ClauseEditor({ legend, clauses, attributes, onChange }: { legend: string; clauses: readonly Clause[]; attributes: readonly string[]; onChange: (clauses: Clause[]) => void }) {
  const readOnly = useContext(ReadOnly);
  const change = (i: number, clause: Clause) => onChange(clauses.map((c, j) => (j === i ? clause : c)));
  const valueText = (clause: Clause) => (Array.isArray(clause.value) ? clause.value.join(", ") : String(clause.value ?? ""));
  const withOp = (clause: Clause, op: FilterOp): Clause => {
    if (op === "exists" || op === "not_exists") return { attribute: clause.attribute, op };
    const text = valueText(clause);
    return { ...clause, op, value: op === "in" ? text.split(",").map((v) => v.trim()) : text };
  };
  if (readOnly) {
    return (
      <Setting label={legend}>
        {clauses.length ? (
          <ul>
            {clauses.map((clause, i) => (
              <li key={i}>{clauseWords(clause)}</li>
            ))}
          </ul>
        ) : (
          "none"
        )}
      </Setting>
    );
  }
  return (
    <fieldset>
      <legend>{legend}</legend>
      {clauses.map((clause, i) => (
        <div className="row" key={i} role="group" aria-label={`${legend}, clause ${i + 1}`}>
          <Choice label="Attribute" value={clause.attribute} options={[NONE, ...attributes.map((a) => ({ value: a, label: a }))]} onChange={(attribute) => change(i, { ...clause, attribute })} />
          <Choice label="Comparison" value={clause.op ?? "eq"} options={FILTER_OPS.map((op) => ({ value: op, label: OPERATOR_WORDS[op] }))} onChange={(op) => change(i, withOp(clause, op as FilterOp))} />
          {clause.op !== "exists" && clause.op !== "not_exists" && (
            <TextField
              label="Value"
              hint={clause.op === "in" ? "values separated by commas" : undefined}
              value={valueText(clause)}
              onChange={(text) => change(i, { ...clause, value: clause.op === "in" ? text.split(",").map((v) => v.trim()) : text })}
            />
          )}
          <button type="button" className="link" onClick={() => onChange(clauses.filter((_, j) => j !== i))}>
            Remove clause {i + 1}
          </button>
        </div>
      ))}
      <button type="button" className="secondary" onClick={() => onChange([...clauses, { attribute: "", op: "eq", value: "" }])}>
        Add clause
      </button>
    </fieldset>
  );
}

function TriggerForm({ data, catalog, onChange }: { data: TriggerData; catalog: Catalog; onChange: (data: TriggerData) => void }) {
  const t = data.trigger;
  const setType = (type: string) =>
    onChange({ ...data, trigger: type === "list" ? { type: "list", listid: catalog.lists[0]?.id ?? 0 } : type === "segment" ? { type: "segment", segment: "" } : { type: "activity", activity: "" } });
  return (
    <>
      <Choice
        label="Starts when"
        value={t.type}
        options={[
          { value: "activity", label: "a contact performs an activity" },
          { value: "list", label: "a contact joins a list" },
          { value: "segment", label: "a contact enters a segment" },
        ]}
        onChange={setType}
      />
      {t.type === "activity" && (
        <>
          <Choice label="Activity" value={t.activity} options={[NONE, ...catalog.activities.map((a) => ({ value: a.name, label: a.name }))]} onChange={(activity) => onChange({ ...data, trigger: { type: "activity", activity } })} />
          <ClauseEditor
            legend="Parameters that must hold"
            clauses={t.params ?? []}
            attributes={filterableParams(catalog.activities.find((a) => a.name === t.activity))}
            onChange={(params) => onChange({ ...data, trigger: { ...t, params: params.length ? params : undefined } })}
          />
        </>
      )}
      {t.type === "list" && (
        <Choice label="List" value={String(t.listid)} options={[NONE, ...catalog.lists.map((l) => ({ value: String(l.id), label: l.name }))]} onChange={(id) => onChange({ ...data, trigger: { type: "list", listid: Number(id) } })} />
      )}
      {t.type === "segment" && (
        <Choice label="Segment" value={t.segment ?? ""} options={[NONE, ...catalog.segments.map((s) => ({ value: s.id, label: s.name }))]} onChange={(segment) => onChange({ ...data, trigger: { type: "segment", segment } })} />
      )}
      <ClauseEditor legend="Who may enter" clauses={data.filter} attributes={catalog.attributes.map((a) => a.name)} onChange={(filter) => onChange({ ...data, filter })} />
      <Choice
        label="Goal: leave the journey, converted, when the contact performs"
        value={data.goal?.activity ?? ""}
        options={[{ value: "", label: "(no goal)" }, ...catalog.activities.map((a) => ({ value: a.name, label: a.name }))]}
        onChange={(activity) => onChange({ ...data, goal: activity ? { activity } : undefined })}
      />
    </>
  );
}

type MessageSettings = Extract<StepSettings, { type: "email" | "sms" | "apn" | "bpn" }>;

/** How the panel's frequency caps and quiet hours treat a message step (Settings holds the rules). */
function RuleOptions({ step, topics, onChange }: { step: MessageSettings; topics: Catalog["topics"]; onChange: (step: MessageSettings) => void }) {
  const readOnly = useContext(ReadOnly);
  return (
    <>
      {(topics.length > 0 || step.topic !== undefined) && (
        <Choice
          label="Topic"
          value={step.topic ?? ""}
          options={[{ value: "", label: "None: everyone the journey reaches" }, ...topics.map((t) => ({ value: t.id, label: `${t.name} (skips who left it)` }))]}
          onChange={(topic) => onChange({ ...step, topic: topic || undefined })}
        />
      )}
      {readOnly ? (
        <Setting label="Transactional">{step.exempt ? "yes: not capped, not held by quiet hours" : "no"}</Setting>
      ) : (
        <label>
          <input type="checkbox" checked={step.exempt === true} onChange={(e) => onChange({ ...step, exempt: e.target.checked || undefined })} /> Transactional: not capped, not held by quiet hours
        </label>
      )}
      {step.exempt !== true && (
        <Choice
          label="When the frequency cap is reached"
          value={step.when_capped ?? "skip"}
          options={[
            { value: "skip", label: "Skip the message and go on" },
            { value: "wait", label: "Wait until the cap allows it" },
          ]}
          onChange={(value) => onChange({ ...step, when_capped: value === "wait" ? "wait" : undefined })}
        />
      )}
    </>
  );
}

function StepForm({ step, channel, catalog, onChange }: { step: StepSettings; channel: MessageChannel | undefined; catalog: Catalog; onChange: (step: StepSettings) => void }) {
  const readOnly = useContext(ReadOnly);
  switch (step.type) {
    case "email":
      return (
        <>
          <TextField label="Subject" value={step.subject ?? ""} onChange={(subject) => onChange({ ...step, subject })} />
          <TextField label="Sender name" value={step.sender_name} onChange={(sender_name) => onChange({ ...step, sender_name })} />
          <TextField label="Sender email" value={step.sender_email} onChange={(sender_email) => onChange({ ...step, sender_email })} />
          <TextField label="HTML" multiline value={step.html ?? ""} onChange={(html) => onChange({ ...step, html })} hint="Merge tags such as {{FIRSTNAME}} work as in campaigns" />
          <RuleOptions step={step} topics={catalog.topics} onChange={onChange} />
        </>
      );
    case "sms":
      return (
        <>
          <TextField label="Text" multiline value={step.text ?? ""} onChange={(text) => onChange({ ...step, text })} />
          <RuleOptions step={step} topics={catalog.topics} onChange={onChange} />
        </>
      );
    case "apn":
    case "bpn":
      return (
        <>
          <TextField label="Title" value={step.title ?? ""} onChange={(title) => onChange({ ...step, title: title || undefined })} />
          <TextField label="Text" multiline value={step.text} onChange={(text) => onChange({ ...step, text })} />
          <TextField label="Link" value={step.url ?? ""} onChange={(url) => onChange({ ...step, url: url || undefined })} />
          <RuleOptions step={step} topics={catalog.topics} onChange={onChange} />
        </>
      );
    case "wait_for_event": {
      const forActivity = !Array.isArray(step.events);
      const allowed = channel ? WAITABLE_EVENTS[channel] : [];
      return (
        <>
          <Choice
            label="Wait for"
            value={forActivity ? "activity" : "message"}
            options={[
              { value: "message", label: "an event of the message before" },
              { value: "activity", label: "an activity of the contact" },
            ]}
            onChange={(kind) => onChange({ ...step, events: kind === "activity" ? { activity: "" } : [allowed[0] ?? "open"] })}
          />
          {forActivity ? (
            <Choice
              label="Activity to wait for"
              value={step.events && !Array.isArray(step.events) ? step.events.activity : ""}
              options={[NONE, ...catalog.activities.map((a) => ({ value: a.name, label: a.name }))]}
              onChange={(activity) => onChange({ ...step, events: { activity } })}
            />
          ) : readOnly ? (
            <Setting label={`Events${channel ? ` of the ${channel} before` : ""}`}>{listedOrNone(Array.isArray(step.events) ? step.events : [])}</Setting>
          ) : (
            <fieldset>
              <legend>Events{channel ? ` of the ${channel} before` : ""}</legend>
              {allowed.length === 0 && <p className="muted">Link this wait after a message step to choose its events.</p>}
              {allowed.map((event) => {
                const events = Array.isArray(step.events) ? step.events : [];
                return (
                  <label key={event} className="check">
                    <input type="checkbox" checked={events.includes(event)} onChange={(e) => onChange({ ...step, events: e.target.checked ? [...events, event] : events.filter((x) => x !== event) })} /> {event}
                  </label>
                );
              })}
            </fieldset>
          )}
          <TextField label="Within" hint="30m, 12h or 2d: how long to wait before the timeout branch" value={step.within} onChange={(within) => onChange({ ...step, within })} />
        </>
      );
    }
    case "delay":
      return <TextField label="For" hint="30m, 12h or 2d" value={step.for} onChange={(duration) => onChange({ ...step, for: duration })} />;
    case "condition":
      return <ClauseEditor legend="Attributes that must hold" clauses={step.filter} attributes={catalog.attributes.map((a) => a.name)} onChange={(filter) => onChange({ ...step, filter })} />;
    case "split":
      return <SplitForm step={step} catalog={catalog} onChange={onChange} />;
    case "webhook": {
      const chosen = step.attributes ?? [];
      const params = Object.entries(step.params ?? {});
      return (
        <>
          {/* Operational webhooks only (spec 6.3); one chosen before it was disabled stays listed, marked. */}
          <Choice
            label="Webhook"
            value={step.webhook}
            options={[NONE, ...catalog.webhooks.filter((w) => w.state === "operational" || w.id === step.webhook).map((w) => ({ value: w.id, label: w.state === "operational" ? w.label : `${w.label} (${w.state})` }))]}
            onChange={(webhook) => onChange({ ...step, webhook })}
          />
          {readOnly ? (
            <>
              <Setting label="Attributes to pass">{listedOrNone(chosen)}</Setting>
              <Setting label="Parameters to pass">{listedOrNone(params.map(([key, value]) => `${key}: ${String(value)}`))}</Setting>
            </>
          ) : (
            <>
              <fieldset>
                <legend>Attributes to pass</legend>
                {catalog.attributes.map((a) => (
                  <label key={a.name} className="check">
                    <input type="checkbox" checked={chosen.includes(a.name)} onChange={(e) => onChange({ ...step, attributes: e.target.checked ? [...chosen, a.name] : chosen.filter((x) => x !== a.name) })} /> {a.name}
                  </label>
                ))}
              </fieldset>
              <fieldset>
                <legend>Parameters to pass</legend>
                {params.map(([key, value], i) => (
                  <div className="row" key={i} role="group" aria-label={`Parameter ${i + 1}`}>
                    <TextField label="Name" value={key} onChange={(name) => onChange({ ...step, params: Object.fromEntries(params.map(([k, v], j) => (j === i ? [name, v] : [k, v]))) })} />
                    <TextField label="Value" value={String(value)} onChange={(text) => onChange({ ...step, params: { ...step.params, [key]: text } })} />
                  </div>
                ))}
                <button type="button" className="secondary" onClick={() => onChange({ ...step, params: { ...step.params, [`param${params.length + 1}`]: "" } })}>
                  Add parameter
                </button>
              </fieldset>
            </>
          )}
        </>
      );
    }
  }
}

type SplitSettings = Extract<StepSettings, { type: "split" }>;

/** A split's branches (2 to 4, their percents adding up to 100) and its goal. The winner is promoted from the journey's split results. */
function SplitForm({ step, catalog, onChange }: { step: SplitSettings; catalog: Catalog; onChange: (step: SplitSettings) => void }) {
  const readOnly = useContext(ReadOnly);
  const labels = splitLabels(step.branches.length);
  const total = step.branches.reduce((sum, b) => sum + (Number.isFinite(b.percent) ? b.percent : 0), 0);
  const goalKind = step.goal ? (step.goal.activity !== undefined ? "activity" : step.goal.message_event) : "";
  const setGoal = (kind: string) =>
    onChange({
      ...step,
      goal: kind === "" ? undefined : kind === "activity" ? { activity: "", within: step.goal?.within ?? "7d" } : { message_event: kind as "open" | "click", within: step.goal?.within ?? "7d" },
    });
  return (
    <>
      {readOnly ? (
        <Setting label="Branches">{listedOrNone(step.branches.map((branch, i) => `${labels[i]} ${branch.percent}%`))}</Setting>
      ) : (
        <fieldset>
          <legend>Branches (percents add up to {total})</legend>
          {step.branches.map((branch, i) => (
            <div className="row" key={i} role="group" aria-label={`Branch ${labels[i]}`}>
              <Field label={`Branch ${labels[i]} percent`}>
                {(props) => (
                  <input
                    {...props}
                    type="number"
                    min={1}
                    max={99}
                    value={Number.isFinite(branch.percent) ? branch.percent : ""}
                    onChange={(e) => onChange({ ...step, branches: step.branches.map((b, j) => (j === i ? { ...b, percent: Number(e.target.value) } : b)) })}
                  />
                )}
              </Field>
              {step.branches.length > MIN_SPLIT_BRANCHES && i === step.branches.length - 1 && (
                <button type="button" className="link" onClick={() => onChange({ ...step, branches: step.branches.slice(0, -1), winner: step.winner === labels[i] ? undefined : step.winner })}>
                  Remove branch {labels[i]}
                </button>
              )}
            </div>
          ))}
          {step.branches.length < MAX_SPLIT_BRANCHES && (
            <button type="button" className="secondary" onClick={() => onChange({ ...step, branches: [...step.branches, { percent: 0 }] })}>
              Add branch
            </button>
          )}
        </fieldset>
      )}
      <Choice
        label="Goal"
        value={goalKind ?? ""}
        options={[
          { value: "", label: "(none: count entries only)" },
          { value: "activity", label: "the contact performs an activity" },
          { value: "open", label: "opens a message of this journey" },
          { value: "click", label: "clicks a message of this journey" },
        ]}
        onChange={setGoal}
      />
      {step.goal?.activity !== undefined && (
        <Choice
          label="Goal activity"
          value={step.goal.activity}
          options={[NONE, ...catalog.activities.map((a) => ({ value: a.name, label: a.name }))]}
          onChange={(activity) => onChange({ ...step, goal: { ...step.goal!, activity } })}
        />
      )}
      {step.goal && <TextField label="Goal within" hint="30m, 12h or 2d after the split" value={step.goal.within} onChange={(within) => onChange({ ...step, goal: { ...step.goal!, within } })} />}
      {step.winner && <p className="muted">Branch {step.winner} was promoted: every new entry takes it.</p>}
    </>
  );
}

/** "after email_1", "wait_1: time ran out"… for the Follows choice. */
function followOptions(node: BuilderNode, nodes: readonly BuilderNode[]) {
  return nodes
    .filter((other) => other.id !== node.id)
    .flatMap((other) =>
      handlesOf(other).map((handle) => ({
        value: `${other.id}|${handle}`,
        label: other.id === TRIGGER_ID ? "right after the trigger" : handle === "next" ? `after ${other.id}` : `${other.id}: ${HANDLE_LABELS[handle]}`,
      })),
    );
}

export interface SidePanelProps {
  node: BuilderNode;
  nodes: readonly BuilderNode[];
  edges: readonly Edge[];
  catalog: Catalog;
  /** The channel of the message a wait follows (its events are the ones to choose from). */
  channel: MessageChannel | undefined;
  problems: readonly string[];
  onTrigger: (data: TriggerData) => void;
  onStep: (step: StepSettings) => void;
  onFollow: (source: string | null, handle: OutHandle) => void;
  onRemove: () => void;
  /** The settings as text, with nothing to change or remove (the journey cannot be saved). */
  readOnly: boolean;
}

export function SidePanel({ node, nodes, edges, catalog, channel, problems, onTrigger, onStep, onFollow, onRemove, readOnly }: SidePanelProps) {
  const incoming = edges.find((e) => e.target === node.id);
  return (
    <ReadOnly.Provider value={readOnly}>
      <aside className="journey-side" aria-label={`Settings of ${node.id === TRIGGER_ID ? "the trigger" : node.id}`}>
        <h2>{node.type === "trigger" ? "Trigger" : `${STEP_LABELS[node.data.step.type]} ${node.id}`}</h2>
        {problems.length > 0 && (
          <ul className="node-problems" aria-label="Problems of this node">
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        )}
        {node.type === "trigger" ? (
          <TriggerForm data={node.data} catalog={catalog} onChange={onTrigger} />
        ) : (
          <>
            <Choice
              label="Follows"
              value={incoming ? `${incoming.source}|${incoming.sourceHandle ?? "next"}` : ""}
              options={[{ value: "", label: "(not linked)" }, ...followOptions(node, nodes)]}
              onChange={(value) => {
                const [source, handle] = value.split("|");
                onFollow(source || null, (handle ?? "next") as OutHandle);
              }}
            />
            <StepForm step={node.data.step} channel={channel} catalog={catalog} onChange={onStep} />
            {!readOnly && (
              <button type="button" className="danger" onClick={onRemove}>
                Remove step
              </button>
            )}
          </>
        )}
      </aside>
    </ReadOnly.Provider>
  );
}
