import { lazy, Suspense, useMemo, useState } from "react";
import { admin } from "../api";
import type { NodeCounters } from "../journey-builder/nodes";
import { BLANK, TEMPLATES, type JourneyTemplate } from "../journey-builder/templates";
import { Link, navigate } from "../router";
import { JourneyReport } from "./journey-report";
import type { ListView, SegmentView } from "../../../src/domain/answers";
import type {
  JourneyBody,
  JourneyInput,
  JourneyLayout,
  JourneyReport as JourneyReportView,
  JourneySimulationBody,
  JourneySimulationResult,
  JourneySimulationView,
  JourneySplitView,
  JourneyStatusChange,
  JourneyVersionView,
  JourneyView,
  SplitWinnerBody,
} from "../../../src/domain/answers";
import { DataTable, PAGE_SIZE } from "../components/data-table";
import { ErrorNote, failureOf, formatTime, listedOrNone, Loading, Screen, useEvery, useLoad } from "../ui";
import { useConfirm } from "../components/confirm-dialog";
import { EmptyFor, lockFor, may, RoleNote } from "../components/role";
import type { PanelRef, ScreenProps } from "../screen-props";

/** The trigger's node id on the canvas (journey-builder/model.ts, not imported: it would pull the canvas into this chunk). */
const TRIGGER_NODE = "@trigger";

// The canvas (React Flow and the journey schema) loads only on the screens that show it.
const JourneyBuilder = lazy(() => import("../journey-builder/builder"));

const journeyPath = (id: string) => `/journeys/${encodeURIComponent(id)}`;

/** List and segment names by id, so a trigger reads in words. */
interface AudienceNames {
  lists: Map<number, string>;
  segments: Map<string, string>;
}

function useAudienceNames(panelId: string): AudienceNames | undefined {
  return useLoad(async (): Promise<AudienceNames> => {
    const [lists, segments] = await Promise.all([admin<{ lists: ListView[] }>("GET", panelId, "/lists"), admin<{ segments: SegmentView[] }>("GET", panelId, "/segments")]);
    return { lists: new Map(lists.lists.map((l) => [l.id, l.name])), segments: new Map(segments.segments.map((g) => [g.id, g.name])) };
  }, [panelId]).data;
}

function triggerText(trigger: JourneyView["trigger"], names: AudienceNames | undefined): string {
  switch (trigger.type) {
    case "activity":
      return `activity “${trigger.activity}”`;
    case "list": {
      const name = names?.lists.get(Number(trigger.listid));
      return `joins list ${name ? `“${name}”` : trigger.listid}`;
    }
    case "segment": {
      if (trigger.segment === undefined) return "enters a segment by filter";
      const name = names?.segments.get(trigger.segment);
      return `enters segment ${name ? `“${name}”` : trigger.segment}`;
    }
    default:
      return (trigger as { type: string }).type;
  }
}

export function Journeys({ panel }: ScreenProps) {
  const { data, error } = useLoad(() => admin<{ journeys: JourneyView[] }>("GET", panel.id, "/journeys"), [panel.id]);
  const names = useAudienceNames(panel.id);
  const base = `/panels/${encodeURIComponent(panel.id)}`;
  return (
    <Screen title="Journeys" actions={may(panel, "journeys") ? <Link href={`${base}/journeys/new`}>New journey</Link> : undefined}>
      <RoleNote panel={panel} work="journeys" what="Building, starting, pausing and stopping journeys" />
      <ErrorNote error={error} />
      <DataTable
        caption="Journeys of the panel"
        rows={data?.journeys}
        rowKey={(journey) => journey.id}
        pageSize={PAGE_SIZE}
        empty={
          <EmptyFor panel={panel} work="journeys" title="No journeys yet" otherwise="Journeys built on the canvas or defined through the admin API are listed here.">
            Build one on the canvas with “New journey”, from a blank page or one of the templates; journeys defined through the admin API appear here too.
          </EmptyFor>
        }
        columns={[
          { header: "Name", cell: (journey) => <Link href={base + journeyPath(journey.id)}>{journey.name}</Link>, sortBy: (journey) => journey.name },
          { header: "Status", cell: (journey) => <span className={`badge status-${journey.status}`}>{journey.status}</span>, sortBy: (journey) => journey.status },
          { header: "Version", cell: (journey) => journey.version, sortBy: (journey) => journey.version },
          { header: "Trigger", cell: (journey) => triggerText(journey.trigger, names) },
          { header: "Entered", cell: (journey) => journey.counters.entered, sortBy: (journey) => journey.counters.entered },
          { header: "Active", cell: (journey) => journey.counters.active, sortBy: (journey) => journey.counters.active },
          { header: "Completed", cell: (journey) => journey.counters.completed, sortBy: (journey) => journey.counters.completed },
          { header: "Exited", cell: (journey) => journey.counters.exited, sortBy: (journey) => journey.counters.exited },
          { header: "Updated", cell: (journey) => formatTime(journey.updated_at), sortBy: (journey) => journey.updated_at },
        ]}
      />
    </Screen>
  );
}

