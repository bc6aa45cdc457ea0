import { lazy, Suspense, useEffect, useState } from "react";
import { admin } from "../api";
import type { NodeCounters } from "../journey-builder/nodes";
import { BLANK, TEMPLATES, type JourneyTemplate } from "../journey-builder/templates";
import { Link, navigate } from "../router";
import type { JourneyInput, JourneyStatusChange, JourneyView } from "../types";
import { Empty, ErrorNote, failureOf, formatTime, Loading, Screen, useLoad } from "../ui";
import type { ScreenProps } from ".";

// The canvas (React Flow and the journey schema) loads only on the screens that show it.
const JourneyBuilder = lazy(() => import("../journey-builder/builder"));

const journeyPath = (id: string) => `/journeys/${encodeURIComponent(id)}`;

function triggerText(trigger: JourneyView["trigger"]): string {
  switch (trigger.type) {
    case "activity":
      return `activity “${trigger.activity}”`;
    case "list":
      return `joins list ${trigger.listid}`;
    default:
      return trigger.type;
  }
}

export function Journeys({ panel }: ScreenProps) {
  const { data, error } = useLoad(() => admin<{ journeys: JourneyView[] }>("GET", panel.id, "/journeys"), [panel.id]);
  const base = `/panels/${encodeURIComponent(panel.id)}`;
  return (
    <Screen title="Journeys" actions={<Link href={`${base}/journeys/new`}>New journey</Link>}>
      <ErrorNote error={error} />
      {!data ? (
        <Loading />
      ) : data.journeys.length === 0 ? (
        <Empty title="No journeys yet">
          Build one on the canvas with “New journey”, from a blank page or one of the templates; journeys defined through the admin API appear here too.
        </Empty>
      ) : (
        <table>
          <caption className="visually-hidden">Journeys of the panel</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Trigger</th>
              <th scope="col">Entered</th>
              <th scope="col">Active</th>
              <th scope="col">Completed</th>
              <th scope="col">Exited</th>
              <th scope="col">Updated</th>
            </tr>
          </thead>
          <tbody>
            {data.journeys.map((journey) => (
              <tr key={journey.id}>
                <td>
                  <Link href={base + journeyPath(journey.id)}>{journey.name}</Link>
                </td>
                <td>
                  <span className={`badge status-${journey.status}`}>{journey.status}</span>
                </td>
                <td>{triggerText(journey.trigger)}</td>
                <td>{journey.counters.entered}</td>
                <td>{journey.counters.active}</td>
                <td>{journey.counters.completed}</td>
                <td>{journey.counters.exited}</td>
                <td>{formatTime(journey.updated_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
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
  const [failure, setFailure] = useState<string>();
  const [busy, setBusy] = useState(false);
  const live = data?.status === "running" || data?.status === "paused";
  // Counters on the canvas stay current while the page is open.
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(reload, 5_000);
    return () => clearInterval(timer);
  }, [live, reload]);

  const change = async (status: JourneyStatusChange["status"]) => {
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
        <dd>{triggerText(data.trigger)}</dd>
        <dt>Contacts</dt>
        <dd>
          {counters.entered} entered, {counters.active} active, {counters.completed} completed, {counters.exited} exited
        </dd>
      </dl>
      <div className="row" role="group" aria-label="Status actions">
        {actionsFor(data.status).map((action) => (
          <button key={action.status} type="button" className={action.status === "stopped" ? "danger" : undefined} disabled={busy} onClick={() => change(action.status)}>
            {action.label}
          </button>
        ))}
      </div>
      <ErrorNote error={failure} />
      <h2>Canvas</h2>
      <Suspense fallback={<Loading />}>
        <JourneyBuilder
          key={data.id}
          panelId={panel.id}
          name={data.name}
          definition={data}
          counters={nodeCounters(data)}
          saveLabel={data.status === "draft" ? "Save draft" : "Save as new version"}
          save={async (definition) => {
            await admin("PUT", panel.id, journeyPath(id), definition);
            reload();
          }}
          start={
            data.status === "draft"
              ? async (definition) => {
                  await admin("PUT", panel.id, journeyPath(id), definition);
                  const body: JourneyStatusChange = { status: "running" };
                  await admin("POST", panel.id, `${journeyPath(id)}/status`, body);
                  reload();
                }
              : undefined
          }
        />
      </Suspense>
      <h2>Steps</h2>
      <table>
        <caption className="visually-hidden">Steps with the contacts each acted for and holds now</caption>
        <thead>
          <tr>
            <th scope="col">Step</th>
            <th scope="col">Type</th>
            <th scope="col">After</th>
            <th scope="col">Acted</th>
            <th scope="col">Waiting</th>
          </tr>
        </thead>
        <tbody>
          {data.steps.map((step) => (
            <tr key={step.id}>
              <td>
                <code>{step.id}</code>
              </td>
              <td>{step.type}</td>
              <td>{"after" in step && step.after ? step.after : "start"}</td>
              <td>{counters.steps[step.id]?.acted ?? 0}</td>
              <td>{counters.steps[step.id]?.waiting ?? 0}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <details>
        <summary>Definition as JSON</summary>
        <pre aria-label="Journey definition" tabIndex={0}>
          {JSON.stringify({ name: data.name, trigger: data.trigger, filter: data.filter, steps: data.steps }, null, 2)}
        </pre>
      </details>
    </Screen>
  );
}

/** The canvas's figures per node from the journey's counters: the trigger counts entries, a step its runs and waits. */
function nodeCounters(journey: JourneyView): Map<string, NodeCounters> {
  const { counters } = journey;
  const figures = new Map<string, NodeCounters>([["@trigger", { entered: counters.entered, waiting: 0, passed: counters.entered, failed: 0 }]]);
  for (const step of journey.steps) {
    const { acted = 0, waiting = 0 } = counters.steps[step.id] ?? {};
    figures.set(step.id, { entered: acted + waiting, waiting, passed: acted, failed: 0 });
  }
  return figures;
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
            save={async (definition: JourneyInput) => {
              const created = await admin<JourneyView>("POST", panel.id, "/journeys", definition);
              navigate(`/panels/${encodeURIComponent(panel.id)}${journeyPath(created.id)}`);
            }}
          />
        </Suspense>
      )}
    </Screen>
  );
}
