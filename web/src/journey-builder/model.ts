import type { Edge, Node } from "@xyflow/react";
import { LAYOUT_LIMIT } from "../../../src/domain/journey-layout";
import type { JourneyInput, JourneyLayout, StepInput } from "../../../src/domain/answers";
import { splitLabels, type BranchLabel } from "../../../src/domain/journey";

// The canvas and the journey definition are two views of one thing: a node per step plus the
// trigger, and an edge per "follows" link. Structure (after, on, then, else) lives only in the
// edges while editing and is written back into the steps when the canvas becomes a definition.

export const TRIGGER_ID = "@trigger";

type SplitInput = Extract<StepInput, { type: "split" }>;
/** A split's settings keep its branches' shares; where each branch leads is an edge. */
type SplitSettings = Omit<SplitInput, "id" | "after" | "on" | "branches"> & { branches: Array<Omit<SplitInput["branches"][number], "then">> };
/** A step's own settings: everything but its id (the node's) and its links (the edges'). */
export type StepSettings =
  | (Exclude<StepInput, SplitInput> extends infer S ? (S extends unknown ? Omit<S, "id" | "after" | "on" | "then" | "else"> : never) : never)
  | SplitSettings;
export type StepType = StepInput["type"];

export interface TriggerData extends Record<string, unknown> {
  trigger: JourneyInput["trigger"];
  /** Who may enter: the journey's attribute filter. */
  filter: NonNullable<JourneyInput["filter"]>;
  /** The journey's goal: reaching it ends the contact's way through, as converted. */
  goal?: JourneyInput["goal"];
}
export interface StepData extends Record<string, unknown> {
  step: StepSettings;
}
export type TriggerNode = Node<TriggerData, "trigger">;
export type StepNode = Node<StepData, "step">;
export type BuilderNode = TriggerNode | StepNode;

/** Source handles: where a step's next steps hang. A wait has two, a condition its yes and no, a split one per branch. */
export type OutHandle = "next" | "event" | "timeout" | "then" | "else" | BranchLabel;

export type NodeKind = StepType | "trigger";
export const kindOf = (node: BuilderNode): NodeKind => (node.type === "trigger" ? "trigger" : node.data.step.type);

/** The handles of a kind of node; a split's, one per branch of `branches`. */
export function outHandles(kind: NodeKind, branches = 2): OutHandle[] {
  if (kind === "wait_for_event") return ["event", "timeout"];
  if (kind === "condition") return ["then", "else"];
  if (kind === "split") return splitLabels(branches);
  return ["next"];
}

/** The handles of a node as it is now. */
export function handlesOf(node: BuilderNode): OutHandle[] {
  return outHandles(kindOf(node), node.type === "step" && node.data.step.type === "split" ? node.data.step.branches.length : undefined);
}

/** Handles that lead to one step only (a condition's yes and no, a split's branches). */
export const singleTarget = (handle: OutHandle) => handle !== "next" && handle !== "event" && handle !== "timeout";

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
  A: "branch A",
  B: "branch B",
  C: "branch C",
  D: "branch D",
};

function withoutLinks(step: StepInput): StepSettings {
  const { id: _id, after: _after, on: _on, ...rest } = step as StepInput & { then?: string; else?: string };
  if (rest.type === "condition") {
    const { then: _then, else: _else, ...condition } = rest;
    return condition as StepSettings;
  }
  if (rest.type === "split") return { ...rest, branches: rest.branches.map(({ then: _then, ...branch }) => branch) } as StepSettings;
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
export function canvasOf(definition: Pick<JourneyInput, "trigger" | "filter" | "steps" | "goal">, saved?: JourneyLayout | null): { nodes: BuilderNode[]; edges: Edge[] } {
  const steps = definition.steps;
  const byId = new Map(steps.map((s) => [s.id, s]));
  const targeted = new Set<string>();
  const edges: Edge[] = [];
  for (const step of steps) {
    if (step.type === "condition") {
      if (step.then !== undefined) edges.push(edgeBetween(step.id, "then", step.then)), targeted.add(step.then);
      if (step.else !== undefined) edges.push(edgeBetween(step.id, "else", step.else)), targeted.add(step.else);
    }
    if (step.type === "split") {
      const labels = splitLabels(step.branches.length);
      step.branches.forEach((branch, i) => {
        if (branch.then !== undefined) edges.push(edgeBetween(step.id, labels[i]!, branch.then)), targeted.add(branch.then);
      });
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
    { id: TRIGGER_ID, type: "trigger", position: at(TRIGGER_ID), data: { trigger: definition.trigger, filter: [...(definition.filter ?? [])], ...(definition.goal ? { goal: definition.goal } : {}) }, deletable: false },
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
    if (typeOf.get(edge.source) === "condition" || typeOf.get(edge.source) === "split") link(edge.source, handle, edge.target);
    else {
      link(edge.target, "after", edge.source);
      if (typeOf.get(edge.source) === "wait_for_event") link(edge.target, "on", handle);
    }
  }
  const definition = {
    name,
    trigger: trigger?.data.trigger ?? { type: "activity", activity: "" },
    filter: trigger?.data.filter ?? [],
    ...(trigger?.data.goal ? { goal: trigger.data.goal } : {}),
    steps: steps.map((node) => {
      const step = node.data.step;
      if (step.type !== "split") return { ...step, id: node.id, ...links.get(node.id) } as StepInput;
      // A split's links are its branches' then, by label; what follows the split itself is its `after`.
      const { A: _a, B: _b, C: _c, D: _d, ...own } = links.get(node.id) ?? {};
      const labels = splitLabels(step.branches.length);
      const thens = links.get(node.id) ?? {};
      return { ...step, id: node.id, ...own, branches: step.branches.map((b, i) => (thens[labels[i]!] ? { ...b, then: thens[labels[i]!] } : b)) } as StepInput;
    }),
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
