import { useEffect, useState, type DragEvent, type FormEvent } from "react";
import { admin } from "../api";
import { Link } from "../router";
import type { AttributeType, AttributeView, ColumnMappingInput, CreateList, ImportFromUrl, ImportHistoryEntry, ImportHistoryPage, JobView, ListMembersPage, ListView, RenameList } from "../../../src/domain/answers";
import { ATTRIBUTE_TYPES, canonicalAttributeName } from "../../../src/domain/attributes";
import { isBlankRecord, parseRecords } from "../../../src/domain/csv";
import { DataTable } from "../components/data-table";
import { Empty, ErrorNote, Field, FormActions, failureOf, formatTime, Loading, Screen, unplacedFailure, useLoad, useSubmit } from "../ui";
import type { PanelRef, ScreenProps } from "../screen-props";
import { useConfirm } from "../components/confirm-dialog";
import { EmptyFor, lockFor, may, RoleNote } from "../components/role";

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

/** The file's header row: its first non-blank record, read from the start of the file. */
async function headerOf(file: File): Promise<string[]> {
  const text = await file.slice(0, 256 * 1024).text();
  let header: string[] | undefined;
  parseRecords(text.replace(/^\uFEFF/, ""), (record) => {
    if (!header && !isBlankRecord(record)) header = record.fields;
  });
  return (header ?? []).map((cell) => cell.trim());
}

/** What the form offers for one column: an attribute by name, a new attribute, or nothing. */
type ColumnChoice = { kind: "attribute"; name: string } | { kind: "new"; name: string; type: AttributeType } | { kind: "skip" };

/** A header as a new attribute's name: upper-case letters, digits and underscores, starting with a letter. */
function attributeNameFor(header: string): string {
  const name = canonicalAttributeName(header).replace(/[^A-Z0-9_]+/g, "_").replace(/^_+|_+$/g, "");
  return /^[A-Z]/.test(name) ? name.slice(0, 64) : `COL_${name}`.slice(0, 64);
}

function defaultChoice(header: string, attributes: AttributeView[]): ColumnChoice {
  const known = attributes.find((a) => a.name === canonicalAttributeName(header));
  return known ? { kind: "attribute", name: known.name } : { kind: "new", name: attributeNameFor(header), type: "string" };
}

/**
 * The chosen file's columns, each sent to an attribute, a new attribute or nowhere. A header
 * naming an attribute starts mapped to it, any other starts as a new attribute of its name. The
 * Worker's refusals (`mapping.<header>`) appear under their column.
 */