/** The status changes each status allows, as the route's transitions do. */
function actionsFor(status: JourneyView["status"]): { label: string; status: JourneyStatusChange["status"] }[] {
  switch (status) {
    case "draft":
      // Starting is the canvas's: it saves what is on it first, and only when it has no problem.
      return [{ label: "Stop journey", status: "stopped" }];
    case "running":
      return [
        { label: "Pause journey", status: "paused" },
        { label: "Stop journey", status: "stopped" },
      ];
    case "paused":
      return [
        { label: "Resume journey", status: "running" },
        { label: "Stop journey", status: "stopped" },
      ];
    default:
      return [];
  }
}

const STATUS_NOTES: Record<JourneyView["status"], string> = {
  draft: "A draft: nobody enters it until it is started.",
  running: "Running: contacts enter it and move through its steps.",
  paused: "Paused: contacts in it are held where they are until it is resumed.",
  stopped: "Stopped: contacts in it have left, and nobody enters it again.",
};

export function Journey({ panel, params }: ScreenProps) {
  const id = params.id ?? "";
  const { data, error, reload } = useLoad(() => admin<JourneyView>("GET", panel.id, journeyPath(id)), [panel.id, id]);
  const names = useAudienceNames(panel.id);
  const [failure, setFailure] = useState<string>();
  const [busy, setBusy] = useState(false);
  // The version a promotion made: the canvas is drawn afresh once the page has it.
  const [promoted, setPromoted] = useState(0);
  const [confirm, confirmation] = useConfirm();

  const change = async (status: JourneyStatusChange["status"]) => {
    if (
      status === "stopped" &&
      !(await confirm({
        title: "Stop this journey?",
        message: `Every contact in "${data?.name ?? "the journey"}" leaves it now and nobody enters it again; a stopped journey cannot be resumed.`,
        confirmLabel: "Stop journey",
      }))
    )
      return;
    setBusy(true);
    setFailure(undefined);
    try {
      const body: JourneyStatusChange = { status };
      await admin("POST", panel.id, `${journeyPath(id)}/status`, body);
      reload();
    } catch (problem) {
      setFailure(failureOf(problem).message);
    } finally {
      setBusy(false);
    }
  };

  if (error) {
    return (
      <Screen title="Journey">
        <ErrorNote error={error} />
      </Screen>
    );
  }
  if (!data) return <Loading />;
  const { counters } = data;
  return (
    <Screen title={data.name} actions={<Link href={`/panels/${encodeURIComponent(panel.id)}/journeys`}>All journeys</Link>}>
      <dl className="facts" aria-label="Journey state">
        <dt>Status</dt>
        <dd>
          <span className={`badge status-${data.status}`}>{data.status}</span> <span className="muted">{STATUS_NOTES[data.status]}</span>
        </dd>
        <dt>Trigger</dt>
        <dd>{triggerText(data.trigger, names)}</dd>
        <dt>Contacts</dt>
        <dd>
          {counters.entered} entered, {counters.active} active, {counters.completed} completed, {counters.exited} exited
        </dd>
        {data.goal && (
          <>
            <dt>Goal</dt>
            <dd>
              “{data.goal.activity}”: {counters.converted} converted
              {counters.entered > 0 ? ` (${((100 * counters.converted) / counters.entered).toFixed(1)} % of entries)` : ""}, who left the journey on reaching it
            </dd>
          </>
        )}
      </dl>
      <RoleNote panel={panel} work="journeys" what="Editing, pausing and stopping a journey" />
      <div className="row" role="group" aria-label="Status actions">
        {actionsFor(data.status).map((action) => (
          <button key={action.status} type="button" className={action.status === "stopped" ? "danger" : undefined} disabled={busy} {...lockFor(panel, "journeys")} onClick={() => change(action.status)}>
            {action.label}
          </button>
        ))}
      </div>
      <ErrorNote error={failure} />
      <h2>Canvas</h2>
      {/* A version made by promoting a split's winner is drawn afresh. */}
      <JourneyCanvas key={`${data.id}:${Math.min(data.version, promoted)}`} panel={panel} journey={data} reload={reload} />
      <JourneyReport panelId={panel.id} journeyId={data.id} />
      {data.steps.some((s) => s.type === "split") && <SplitResults
          panelId={panel.id}
          journey={data}
          onPromoted={(version) => {
            setPromoted(version);
            reload();
          }}
          editable={may(panel, "journeys") && data.status !== "stopped"} />}
      <h2>Versions</h2>
      <p className="muted">Saving a running or paused journey makes a new version: contacts already inside finish on the version they entered, new entries take the new one. Moving its steps on the canvas and saving only their places makes none.</p>
      <Versions panelId={panel.id} journey={data} />
      <details>
        <summary>Definition as JSON</summary>
        <pre aria-label="Journey definition" tabIndex={0}>
          {JSON.stringify({ name: data.name, trigger: data.trigger, filter: data.filter, steps: data.steps }, null, 2)}
        </pre>
      </details>
      {confirmation}
    </Screen>
  );
}

