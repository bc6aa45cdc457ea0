import { Handle, Position, type NodeProps } from "@xyflow/react";
import { createContext, useContext } from "react";
import { splitLabels } from "../../../src/domain/journey";
import { HANDLE_LABELS, outHandles, TRIGGER_ID, type NodeKind, type StepNode, type StepSettings, type TriggerNode } from "./model";
import { STEP_LABELS } from "./templates";

/** What a node shows besides its settings: its counters and its problems. */
export interface NodeState {
  counters: Map<string, NodeCounters>;
  problems: Map<string, string[]>;
  /** Webhook labels by id, for the webhook steps' summaries. */
  webhooks: Map<string, string>;
  /** List and segment names by id, for the trigger's summary. */
  lists?: Map<number, string>;
  segments?: Map<string, string>;
}
/** Figures by their label, in the order shown: "entered 3 · waiting 1…". */
export type NodeCounters = Record<string, number>;
export const NodeStateContext = createContext<NodeState>({ counters: new Map(), problems: new Map(), webhooks: new Map() });

function summary(step: StepSettings, webhooks: Map<string, string>): string {
  switch (step.type) {
    case "email":
      return step.subject || "no subject yet";
    case "sms":
    case "apn":
    case "bpn":
      return step.text || (step.type === "sms" && step.template ? `template ${step.template}` : "no text yet");
    case "wait_for_event":
      return `${Array.isArray(step.events) ? step.events.join(" or ") : `activity “${step.events.activity}”`} within ${step.within}`;
    case "delay":
      return `for ${step.for}`;
    case "condition":
      return `${step.filter.length} clause${step.filter.length === 1 ? "" : "s"} on attributes`;
    case "webhook":
      return step.webhook ? `to ${webhooks.get(step.webhook) ?? step.webhook}` : "no webhook chosen";
    case "split": {
      const labels = splitLabels(step.branches.length);
      const shares = step.branches.map((b, i) => `${labels[i]} ${b.percent}%`).join(" · ");
      const goal = step.goal ? `; goal ${step.goal.activity ? `“${step.goal.activity}”` : step.goal.message_event} within ${step.goal.within}` : "";
      return step.winner ? `all to ${step.winner} (promoted)${goal}` : `${shares}${goal}`;
    }
  }
}

function triggerSummary(data: TriggerNode["data"], names: Pick<NodeState, "lists" | "segments">): string {
  const t = data.trigger;
  const who =
    (data.filter.length ? `, ${data.filter.length} attribute clause${data.filter.length === 1 ? "" : "s"}` : "") + (data.goal ? `; goal “${data.goal.activity}”` : "");
  if (t.type === "activity") return `activity “${t.activity}”${who}`;
  // Named as the side panel names them; the id only while the names load or when it names none.
  if (t.type === "list") return `joins list ${names.lists?.get(Number(t.listid)) ? `“${names.lists.get(Number(t.listid))}”` : t.listid}${who}`;
  const segment = t.segment === undefined ? undefined : names.segments?.get(t.segment);
  return `segment ${segment ? `“${segment}”` : (t.segment ?? "(filter)")}${who}`;
}

function Counters({ id }: { id: string }) {
  const figures = useContext(NodeStateContext).counters.get(id);
  if (!figures) return null;
  return (
    <p className="node-counters" aria-label={`Counters of ${id}`}>
      {Object.entries(figures).map(([label, n]) => (
        <span key={label}>
          {label} {n}{" "}
        </span>
      ))}
    </p>
  );
}

function Problems({ id }: { id: string }) {
  const problems = useContext(NodeStateContext).problems.get(id);
  if (!problems?.length) return null;
  return (
    <ul className="node-problems" aria-label={`Problems of ${id}`}>
      {problems.map((problem) => (
        <li key={problem}>{problem}</li>
      ))}
    </ul>
  );
}

function OutHandles({ id, kind, branches }: { id: string; kind: NodeKind; branches?: number }) {
  const handles = outHandles(kind, branches);
  return handles.map((handle, i) => (
    <Handle
      key={handle}
      type="source"
      id={handle}
      position={Position.Bottom}
      style={handles.length > 1 ? { left: `${((i + 1) * 100) / (handles.length + 1)}%` } : undefined}
      title={handle === "next" ? "next step" : HANDLE_LABELS[handle]}
    >
      {handles.length > 1 ? <span className="handle-label">{HANDLE_LABELS[handle]}</span> : null}
    </Handle>
  ));
}

export function TriggerNodeView(props: NodeProps<TriggerNode>) {
  const state = useContext(NodeStateContext);
  const problems = state.problems.get(TRIGGER_ID);
  return (
    <div className={`journey-node trigger${problems?.length ? " has-problem" : ""}${props.selected ? " selected" : ""}`}>
      <strong>Trigger</strong>
      <p>{triggerSummary(props.data, state)}</p>
      <Counters id={TRIGGER_ID} />
      <Problems id={TRIGGER_ID} />
      <OutHandles id={TRIGGER_ID} kind="trigger" />
    </div>
  );
}

export function StepNodeView(props: NodeProps<StepNode>) {
  const state = useContext(NodeStateContext);
  const problems = state.problems.get(props.id);
  const step = props.data.step;
  return (
    <div className={`journey-node step-${step.type}${problems?.length ? " has-problem" : ""}${props.selected ? " selected" : ""}`}>
      <Handle type="target" id="in" position={Position.Top} title="follows" />
      <strong>
        {STEP_LABELS[step.type]} <code>{props.id}</code>
      </strong>
      <p>{summary(step, state.webhooks)}</p>
      <Counters id={props.id} />
      <Problems id={props.id} />
      <OutHandles id={props.id} kind={step.type} branches={step.type === "split" ? step.branches.length : undefined} />
    </div>
  );
}

export const NODE_TYPES = { trigger: TriggerNodeView, step: StepNodeView };
