import { useState } from "react";
import { admin } from "../api";
import { Link } from "../router";
import type { JourneyStatusChange, JourneyView } from "../types";
import { Empty, ErrorNote, failureOf, formatTime, Loading, Screen, useLoad } from "../ui";
import type { ScreenProps } from ".";

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
    <Screen title="Journeys">
      <ErrorNote error={error} />
      {!data ? (
        <Loading />
      ) : data.journeys.length === 0 ? (
        <Empty title="No journeys yet">
          Journeys are defined through the admin API (POST /admin/v1/panels/{panel.id}/journeys) for now; each one then appears here to run, pause or stop.
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
      return [
        { label: "Start journey", status: "running" },
        { label: "Stop journey", status: "stopped" },
      ];
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
      <h2>Definition</h2>
      <pre aria-label="Journey definition" tabIndex={0}>
        {JSON.stringify({ name: data.name, trigger: data.trigger, filter: data.filter, steps: data.steps }, null, 2)}
      </pre>
    </Screen>
  );
}