/** A year of figures per node for the canvas, from the journey report's aggregates, read again while the page is open. */
/** A saved journey on the canvas: saved as a draft or a new version, started from it while a draft, with live figures per node. */
function JourneyCanvas({ panel, journey, reload }: { panel: PanelRef; journey: JourneyView; reload: () => void }) {
  const panelId = panel.id;
  const editable = may(panel, "journeys");
  const path = journeyPath(journey.id);
  const live = useNodeCounters(panelId, journey);
  const [simulated, setSimulated] = useState<Map<string, NodeCounters>>();
  const counters = simulated ?? live;
  const save = async (definition: JourneyInput, layout: JourneyLayout) => {
    const body: JourneyBody = { ...definition, layout };
    await admin("PUT", panelId, path, body);
  };
  return (
    <Suspense fallback={<Loading />}>
      <Simulation panelId={panelId} journey={journey} locked={lockFor(panel, "journeys")} onFigures={setSimulated} />
      <JourneyBuilder
        panelId={panelId}
        name={journey.name}
        definition={journey}
        layout={journey.layout}
        counters={counters}
        saveLabel={journey.status === "draft" ? "Save draft" : "Save as new version"}
        // Moving nodes of a running or paused journey saves where they are, without a new version.
        layoutSaveLabel={journey.status === "draft" ? undefined : "Save layout"}
        save={
          journey.status === "stopped" || !editable
            ? undefined
            : async (definition, layout) => {
                await save(definition, layout);
                reload();
              }
        }
        start={
          journey.status === "draft" && editable
            ? async (definition, layout) => {
                await save(definition, layout);
                const body: JourneyStatusChange = { status: "running" };
                await admin("POST", panelId, `${path}/status`, body);
                reload();
              }
            : undefined
        }
      />
    </Suspense>
  );
}

/** The canvas's figures from a simulation's result, as the live counters show them. */
function simulatedCounters(result: JourneySimulationResult): Map<string, NodeCounters> {
  const figures = new Map<string, NodeCounters>([[TRIGGER_NODE, { entered: result.entered, completed: result.completed, exited: result.exited, waiting: result.active }]]);
  for (const [step, f] of Object.entries(result.steps)) {
    const node: NodeCounters = { reached: f.acted, waiting: f.waiting };
    // Under the panel's rules: skipped for a full cap or a left topic, held by quiet hours or a cap.
    if (f.skipped_cap) node["skipped: cap"] = f.skipped_cap;
    if (f.skipped_topic) node["skipped: topic"] = f.skipped_topic;
    // Skipped by the senders, as the live message would record it: no address on the channel, or a stopped one.
    if (f.skipped_address) node["skipped: no address"] = f.skipped_address;
    if (f.skipped_suppressed) node["skipped: suppressed"] = f.skipped_suppressed;
    // A wait for an open, click or delivery of a message that would have gone out: its outcome is not known (counted on its timeout).
    if (f.unknown) node["unknown: opens/clicks"] = f.unknown;
    if (f.deferred) node.deferred = f.deferred;
    figures.set(step, node);
  }
  // A split's node counts each branch's entries and, with an activity goal, its conversions (as the live split report); those of an open or click goal are not known.
  for (const split of result.splits ?? []) {
    const node = figures.get(split.step_id) ?? {};
    for (const b of split.branches) {
      node[b.label] = b.entered;
      if (split.goal && b.converted !== null) node[`${b.label} converted`] = b.converted;
    }
    if (split.conversions_unknown !== null) node["unknown: opens/clicks"] = split.branches.reduce((n, b) => n + b.entered, 0);
    figures.set(split.step_id, node);
  }
  return figures;
}

