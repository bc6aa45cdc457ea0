import { useEffect, useState, type DragEvent, type FormEvent } from "react";
import { admin } from "../api";
import { Link } from "../router";
import type { CreateList, ImportFromUrl, JobView, ListMembersPage, ListView, RenameList } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { Empty, ErrorNote, Field, failureOf, formatTime, Loading, Screen, useLoad, useSubmit } from "../ui";
import type { PanelRef, ScreenProps } from "../screen-props";
import { useConfirm } from "../components/confirm-dialog";
import { lockFor, may, RoleNote } from "../components/role";

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

function ListRow({ panel, list, onChanged }: { panel: PanelRef; list: ListView; onChanged: () => void }) {
  const panelId = panel.id;
  const [confirm, confirmation] = useConfirm();
  const base = `/panels/${encodeURIComponent(panelId)}`;
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

  const [url, setUrl] = useState("");
  const fetched = useSubmit();
  const importUrl = async (event: FormEvent) => {
    event.preventDefault();
    const body: ImportFromUrl = { url };
    await fetched.run(async () => {
      const answer = await admin<{ jobid: string }>("POST", panelId, `/lists/${list.id}/imports`, body);
      setJobId(answer.jobid);
      setUrl("");
    });
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
          <Link href={`${base}/lists/${list.id}`} aria-label={`Members of ${list.name}`}>
            Members
          </Link>
          <button type="button" className="secondary" onClick={() => setRenaming(true)} aria-label={`Rename ${list.name}`} {...lockFor(panel, "audience")}>
            Rename
          </button>
          <button
            type="button"
            className="danger"
            aria-label={`Delete ${list.name}`}
            {...lockFor(panel, "audience")}
            onClick={async () => {
              if (await confirm({ title: "Delete this list?", message: `The list "${list.name}" and its ${list.count} memberships will be deleted; this cannot be undone. Its contacts stay.`, confirmLabel: "Delete list" })) await run(async () => (await admin("DELETE", panelId, `/lists/${list.id}`), onChanged()));
            }}
          >
            Delete
          </button>
        </div>
      </div>
      <ErrorNote error={error} />
      {may(panel, "audience") && (
        <>
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
          <form className="row url-import" onSubmit={importUrl} aria-label={`Import into ${list.name} from a URL`}>
            <Field label="CSV file URL" hint="http(s); fetched by the same import engine as the API's bulk upload" error={fetched.fields.url}>
              {(props) => <input {...props} type="url" required value={url} onChange={(e) => setUrl(e.target.value)} />}
            </Field>
            <button type="submit" disabled={fetched.busy}>
              Import from URL
            </button>
          </form>
          <ErrorNote error={fetched.failure} />
        </>
      )}
      {jobId && <JobProgress panelId={panelId} jobId={jobId} onDone={onChanged} />}
      {confirmation}
    </li>
  );
}

export function Lists({ panel }: ScreenProps) {
  const { data, error, reload } = useLoad(() => admin<{ lists: ListView[] }>("GET", panel.id, "/lists"), [panel.id]);
  const [name, setName] = useState("");
  const { failure, fields, run } = useSubmit(reload);

  const create = async (event: FormEvent) => {
    event.preventDefault();
    const body: CreateList = { name };
    if (await run(() => admin("POST", panel.id, "/lists", body))) setName("");
  };

  return (
    <Screen title="Lists">
      <RoleNote panel={panel} work="audience" what="Creating, renaming, deleting and importing into lists" />
      {may(panel, "audience") && (
        <form className="card row" onSubmit={create} aria-label="New list">
          <Field label="List name" error={fields.name}>
            {(props) => <input {...props} required value={name} onChange={(e) => setName(e.target.value)} />}
          </Field>
          <button type="submit">Create list</button>
        </form>
      )}
      <ErrorNote error={error ?? failure} />
      {!data ? (
        <Loading />
      ) : data.lists.length === 0 ? (
        <Empty title="No lists yet">Create a list above, then drop a CSV file of contacts on it.</Empty>
      ) : (
        <ul className="plain">
          {data.lists.map((list) => (
            <ListRow key={list.id} panel={panel} list={list} onChanged={reload} />
          ))}
        </ul>
      )}
    </Screen>
  );
}

/** One list: its members a page at a time (in the order the contacts were created), and emptying it. */
export function ListMembers({ panel, params }: ScreenProps) {
  const [confirm, confirmation] = useConfirm();
  const base = `/panels/${encodeURIComponent(panel.id)}`;
  const [after, setAfter] = useState<string>();
  // Cursors of the pages before this one, so Previous can go back.
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const { data, error, reload } = useLoad(
    () => admin<ListMembersPage>("GET", panel.id, `/lists/${encodeURIComponent(params.id!)}/members?limit=25${after ? `&after=${after}` : ""}`),
    [panel.id, params.id, after],
  );
  const emptied = useSubmit(() => {
    setTrail([]);
    setAfter(undefined);
    reload();
  });
  const [removed, setRemoved] = useState<number>();

  return (
    <Screen title={data ? `List ${data.list.name}` : "List"}>
      <p>
        <Link href={`${base}/lists`}>All lists</Link>
      </p>
      <ErrorNote error={error ?? emptied.failure} />
      {removed !== undefined && (
        <p role="status" className="ok">
          {removed} members removed; the contacts stay.
        </p>
      )}
      {!data ? (
        <Loading />
      ) : (
        <>
          <div className="screen-head">
            <p>
              {data.list.count} members · id {data.list.id}
            </p>
            {may(panel, "audience") && data.list.count > 0 && (
              <button
                type="button"
                className="danger"
                onClick={async () => {
                  if (await confirm({ title: "Empty this list?", message: `Remove every member of "${data.list.name}"? The contacts stay.`, confirmLabel: "Remove every member" })) await emptied.run(async () => setRemoved((await admin<{ removed: number }>("POST", panel.id, `/lists/${data.list.id}/empty`)).removed));
                }}
              >
                Empty the list
              </button>
            )}
          </div>
          <DataTable
            caption={`Members of ${data.list.name}`}
            rows={data.members}
            rowKey={(member) => member.key}
            empty={
              <Empty title="No members">
                Drop a CSV file on the list or import one from a URL in <Link href={`${base}/lists`}>Lists</Link>; contacts added through the API with its listid join it too.
              </Empty>
            }
            columns={[
              { header: data.primary_key, cell: (member) => <Link href={`${base}/contacts/${encodeURIComponent(member.key)}`}>{member.key}</Link> },
              { header: "Name", cell: (member) => String(member.attributes.NAME ?? member.attributes.FIRSTNAME ?? "—") },
              { header: "Added", cell: (member) => formatTime(member.added_at) },
            ]}
            pagerLabel="Member pages"
            serverPages={{
              onPrevious: trail.length
                ? () => {
                    setAfter(trail.at(-1));
                    setTrail(trail.slice(0, -1));
                  }
                : undefined,
              onNext: data.next_cursor
                ? () => {
                    setTrail([...trail, after]);
                    setAfter(data.next_cursor!);
                  }
                : undefined,
            }}
          />
        </>
      )}
      {confirmation}
    </Screen>
  );
}
