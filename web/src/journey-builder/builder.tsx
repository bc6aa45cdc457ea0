import { Background, Controls, ReactFlow, ReactFlowProvider, useEdgesState, useNodesState, useReactFlow, type Connection, type Edge } from "@xyflow/react";
import "@xyflow/react/dist/style.css";
import { useMemo, useState, type DragEvent } from "react";
import { isMessageStep, previousMessage, WAITABLE_EVENTS, type JourneyDefinition } from "../../../src/domain/journey";
import { sameJson } from "../../../src/lib/same-json";
import { ApiFailure, type FieldError } from "../api";
import type { JourneyInput, JourneyLayout } from "../../../src/domain/answers";
import { ErrorNote, Field, failureOf } from "../ui";
import { useCatalog } from "./catalog";
import { journeyProblems, placeProblems } from "./check";
import {
  canvasOf,
  definitionOf,
  edgeBetween,
  freshStepId,
  handlesOf,
  isStepNode,
  layoutOf,
  singleTarget,
  TRIGGER_ID,
  type BuilderNode,
  type OutHandle,
  type StepNode,
  type StepType,
} from "./model";
import { NODE_TYPES, NodeStateContext, type NodeCounters } from "./nodes";
import { SidePanel } from "./side-panel";
import { newStep, PALETTE } from "./templates";

export interface BuilderProps {
  panelId: string;
  name: string;
  definition: Pick<JourneyInput, "trigger" | "filter" | "steps" | "goal">;
  /** Where the nodes were saved; a node without a position is laid out as a tree. */
  layout?: JourneyLayout | null;
  /** Live figures per node id, when the journey has run. */
  counters?: Map<string, NodeCounters>;
  /** Saves the definition and where its nodes are (absent: the journey can no longer be edited); a refusal is an ApiFailure whose fields name the steps. */
  save?: (definition: JourneyInput, layout: JourneyLayout) => Promise<void>;
  saveLabel?: string;
  /** The save button's label while only nodes have moved since `definition` (default: saveLabel). */
  layoutSaveLabel?: string;
  /** Saves, then starts the journey (drafts only). */
  start?: (definition: JourneyInput, layout: JourneyLayout) => Promise<void>;
}

const DRAG_TYPE = "application/x-journey-step";

/** The canvas: a palette to drag steps from, the graph, and the side panel of the selected node. */
export default function JourneyBuilder(props: BuilderProps) {
  return (
    <ReactFlowProvider>
      <Canvas {...props} />
    </ReactFlowProvider>
  );
}