function ColumnMapper({ panelId, list, file, header, onStarted, onCancel }: { panelId: string; list: ListView; file: File; header: string[]; onStarted: (jobId: string) => void; onCancel: () => void }) {
  const attributes = useLoad(() => admin<{ attributes: AttributeView[] }>("GET", panelId, "/attributes"), [panelId]).data?.attributes;
  const [choices, setChoices] = useState<Record<string, ColumnChoice>>({});
  const { failure, fields, busy, run } = useSubmit();
  if (!attributes) return <Loading />;
  const choiceOf = (cell: string) => choices[cell] ?? defaultChoice(cell, attributes);
  const choose = (cell: string, choice: ColumnChoice) => setChoices({ ...choices, [cell]: choice });

  const start = async (event: FormEvent) => {
    event.preventDefault();
    const mapping: ColumnMappingInput = {};
    for (const cell of header) {
      const choice = choiceOf(cell);
      mapping[cell] = choice.kind === "skip" ? null : choice.kind === "new" ? { new: choice.name, type: choice.type } : choice.name;
    }
    const query = new URLSearchParams({ name: file.name, mapping: JSON.stringify(mapping) });
    await run(async () => onStarted((await admin<{ jobid: string }>("POST", panelId, `/lists/${list.id}/uploads?${query}`, file)).jobid));
  };

  return (
    <form className="card" onSubmit={start} aria-label={`Map the columns of ${file.name}`}>
      <h3>Columns of {file.name}</h3>
      <p className="muted">Send each column to an attribute, to a new attribute, or skip it. The primary key's column is required.</p>
      <ErrorNote error={unplacedFailure(failure, fields, header.map((cell) => `mapping.${cell}`))} />
      <div className="grid-fields">
        {header.map((cell, i) => {
          const choice = choiceOf(cell);
          const value = choice.kind === "attribute" ? `attribute:${choice.name}` : choice.kind;
          return (
            <div key={`${i}-${cell}`} className="row">
              <Field label={`Column “${cell}”`} error={fields[`mapping.${cell}`]}>
                {(props) => (
                  <select
                    {...props}
                    value={value}
                    onChange={(e) => {
                      const picked = e.target.value;
                      if (picked === "skip") choose(cell, { kind: "skip" });
                      else if (picked === "new") choose(cell, { kind: "new", name: attributeNameFor(cell), type: "string" });
                      else choose(cell, { kind: "attribute", name: picked.slice("attribute:".length) });
                    }}
                  >
                    {attributes.map((a) => (
                      <option key={a.name} value={`attribute:${a.name}`}>
                        {a.name} ({a.type})
                      </option>
                    ))}
                    <option value="new">a new attribute…</option>
                    <option value="skip">skip this column</option>
                  </select>
                )}
              </Field>
              {choice.kind === "new" && (
                <>
                  <Field label={`New attribute for “${cell}”`}>{(props) => <input {...props} value={choice.name} onChange={(e) => choose(cell, { ...choice, name: e.target.value })} />}</Field>
                  <Field label={`Type of ${choice.name || "the new attribute"}`}>
                    {(props) => (
                      <select {...props} value={choice.type} onChange={(e) => choose(cell, { ...choice, type: e.target.value as AttributeType })}>
                        {ATTRIBUTE_TYPES.map((type) => (
                          <option key={type} value={type}>
                            {type}
                          </option>
                        ))}
                      </select>
                    )}
                  </Field>
                </>
              )}
            </div>
          );
        })}
      </div>
      <FormActions submitLabel={`Import ${file.name}`} busy={busy} onCancel={onCancel} />
    </form>
  );
}

const VIA_WORDS: Record<ImportHistoryEntry["via"], string> = { api: "API bulk upload", panel: "panel", broadcast: "campaign file" };

