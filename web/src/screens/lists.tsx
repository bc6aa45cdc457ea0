import { useEffect, useState, type DragEvent, type FormEvent } from "react";
import { admin } from "../api";
import type { CreateList, JobView, ListView, RenameList } from "../types";
import { Empty, ErrorNote, Field, failureOf, Loading, Screen, useLoad } from "../ui";
import type { ScreenProps } from ".";

/** Follows an import job until it ends, with rows done, created, updated and failed. */
function JobProgress({ panelId, jobId, onDone }: { panelId: string; jobId: string; onDone: () => void }) {
  const [job, setJob] = useState<JobView>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    const poll = async () => {
      try {
        const next = await admin<JobView>("GET", panelId, `/jobs/${encodeURIComponent(jobId)}`);
        if (!live) return;
        setJob(next);
        if (next.status === "completed" || next.status === "failed") onDone();
        else setTimeout(poll, 700);
      } catch (problem) {
        if (live) setError(failureOf(problem).message);
      }
    };
    void poll();
    return () => {
      live = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [panelId, jobId]);
  if (error) return <ErrorNote error={error} />;
  if (!job) return <Loading />;
  const total = job.progress.bytes_total;
  const finished = job.status === "completed" || job.status === "failed";
  const percent = finished ? 100 : total ? Math.floor((job.progress.bytes_done / total) * 100) : 0;
  return (
    <div className="card" aria-live="polite">
      <label>
        Import {finished ? (job.status === "completed" ? "done" : "failed") : "in progress"}
        <progress max={100} value={percent} aria-valuetext={`${percent}%`} />
      </label>
      <p>
        {job.total} rows done: {job.created} created, {job.updated} updated, {job.failed} failed.
        {job.reason && <span className="error"> {job.reason}</span>}
      </p>
      {job.failed > 0 && (
        <a href={`/admin/v1/panels/${encodeURIComponent(panelId)}/jobs/${encodeURIComponent(job.jobid)}/errors.csv`} download>
          Download the error report
        </a>
      )}
    </div>
  );
}

function ListRow({ panelId, list, onChanged }: { panelId: string; list: ListView; onChanged: () => void }) {
  const [renaming, setRenaming] = useState(false);
  const [name, setName] = useState(list.name);
  const [over, setOver] = useState(false);
  const [jobId, setJobId] = useState<string>();
  const [error, setError] = useState<string>();

  const run = async (work: () => Promise<void>) => {
    setError(undefined);
    try {
      await work();
    } catch (problem) {
      setError(failureOf(problem).message);
    }
  };

  const upload = (file: File) =>
    run(async () => {
      const answer = await admin<{ jobid: string }>("POST", panelId, `/lists/${list.id}/uploads?name=${encodeURIComponent(file.name)}`, file);
      setJobId(answer.jobid);
    });

  const drop = (event: DragEvent) => {
    event.preventDefault();
    setOver(false);
    const file = event.dataTransfer.files[0];
    if (file) void upload(file);
  };

  const rename = (event: FormEvent) => {
    event.preventDefault();
    void run(async () => {
      const change: RenameList = { name };
      await admin("PATCH", panelId, `/lists/${list.id}`, change);
      setRenaming(false);
      onChanged();
    });
  };

  return (
    <li className="card" aria-label={`List ${list.name}`}>
      <div className="screen-head">
        {renaming ? (
          <form className="row" onSubmit={rename}>
            <Field label="New name">{(props) => <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />}</Field>
            <button type="submit">Save</button>
            <button type="button" className="secondary" onClick={() => setRenaming(false)}>
              Cancel
            </button>
          </form>
        ) : (
          <h2>
            {list.name} <span className="muted">({list.count} members, id {list.id})</span>
          </h2>
        )}
        <div className="row">
          <button type="button" className="secondary" onClick={() => setRenaming(true)} aria-label={`Rename ${list.name}`}>
            Rename
          </button>
          <button
            type="button"
            className="danger"
            aria-label={`Delete ${list.name}`}
            onClick={() => {
              if (confirm(`Delete the list "${list.name}"? Its contacts stay.`)) void run(async () => (await admin("DELETE", panelId, `/lists/${list.id}`), onChanged()));
            }}
          >
            Delete
          </button>
        </div>
      </div>
      <ErrorNote error={error} />
      <div
        className={`dropzone${over ? " over" : ""}`}
        onDragOver={(event) => {
          event.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={drop}
        data-testid={`dropzone-${list.id}`}
      >
        <p>Drop a CSV file here to add its contacts to {list.name}, or</p>
        <label className="secondary-label">
          choose a file{" "}
          <input type="file" accept=".csv,text/csv" onChange={(event) => event.target.files?.[0] && void upload(event.target.files[0])} />
        </label>
        <p className="muted">The first row names the attributes; the primary key column is required.</p>
      </div>
      {jobId && <JobProgress panelId={panelId} jobId={jobId} onDone={onChanged} />}
    </li>
  );
}

export function Lists({ panel }: ScreenProps) {
  const { data, error, reload } = useLoad(() => admin<{ lists: ListView[] }>("GET", panel.id, "/lists"), [panel.id]);
  const [name, setName] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string>();

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setFailure(undefined);
    setFields({});
    try {
      const body: CreateList = { name };
      await admin("POST", panel.id, "/lists", body);
      setName("");
      reload();
    } catch (problem) {
      const { message, fields } = failureOf(problem);
      setFailure(message);
      setFields(fields);
    }
  };

  return (
    <Screen title="Lists">
      <form className="card row" onSubmit={create} aria-label="New list">
        <Field label="List name" error={fields.name}>
          {(props) => <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />}
        </Field>
        <button type="submit">Create list</button>
      </form>
      <ErrorNote error={error ?? failure} />
      {!data ? (
        <Loading />
      ) : data.lists.length === 0 ? (
        <Empty title="No lists yet">Create a list above, then drop a CSV file of contacts on it.</Empty>
      ) : (
        <ul className="plain">
          {data.lists.map((list) => (
            <ListRow key={list.id} panelId={panel.id} list={list} onChanged={reload} />
          ))}
        </ul>
      )}
    </Screen>
  );
}
