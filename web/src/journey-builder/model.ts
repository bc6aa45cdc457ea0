import type { Edge, Node } from "@xyflow/react";
import { LAYOUT_LIMIT } from "../../../src/domain/journey-layout";
import type { JourneyInput, JourneyLayout, StepInput } from "../../../src/domain/answers";

// The canvas and the journey definition are two views of one thing: a node per step plus the
// trigger, and an edge per "follows" link. Structure (after, on, then, else) lives only in the
// edges while editing and is written back into the steps when the canvas becomes a definition.

export const TRIGGER_ID = "@trigger";

/** A step's own settings: everything but its id (the node's) and its links (the edges'). */
export type StepSettings = StepInput extends infer S ? (S extends unknown ? Omit<S, "id" | "after" | "on" | "then" | "else"> : never) : never;
export type StepType = StepInput["type"];

export interface TriggerData extends Record<string, unknown> {
  trigger: JourneyInput["trigger"];
  /** Who may enter: the journey's attribute filter. */
  filter: NonNullable<JourneyInput["filter"]>;
}
export interface StepData extends Record<string, unknown> {
  step: StepSettings;
}
export type TriggerNode = Node<TriggerData, "trigger">;
export type StepNode = Node<StepData, "step">;
export type BuilderNode = TriggerNode | StepNode;

/** Source handles: where a step's next steps hang. A wait has two, a condition its yes and no. */
export type OutHandle = "next" | "event" | "timeout" | "then" | "else";

export type NodeKind = StepType | "trigger";
export const kindOf = (node: BuilderNode): NodeKind => (node.type === "trigger" ? "trigger" : node.data.step.type);

export function outHandles(kind: NodeKind): OutHandle[] {
  if (kind === "wait_for_event") return ["event", "timeout"];
  if (kind === "condition") return ["then", "else"];
  return ["next"];
}

export const isStepNode = (node: BuilderNode): node is StepNode => node.type === "step";

export function edgeBetween(source: string, handle: OutHandle, target: string): Edge {
  return {
    id: `${source}:${handle}->${target}`,
    source,
    sourceHandle: handle,
    target,
    targetHandle: "in",
    ...(handle === "next" ? {} : { label: HANDLE_LABELS[handle] }),
  };
}

export const HANDLE_LABELS: Record<OutHandle, string> = {
  next: "then",
  event: "event came",
  timeout: "time ran out",
  then: "yes",
  else: "no",
};

function withoutLinks(step: StepInput): StepSettings {
  const { id: _id, after: _after, on: _on, ...rest } = step as StepInput & { then?: string; else?: string };
  if (rest.type === "condition") {
    const { then: _then, else: _else, ...condition } = rest;
    return condition as StepSettings;
  }
  return rest as StepSettings;
}

const COLUMN = 280;
const ROW = 170;

/** Steps form a tree under the trigger (decision 0015): leaves side by side, parents above the middle of their children. */
function treeLayout(edges: readonly Edge[], rootId: string): Map<string, { x: number; y: number }> {
  const children = new Map<string, string[]>();
  for (const edge of edges) children.set(edge.source, [...(children.get(edge.source) ?? []), edge.target]);
  const placed = new Map<string, { x: number; y: number }>();
  let nextLeaf = 0;
  const place = (id: string, depth: number): number => {
    if (placed.has(id)) return placed.get(id)!.x;
    const kids = (children.get(id) ?? []).filter((kid) => !placed.has(kid));
    placed.set(id, { x: 0, y: depth * ROW });
    const xs = kids.map((kid) => place(kid, depth + 1));
    const x = xs.length ? (Math.min(...xs) + Math.max(...xs)) / 2 : nextLeaf++ * COLUMN;
    placed.set(id, { x, y: depth * ROW });
    return x;
  };
  place(rootId, 0);
  return placed;
}

/**
 * A definition (saved or a template) as nodes and edges: each node where the saved layout puts
 * it, else where the tree layout does (steps added through the API, or before layouts were kept).
 */