/** The import history of the panel or one list, newest first: kept by the Worker, so it survives a reload. */
export function ImportHistory({ panelId, listId, version = 0 }: { panelId: string; listId?: number; version?: number }) {
  const [cursor, setCursor] = useState<string>();
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const query = new URLSearchParams({ limit: "10", ...(listId === undefined ? {} : { list: String(listId) }), ...(cursor ? { cursor } : {}) });
  const { data, error } = useLoad(() => admin<ImportHistoryPage>("GET", panelId, `/imports?${query}`), [panelId, listId, cursor, version]);
  return (
    <>
      <ErrorNote error={error} />
      <DataTable
        caption={listId === undefined ? "Imports of this panel, newest first" : "Imports into this list, newest first"}
        rows={data?.imports}
        rowKey={(job) => job.jobid}
        empty={<Empty title="No imports yet">Imports appear here, from the panel and from the API's bulk upload alike, with their results and error reports.</Empty>}
        columns={[
          { header: "Started", cell: (job) => formatTime(job.created_at) },
          { header: "By", cell: (job) => VIA_WORDS[job.via] },
          { header: "File", cell: (job) => job.files.join(", ") + (job.mapped ? " (columns mapped)" : "") },
          listId === undefined && { header: "List", cell: (job) => (job.list ? (job.list.name ?? `list ${job.list.id} (deleted)`) : "—") },
          {
            header: "Result",
            cell: (job) => (
              <>
                {job.status}: {job.total} rows, {job.created} created, {job.updated} updated, {job.failed} refused
                {job.reason && <span className="error"> {job.reason}</span>}
              </>
            ),
          },
          {
            header: "Error report",
            cell: (job) =>
              job.error_report ? (
                <a href={job.error_report} download>
                  Download<span className="visually-hidden"> the error report of {job.files.join(", ")}</span>
                </a>
              ) : (
                "—"
              ),
          },
        ]}
        pagerLabel="Import history pages"
        serverPages={{
          onPrevious: trail.length
            ? () => {
                setCursor(trail.at(-1));
                setTrail(trail.slice(0, -1));
              }
            : undefined,
          onNext: data?.next_cursor
            ? () => {
                setTrail([...trail, cursor]);
                setCursor(data.next_cursor!);
              }
            : undefined,
        }}
      />
    </>
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

  // A chosen file is read for its header first, then its columns are mapped before it is sent.
  const [chosen, setChosen] = useState<{ file: File; header: string[] }>();
  const upload = (file: File) =>
    run(async () => {
      const header = await headerOf(file);
      if (header.length === 0) throw new Error(`${file.name} has no header row`);
      setJobId(undefined);
      setChosen({ file, header });
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
            <p className="muted">The first row names the columns; you then send each to an attribute, a new attribute, or skip it. The primary key's column is required.</p>
          </div>
          <form className="row url-import" onSubmit={importUrl} aria-label={`Import into ${list.name} from a URL`}>
            <Field label="CSV file URL" hint="http(s); fetched by the same import engine as the API's bulk upload" error={fetched.fields.url}>
              {(props) => <input {...props} type="url" required value={url} onChange={(e) => setUrl(e.target.value)} />}
            </Field>
            <button type="submit" disabled={fetched.busy}>
              Import from URL
            </button>
          </form>
          <ErrorNote error={unplacedFailure(fetched.failure, fetched.fields, ["url"])} />
        </>
      )}
      {chosen && (
        <ColumnMapper
          panelId={panelId}
          list={list}
          file={chosen.file}
          header={chosen.header}
          onCancel={() => setChosen(undefined)}
          onStarted={(id) => {
            setChosen(undefined);
            setJobId(id);
          }}
        />
      )}
      {jobId && <JobProgress panelId={panelId} jobId={jobId} onDone={onChanged} />}
      {confirmation}
    </li>
  );
}

export function Lists({ panel }: ScreenProps) {
  const [version, setVersion] = useState(0);
  const { data, error, reload: reloadLists } = useLoad(() => admin<{ lists: ListView[] }>("GET", panel.id, "/lists"), [panel.id]);
  // A finished import changes the counts and the history alike.
  const reload = () => {
    reloadLists();
    setVersion((v) => v + 1);
  };
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
      <ErrorNote error={error ?? unplacedFailure(failure, fields, ["name"])} />
      {!data ? (
        <Loading />
      ) : data.lists.length === 0 ? (
        <EmptyFor panel={panel} work="audience" title="No lists yet">
          Create a list above, then drop a CSV file of contacts on it.
        </EmptyFor>
      ) : (
        <ul className="plain">
          {data.lists.map((list) => (
            <ListRow key={list.id} panel={panel} list={list} onChanged={reload} />
          ))}
        </ul>
      )}
      <h2>Import history</h2>
      <ImportHistory panelId={panel.id} version={version} />
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
              <EmptyFor panel={panel} work="audience" title="No members" otherwise="Contacts join it when a file is imported into it, or when the API adds them with its listid.">
                Drop a CSV file on the list or import one from a URL in <Link href={`${base}/lists`}>Lists</Link>; contacts added through the API with its listid join it too.
              </EmptyFor>
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
          <h2>Imports into this list</h2>
          <ImportHistory panelId={panel.id} listId={data.list.id} />
        </>
      )}
      {confirmation}
    </Screen>
  );
}