/**
 * "Simulate on the last N days": runs this version over the panel's recorded activities with
 * nothing sent (decision 0048), shows its progress, then its figures on the canvas in place of
 * the live ones, messages per channel and a sample message and webhook call.
 */
function Simulation({ panelId, journey, locked, onFigures }: { panelId: string; journey: JourneyView; locked: ReturnType<typeof lockFor>; onFigures: (figures: Map<string, NodeCounters> | undefined) => void }) {
  const path = `${journeyPath(journey.id)}/simulations`;
  const [days, setDays] = useState("7");
  const [failure, setFailure] = useState<string>();
  const [current, setCurrent] = useState<JourneySimulationView>();
  const [shown, setShown] = useState(false);
  const { data: latest } = useLoad(() => admin<{ simulations: JourneySimulationView[] }>("GET", panelId, `${path}?version=${journey.version}`), [panelId, journey.id, journey.version]);
  const simulation = current ?? latest?.simulations[0];
  const running = simulation?.state === "running";
  useEvery(
    1_000,
    () => {
      if (simulation) void admin<JourneySimulationView>("GET", panelId, `${path}/${encodeURIComponent(simulation.id)}`).then(setCurrent, (problem) => setFailure(failureOf(problem).message));
    },
    running,
  );
  const result = simulation?.state === "done" ? (simulation.result as JourneySimulationResult | null) : null;
  const show = (on: boolean) => {
    setShown(on);
    onFigures(on && result ? simulatedCounters(result) : undefined);
  };
  const start = async () => {
    setFailure(undefined);
    try {
      const body: JourneySimulationBody = { days: Number(days) };
      const started = await admin<JourneySimulationView>("POST", panelId, path, body);
      setCurrent(started);
      show(false);
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };
  const skipReasons = Object.entries(result?.steps ?? {}).flatMap(([step, f]) => Object.entries(f.skip_reasons ?? {}).map(([reason, n]) => [step, reason, n] as const));
  const message = result?.samples.messages[0];
  const webhook = result?.samples.webhooks[0];
  return (
    <section aria-label="Simulation" className="simulation">
      <h3>Simulate on history</h3>
      <p className="muted">
        Runs version {journey.version} over the activities recorded in the last days{journey.trigger.type === "list" && " and the list's members from when each was added"}
        {journey.trigger.type === "segment" &&
          (journey.trigger.segment !== undefined
            ? " and the contacts that joined the segment, each from its first join in those days (members from before are not entered)"
            : " and the contacts matching the filter now, each from its last change in those days (those unchanged since before are not entered)")}
        , sending nothing: whether a message would be opened or clicked is not known (a wait for it counts as unknown); caps, quiet hours, topics, suppressions and devices apply as they are now.
      </p>
      <div className="row">
        <label>
          Days{" "}
          <input type="number" min={1} max={30} value={days} onChange={(e) => setDays(e.target.value)} aria-label="Days to simulate" style={{ width: "5em" }} />
        </label>
        <button type="button" disabled={running} {...locked} onClick={start}>
          Simulate
        </button>
        {result && (
          <label>
            <input type="checkbox" checked={shown} onChange={(e) => show(e.target.checked)} /> Show the simulation on the canvas
          </label>
        )}
      </div>
      <ErrorNote error={failure} />
      {running && (
        <p>
          <progress value={simulation.progress} max={1} aria-label="Simulation progress" /> {Math.round(simulation.progress * 100)} % ({simulation.events_read} events)
        </p>
      )}
      {simulation?.state === "failed" && <ErrorNote error={`The simulation failed: ${simulation.error}`} />}
      {result && simulation && (
        <>
          <p aria-label="Simulation result">
            Last {simulation.days} days ({simulation.events_read} activities): {result.entered} would have entered, {result.completed} completed, {result.exited} left on the goal, {result.active} waiting now.
            Messages: {listedOrNone(Object.entries(result.messages).map(([channel, n]) => `${n} ${channel}`))}
            {result.skipped &&
              ` (skipped: ${result.skipped.cap} for a cap, ${result.skipped.topic} for a topic, ${result.skipped.address ?? 0} for no address, ${result.skipped.suppressed ?? 0} for a suppressed one; ${result.deferred ?? 0} deferred)`}
            . Webhook calls:{" "}
            {Object.values(result.webhooks).reduce((a, b) => a + b, 0)}.
            {result.unknown ? ` ${result.unknown} waits for an open, click or delivery of a message not sent: unknown, counted on their timeout branch.` : ""}
          </p>
          {(result.splits ?? []).some((split) => split.goal) && (
            <ul aria-label="Simulated splits">
              {(result.splits ?? []).filter((split) => split.goal).map((split) => (
                <li key={split.step_id}>
                  Split {split.step_id}:{" "}
                  {split.conversions_unknown !== null
                    ? `${split.branches.map((b) => `${b.label} ${b.entered} entered`).join(", ")}; conversions unknown (${split.conversions_unknown})`
                    : split.branches.map((b) => `${b.label} ${b.entered} entered, ${b.converted} converted (${percent(b.rate ?? 0)}${b.confidence === null ? "" : `, ${percent(b.confidence)} confidence vs A`})`).join("; ")}
                </li>
              ))}
            </ul>
          )}
          {skipReasons.length > 0 && (
            <details>
              <summary>Why messages would be skipped</summary>
              <ul aria-label="Skip reasons">
                {skipReasons.map(([step, reason, n]) => (
                  <li key={`${step} ${reason}`}>
                    {step}: {n} × {reason}
                  </li>
                ))}
              </ul>
            </details>
          )}
          {message && (
            <details>
              <summary>Sample message ({message.channel}, step {message.step_id}, to {message.contact_key})</summary>
              <pre tabIndex={0}>{message.content.subject ?? message.content.title ?? ""}{"\n"}{message.content.text ?? message.content.html ?? message.content.template ?? ""}</pre>
            </details>
          )}
          {webhook && (
            <details>
              <summary>Sample webhook call (step {webhook.step_id})</summary>
              <pre tabIndex={0}>{JSON.stringify(webhook.payload, null, 2)}</pre>
            </details>
          )}
        </>
      )}
    </section>
  );
}

function useNodeCounters(panelId: string, journey: JourneyView): Map<string, NodeCounters> | undefined {
  const from = () => encodeURIComponent(new Date(Date.now() - 365 * 86_400_000).toISOString());
  const hasSplits = journey.steps.some((s) => s.type === "split");
  const { data, reload } = useLoad(
    () =>
      Promise.all([
        admin<JourneyReportView>("GET", panelId, `${journeyPath(journey.id)}/report?from=${from()}`),
        hasSplits ? admin<{ splits: JourneySplitView[] }>("GET", panelId, `${journeyPath(journey.id)}/splits`) : Promise.resolve({ splits: [] }),
      ]),
    [panelId, journey.id, journey.version],
  );
  useEvery(5_000, reload, journey.status === "running" || journey.status === "paused");
  return useMemo(() => data && countersOf(data[0], data[1].splits), [data]);
}

function countersOf(report: JourneyReportView, splits: readonly JourneySplitView[]): Map<string, NodeCounters> {
  const trigger: NodeCounters = { entered: report.entered, completed: report.completed, exited: report.exited };
  if (report.converted > 0) trigger.converted = report.converted;
  const figures = new Map<string, NodeCounters>([[TRIGGER_NODE, trigger]]);
  for (const [step, f] of Object.entries(report.steps)) figures.set(step, { entered: f.entered, waiting: f.waiting, passed: f.passed, failed: f.failed });
  // A split's node counts each branch's entries and, with a goal, its conversions.
  for (const split of splits) {
    const branches: NodeCounters = {};
    for (const b of split.branches) {
      branches[b.label] = b.entered;
      if (split.goal) branches[`${b.label} converted`] = b.converted;
    }
    figures.set(split.step_id, branches);
  }
  return figures;
}

const percent = (rate: number) => `${(rate * 100).toFixed(1)} %`;

/** Each split's branches: entries, conversions to its goal, the rate and the confidence against A; a branch may be promoted. */
function SplitResults({ panelId, journey, onPromoted, editable }: { panelId: string; journey: JourneyView; onPromoted: (version: number) => void; editable: boolean }) {
  const path = journeyPath(journey.id);
  const { data, error } = useLoad(() => admin<{ splits: JourneySplitView[] }>("GET", panelId, `${path}/splits`), [panelId, journey.id, journey.version]);
  const [failure, setFailure] = useState<string>();
  const [confirm, confirmation] = useConfirm();
  const promote = async (step: string, branch: string) => {
    const ok = await confirm({
      title: `Promote branch ${branch}?`,
      message: `A new version of the journey sends every new entry down branch ${branch} of ${step}. Contacts already inside keep their branch.`,
      confirmLabel: `Promote ${branch}`,
    });
    if (!ok) return;
    setFailure(undefined);
    try {
      const body: SplitWinnerBody = { branch: branch as SplitWinnerBody["branch"] };
      const saved = await admin<{ version: number }>("POST", panelId, `${path}/splits/${encodeURIComponent(step)}/winner`, body);
      onPromoted(saved.version);
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };
  return (
    <section aria-label="A/B split results">
      <h2>A/B splits</h2>
      <p className="muted">Confidence: how sure it is that a branch's conversion rate differs from branch A's (a two-proportion z-test; 95 % or more is usually taken as a real difference).</p>
      <ErrorNote error={error ?? failure} />
      {data?.splits.map((split) => (
        <DataTable
          key={split.step_id}
          caption={`Split ${split.step_id}${split.goal ? `: goal ${split.goal.activity ? `“${split.goal.activity}”` : split.goal.message_event} within ${split.goal.within}` : " (no goal)"}${split.winner ? `; branch ${split.winner} promoted` : ""}`}
          rows={split.branches}
          rowKey={(b) => b.label}
          loading={null}
          columns={[
            { header: "Branch", cell: (b) => `${b.label}${b.winner ? " (winner)" : ""}` },
            { header: "Share", cell: (b) => (b.percent === null ? "–" : `${b.percent} %`) },
            { header: "Entered", cell: (b) => b.entered },
            { header: "Converted", cell: (b) => b.converted },
            { header: "Rate", cell: (b) => percent(b.rate) },
            { header: "Confidence vs A", cell: (b) => (b.confidence === null ? "–" : percent(b.confidence)) },
            {
              header: "Promote",
              cell: (b) =>
                b.winner || b.percent === null || !editable ? null : (
                  <button type="button" className="secondary" onClick={() => promote(split.step_id, b.label)}>
                    Promote {b.label} of {split.step_id}
                  </button>
                ),
            },
          ]}
        />
      ))}
      {confirmation}
    </section>
  );
}

function Versions({ panelId, journey }: { panelId: string; journey: JourneyView }) {
  const { data } = useLoad(() => admin<{ versions: JourneyVersionView[] }>("GET", panelId, `${journeyPath(journey.id)}/versions`), [panelId, journey.id, journey.version]);
  return (
    <DataTable
      caption="Versions of the journey, newest first"
      rows={data?.versions}
      rowKey={(v) => v.version}
      loading={null}
      columns={[
        { header: "Version", cell: (v) => `${v.version}${v.version === journey.version ? " (current)" : ""}` },
        { header: "Made", cell: (v) => formatTime(v.created_at) },
        { header: "By", cell: (v) => v.created_by ?? "admin token" },
        { header: "Entered on it", cell: (v) => v.entered },
        { header: "Still inside", cell: (v) => v.active },
      ]}
    />
  );
}

/** A new journey: pick a blank canvas or one of the spec 6.3 templates, then build and save it as a draft. */
export function NewJourney({ panel }: ScreenProps) {
  const [template, setTemplate] = useState<JourneyTemplate["definition"]>();
  return (
    <Screen title="New journey" actions={<Link href={`/panels/${encodeURIComponent(panel.id)}/journeys`}>All journeys</Link>}>
      {!template ? (
        <div className="tiles" role="group" aria-label="Start from">
          <button type="button" className="tile" onClick={() => setTemplate(BLANK)}>
            <strong>Blank canvas</strong>
            <span className="muted">A trigger and nothing else.</span>
          </button>
          {TEMPLATES.map((t) => (
            <button key={t.key} type="button" className="tile" onClick={() => setTemplate(t.definition)}>
              <strong>{t.title}</strong>
              <span className="muted">{t.description}</span>
            </button>
          ))}
        </div>
      ) : (
        <Suspense fallback={<Loading />}>
          <JourneyBuilder
            panelId={panel.id}
            name=""
            definition={template}
            saveLabel="Save draft"
            save={async (definition: JourneyInput, layout: JourneyLayout) => {
              const body: JourneyBody = { ...definition, layout };
              const created = await admin<JourneyView>("POST", panel.id, "/journeys", body);
              navigate(`/panels/${encodeURIComponent(panel.id)}${journeyPath(created.id)}`);
            }}
          />
        </Suspense>
      )}
    </Screen>
  );
}