function Canvas({ panelId, name: savedName, definition: saved, layout: savedLayout, counters, save, saveLabel, layoutSaveLabel, start }: BuilderProps) {
  const initial = useMemo(() => canvasOf(saved, savedLayout), [saved, savedLayout]);
  // What was saved, as the canvas writes a definition: compared with the canvas's to tell a move from an edit.
  const savedDefinition = useMemo(() => definitionOf(savedName, initial.nodes, initial.edges).definition, [savedName, initial]);
  const [nodes, setNodes, onNodesChange] = useNodesState<BuilderNode>(initial.nodes);
  const [edges, setEdges, onEdgesChange] = useEdgesState<Edge>(initial.edges);
  const [name, setName] = useState(savedName);
  const [selected, setSelected] = useState<string>(TRIGGER_ID);
  const [serverProblems, setServerProblems] = useState<FieldError[]>([]);
  const [failure, setFailure] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState<string>();
  const { catalog, error: catalogError } = useCatalog(panelId);
  const flow = useReactFlow<BuilderNode, Edge>();

  const { definition, stepIds, unlinked } = definitionOf(name, nodes, edges);
  // The graph walks (previousMessage) read only ids, types and links, which the unchecked definition has.
  const parsedSteps = definition.steps as JourneyDefinition["steps"];
  const local = useMemo(() => journeyProblems(definition), [JSON.stringify(definition)]); // eslint-disable-line react-hooks/exhaustive-deps
  const unlinkedProblems = unlinked.map((id) => ({ field: `steps.${stepIds.indexOf(id)}`, message: "is not linked: connect it from the trigger or a step" }));
  const all = [...local, ...unlinkedProblems, ...serverProblems.filter((p) => !local.some((l) => l.field === p.field && l.message === p.message))];
  const placed = placeProblems(all, stepIds);
  const onlyMoved = sameJson(definition, savedDefinition);
  const edited = () => {
    setServerProblems([]);
    setDone(undefined);
  };

  const link = (source: string, handle: OutHandle, target: string) =>
    setEdges((current) => [
      // A step follows one step only, and a condition's yes or no, or a split's branch, leads to one step.
      ...current.filter((e) => e.target !== target && !(e.source === source && e.sourceHandle === handle && singleTarget(handle))),
      edgeBetween(source, handle, target),
    ]);

  const onConnect = (connection: Connection) => {
    if (connection.source === connection.target || connection.target === TRIGGER_ID) return;
    link(connection.source, (connection.sourceHandle ?? "next") as OutHandle, connection.target);
    edited();
  };

  /** A new step under `parent` (the selected node when added from the palette by keyboard), linked from its first handle. */
  const addStep = (type: StepType, position?: { x: number; y: number }, parent?: BuilderNode) => {
    const id = freshStepId(type, nodes);
    // A wait added under a step waits for what that branch's last message can report, else for an activity.
    const parentStep = parent && isStepNode(parent) ? parsedSteps.find((s) => s.id === parent.id) : undefined;
    const channel = parentStep && (isMessageStep(parentStep) ? parentStep : previousMessage(parsedSteps, parentStep))?.type;
    const settings = newStep(type);
    if (settings.type === "wait_for_event" && parent) settings.events = channel ? [WAITABLE_EVENTS[channel][0]!] : { activity: "" };
    const node: StepNode = { id, type: "step", position: position ?? { x: parent?.position.x ?? 0, y: (parent?.position.y ?? 0) + 170 }, data: { step: settings }, selected: true };
    setNodes((current) => [...current.map((n) => ({ ...n, selected: false })), node]);
    if (parent) link(parent.id, handlesOf(parent)[0]!, id);
    setSelected(id);
    edited();
  };

  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    const type = event.dataTransfer.getData(DRAG_TYPE) as StepType;
    if (!type) return;
    addStep(type, flow.screenToFlowPosition({ x: event.clientX, y: event.clientY }));
  };

  const run = async (work: (definition: JourneyInput, layout: JourneyLayout) => Promise<void>, message: string) => {
    setBusy(true);
    setFailure(undefined);
    setDone(undefined);
    try {
      await work(definition, layoutOf(nodes));
      setServerProblems([]);
      setDone(message);
    } catch (problem) {
      if (problem instanceof ApiFailure && problem.errors.length) setServerProblems(problem.errors);
      setFailure(failureOf(problem).message);
    } finally {
      setBusy(false);
    }
  };

  const selectedNode = nodes.find((n) => n.id === selected);
  const selectedStep = selectedNode && isStepNode(selectedNode) ? parsedSteps.find((s) => s.id === selectedNode.id) : undefined;
  const channel = selectedStep ? previousMessage(parsedSteps, selectedStep)?.type : undefined;
  const blocked = all.length > 0;
  // Without a save (a stopped journey, or a role that may not edit) the journey is only read:
  // nothing to rename, add, link, move or remove, and the side panel shows settings as text.
  const readOnly = !save;

  return (
    <div className="journey-builder">
      {save && (
        <div className="row">
          <Field label="Journey name" error={placed.general.find((p) => p.startsWith("name:"))?.slice(6)}>
            {(p) => <input {...p} value={name} onChange={(e) => (setName(e.target.value), edited())} />}
          </Field>
          {/* An unlinked step would be saved as a first step: link or remove it first. */}
          <button type="button" disabled={busy || unlinked.length > 0} onClick={() => run(save, "Saved.")}>
            {(onlyMoved && layoutSaveLabel) || saveLabel}
          </button>
          {start && (
            <button type="button" disabled={busy || blocked} title={blocked ? "Fix the problems marked on the canvas first" : undefined} onClick={() => run(start, "Started.")}>
              Start journey
            </button>
          )}
          {done && (
            <span role="status" className="ok">
              {done}
            </span>
          )}
        </div>
      )}
      <ErrorNote error={failure ?? catalogError} />
      {placed.general.filter((p) => !p.startsWith("name:")).length > 0 && (
        <ul className="node-problems" aria-label="Problems of the journey">
          {placed.general
            .filter((p) => !p.startsWith("name:"))
            .map((p) => (
              <li key={p}>{p}</li>
            ))}
        </ul>
      )}
      <div className={readOnly ? "journey-layout read-only" : "journey-layout"}>
        {!readOnly && (
          <nav className="journey-palette" aria-label="Steps to add">
            <p className="muted">Drag onto the canvas, or press to add after the selected node.</p>
            {PALETTE.map((item) => (
              <button
                key={item.type}
                type="button"
                className="secondary palette-item"
                draggable
                title={item.hint}
                onDragStart={(event) => {
                  event.dataTransfer.setData(DRAG_TYPE, item.type);
                  event.dataTransfer.effectAllowed = "move";
                }}
                onClick={() => addStep(item.type, undefined, selectedNode ?? nodes[0])}
              >
                {item.label}
              </button>
            ))}
          </nav>
        )}
        <div className="journey-canvas" onDragOver={(event) => (event.preventDefault(), (event.dataTransfer.dropEffect = "move"))} onDrop={onDrop}>
          <NodeStateContext.Provider value={{ counters: counters ?? new Map(), problems: placed.byNode, webhooks: new Map(catalog?.webhooks.map((w) => [w.id, w.label])), lists: new Map(catalog?.lists.map((l) => [l.id, l.name])), segments: new Map(catalog?.segments.map((g) => [g.id, g.name])) }}>
            <ReactFlow<BuilderNode, Edge>
              nodes={nodes}
              edges={edges}
              nodeTypes={NODE_TYPES}
              onNodesChange={(changes) => {
                onNodesChange(changes);
                if (changes.some((c) => c.type === "remove")) edited();
                // A node let go after a drag is a change still to save (it fixes no problem the server named).
                else if (changes.some((c) => c.type === "position" && c.dragging === false)) setDone(undefined);
              }}
              onEdgesChange={(changes) => {
                onEdgesChange(changes);
                if (changes.some((c) => c.type === "remove")) edited();
              }}
              onConnect={onConnect}
              nodesConnectable={!readOnly}
              nodesDraggable={!readOnly}
              deleteKeyCode={readOnly ? null : undefined}
              onSelectionChange={({ nodes: chosen }) => chosen[0] && setSelected(chosen[0].id)}
              fitView
              fitViewOptions={{ maxZoom: 1 }}
              ariaLabelConfig={{ "node.a11yDescription.default": `Press enter or space to select this step; the side panel then shows its settings.${readOnly ? "" : " Arrow keys move it."}` }}
            >
              <Background />
              {/* Its lock would hand a read-only canvas its linking and moving back. */}
              <Controls showInteractive={!readOnly} />
            </ReactFlow>
          </NodeStateContext.Provider>
        </div>
        {selectedNode && catalog && (
          <SidePanel
            node={selectedNode}
            nodes={nodes}
            edges={edges}
            catalog={catalog}
            channel={channel}
            problems={placed.byNode.get(selectedNode.id) ?? []}
            readOnly={readOnly}
            onTrigger={(data) => (setNodes((current) => current.map((n) => (n.id === TRIGGER_ID ? { ...n, data } : n)) as BuilderNode[]), edited())}
            onStep={(step) => (setNodes((current) => current.map((n) => (n.id === selectedNode.id ? { ...n, data: { step } } : n)) as BuilderNode[]), edited())}
            onFollow={(source, handle) => {
              if (source) link(source, handle, selectedNode.id);
              else setEdges((current) => current.filter((e) => e.target !== selectedNode.id));
              edited();
            }}
            onRemove={() => {
              setNodes((current) => current.filter((n) => n.id !== selectedNode.id));
              setEdges((current) => current.filter((e) => e.source !== selectedNode.id && e.target !== selectedNode.id));
              setSelected(TRIGGER_ID);
              edited();
            }}
          />
        )}
      </div>
    </div>
  );
}