export function canvasOf(definition: Pick<JourneyInput, "trigger" | "filter" | "steps">, saved?: JourneyLayout | null): { nodes: BuilderNode[]; edges: Edge[] } {
  const steps = definition.steps;
  const byId = new Map(steps.map((s) => [s.id, s]));
  const targeted = new Set<string>();
  const edges: Edge[] = [];
  for (const step of steps) {
    if (step.type === "condition") {
      if (step.then !== undefined) edges.push(edgeBetween(step.id, "then", step.then)), targeted.add(step.then);
      if (step.else !== undefined) edges.push(edgeBetween(step.id, "else", step.else)), targeted.add(step.else);
    }
  }
  for (const step of steps) {
    if (step.after !== undefined) {
      const parent = byId.get(step.after);
      edges.push(edgeBetween(step.after, parent?.type === "wait_for_event" ? (step.on ?? "event") : "next", step.id));
    } else if (!targeted.has(step.id)) edges.push(edgeBetween(TRIGGER_ID, "next", step.id));
  }
  const layout = treeLayout(edges, TRIGGER_ID);
  let loose = 0;
  const stored = (id: string) => (id === TRIGGER_ID ? saved?.trigger : saved?.steps[id]);
  const at = (id: string) => stored(id) ?? layout.get(id) ?? { x: -COLUMN, y: ROW * ++loose };
  const nodes: BuilderNode[] = [
    { id: TRIGGER_ID, type: "trigger", position: at(TRIGGER_ID), data: { trigger: definition.trigger, filter: [...(definition.filter ?? [])] }, deletable: false },
    ...steps.map((step): StepNode => ({ id: step.id, type: "step", position: at(step.id), data: { step: withoutLinks(step) } })),
  ];
  return { nodes, edges };
}

/**
 * The definition the canvas shows, for the schema, the graph check and the API. Steps keep the
 * order of their nodes, so `steps.<i>` in a problem names the i-th step node; a step that no
 * edge reaches is listed in `unlinked` (the API would take it as a first step).
 */
export function definitionOf(name: string, nodes: readonly BuilderNode[], edges: readonly Edge[]): { definition: JourneyInput; stepIds: string[]; unlinked: string[] } {
  const trigger = nodes.find((n): n is TriggerNode => n.type === "trigger");
  const steps = nodes.filter(isStepNode);
  const typeOf = new Map(nodes.map((n) => [n.id, n.type === "trigger" ? "trigger" : n.data.step.type]));
  const links = new Map<string, Record<string, string>>();
  const link = (id: string, key: string, value: string) => links.set(id, { ...links.get(id), [key]: value });
  const reached = new Set<string>();
  for (const edge of edges) {
    const handle = (edge.sourceHandle ?? "next") as OutHandle;
    reached.add(edge.target);
    if (edge.source === TRIGGER_ID) continue;
    if (typeOf.get(edge.source) === "condition") link(edge.source, handle, edge.target);
    else {
      link(edge.target, "after", edge.source);
      if (typeOf.get(edge.source) === "wait_for_event") link(edge.target, "on", handle);
    }
  }
  const definition = {
    name,
    trigger: trigger?.data.trigger ?? { type: "activity", activity: "" },
    filter: trigger?.data.filter ?? [],
    steps: steps.map((node) => ({ ...node.data.step, id: node.id, ...links.get(node.id) }) as StepInput),
  } as JourneyInput;
  return { definition, stepIds: steps.map((s) => s.id), unlinked: steps.filter((s) => !reached.has(s.id)).map((s) => s.id) };
}

/** Where the nodes are, as the API keeps it: whole pixels, within the range it takes. */
export function layoutOf(nodes: readonly BuilderNode[]): JourneyLayout {
  const coordinate = (value: number) => Math.max(-LAYOUT_LIMIT, Math.min(LAYOUT_LIMIT, Math.round(value)));
  const point = (node: BuilderNode) => ({ x: coordinate(node.position.x), y: coordinate(node.position.y) });
  const trigger = nodes.find((n) => n.type === "trigger");
  return { ...(trigger ? { trigger: point(trigger) } : {}), steps: Object.fromEntries(nodes.filter(isStepNode).map((n) => [n.id, point(n)])) };
}

/** A step id not yet used on the canvas: `email_1`, `email_2`… */
export function freshStepId(type: StepType, nodes: readonly BuilderNode[]): string {
  const taken = new Set(nodes.map((n) => n.id));
  for (let i = 1; ; i++) if (!taken.has(`${type}_${i}`)) return `${type}_${i}`;
}
