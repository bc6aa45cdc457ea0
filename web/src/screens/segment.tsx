import { useEffect, useState } from "react";
import { admin } from "../api";
import { navigate, Link } from "../router";
import type { SegmentExportView, SegmentHistoryView, SegmentPage } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { ErrorNote, formatTime, countFigure, Loading, Screen, useLoad, useSubmit } from "../ui";
import { editorStateOf, SegmentEditor } from "./segments";
import { useConfirm } from "../components/confirm-dialog";
import { EmptyFor, may } from "../components/role";
import type { PanelRef, ScreenProps } from "../screen-props";


/** Entries and exits per day over the last 30 days. */
function SizeOverTime({ panelId, segmentId, after }: { panelId: string; segmentId: string; after: unknown }) {
  const { data, error } = useLoad(() => admin<SegmentHistoryView>("GET", panelId, `/segments/${encodeURIComponent(segmentId)}/history?days=30`), [panelId, segmentId, after]);
  if (error) return <ErrorNote error={error} />;
  return (
    <DataTable
      caption="Contacts entering and leaving the segment per day (UTC)"
      rows={data?.days}
      rowKey={(d) => d.day}
      empty={<p className="muted">No contact entered or left in the last 30 days.</p>}
      columns={[
        { header: "Day", cell: (d) => d.day },
        { header: "Entered", cell: (d) => d.entered },
        { header: "Left", cell: (d) => d.exited },
      ]}
    />
  );
}

/** The members, a page at a time (the primary key and a few attributes). */
function Members({ panel, segmentId, after }: { panel: PanelRef; segmentId: string; after: unknown }) {
  const panelId = panel.id;
  const [cursor, setCursor] = useState<string>();
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const query = new URLSearchParams({ limit: "25", ...(cursor ? { cursor } : {}) });
  const { data, error } = useLoad(
    () => admin<{ contacts: Record<string, unknown>[]; next_cursor: string | null }>("GET", panelId, `/segments/${encodeURIComponent(segmentId)}/contacts?${query}`),
    [panelId, segmentId, query.toString(), after],
  );
  if (error) return <ErrorNote error={error} />;
  const columns = [...new Set((data?.contacts ?? []).flatMap((c) => Object.keys(c)))].slice(0, 5);
  return (
    <DataTable
      caption="Members of the segment"
      rows={data?.contacts}
      rowKey={(_, i) => i}
      empty={
        <EmptyFor panel={panel} work="audience" title="No members now" otherwise="Contacts join as soon as they match.">
          Contacts join as soon as they match; edit the conditions below if none should.
        </EmptyFor>
      }
      columns={columns.map((c) => ({ header: c, cell: (contact: Record<string, unknown>) => (contact[c] === undefined ? "" : String(contact[c])) }))}
      pagerLabel="Members pages"
      serverPages={{
        onPrevious: trail.length ? () => (setCursor(trail.at(-1)), setTrail(trail.slice(0, -1))) : undefined,
        onNext: data?.next_cursor ? () => (setTrail([...trail, cursor]), setCursor(data.next_cursor!)) : undefined,
      }}
    />
  );
}

/** Starts a CSV export and follows it until its file can be downloaded. */
function ExportCsv({ panelId, segmentId }: { panelId: string; segmentId: string }) {
  const [job, setJob] = useState<SegmentExportView>();
  const { failure, busy, run } = useSubmit();
  const running = job && (job.status === "queued" || job.status === "running");
  useEffect(() => {
    if (!running) return;
    const timer = setTimeout(() => void admin<SegmentExportView>("GET", panelId, `/jobs/${encodeURIComponent(job.jobid)}`).then(setJob, () => undefined), 1000);
    return () => clearTimeout(timer);
  }, [panelId, job, running]);
  const start = () =>
    run(async () => {
      const started = await admin<{ jobid: string }>("POST", panelId, `/segments/${encodeURIComponent(segmentId)}/export`);
      setJob(await admin<SegmentExportView>("GET", panelId, `/jobs/${encodeURIComponent(started.jobid)}`));
    });
  return (
    <div className="card">
      <button type="button" className="secondary" disabled={busy || running} onClick={() => void start()}>
        Export members as CSV
      </button>
      <ErrorNote error={failure} />
      {job && (
        <p role="status" aria-live="polite">
          {job.status === "completed" && job.download ? (
            <a href={job.download} download>
              Download the CSV ({job.progress.rows} {job.progress.rows === 1 ? "contact" : "contacts"})
            </a>
          ) : job.status === "failed" ? (
            <span className="error">The export failed: {job.reason}</span>
          ) : (
            <>
              Exporting… {job.progress.rows} of {job.progress.total} contacts
            </>
          )}
        </p>
      )}
    </div>
  );
}

/** One saved segment: its size now and over time, its members, an export, and its definition to edit or delete. */
export function Segment({ panel, params }: ScreenProps) {
  const id = params.id ?? "";
  const [version, setVersion] = useState(0);
  const { data, error } = useLoad(() => admin<SegmentPage>("GET", panel.id, `/segments/${encodeURIComponent(id)}`), [panel.id, id, version]);
  const removed = useSubmit(() => navigate(`/panels/${encodeURIComponent(panel.id)}/segments`));
  const writable = may(panel, "audience");
  const [confirm, confirmation] = useConfirm();
  const back = <Link href={`/panels/${encodeURIComponent(panel.id)}/segments`}>All segments</Link>;
  if (error) return <Screen title="Segment" actions={back}><ErrorNote error={error} /></Screen>;
  if (!data) return <Loading />;
  const editable = editorStateOf(data.match);
  return (
    <Screen title={data.name} actions={back}>
      <dl className="facts" aria-label="Segment">
        <dt>Members</dt>
        <dd>
          {countFigure(data.members, data.members_counted_at, data.members_at_least)}
          {data.building && <span className="badge">building</span>}
        </dd>
        <dt>Matching now</dt>
        <dd>{data.count ?? "—"}</dd>
        <dt>Updated</dt>
        <dd>{formatTime(data.updated_at)}</dd>
      </dl>
      <h2>Size over time</h2>
      <SizeOverTime panelId={panel.id} segmentId={id} after={version} />
      <h2>Members</h2>
      <Members panel={panel} segmentId={id} after={version} />
      {writable && <ExportCsv panelId={panel.id} segmentId={id} />}
      <h2>Conditions</h2>
      {writable && editable ? (
        <SegmentEditor key={data.updated_at} panelId={panel.id} segment={{ id, name: data.name, ...editable }} onSaved={() => setVersion((v) => v + 1)} />
      ) : (
        <>
          {writable && <p className="muted">These conditions nest groups or use clauses the editor does not show; change them through the API (PUT /segments/{id}).</p>}
          <pre aria-label="Segment definition">{JSON.stringify(data.match, null, 2)}</pre>
        </>
      )}
      {writable && (
        <div className="row">
          <button type="button" className="danger" disabled={removed.busy} onClick={async () => {
              const deleting = await confirm({
                title: "Delete this segment?",
                message: `The segment "${data.name}", its members and its size history will be deleted; this cannot be undone. Its contacts stay.`,
                confirmLabel: "Delete segment",
              });
              if (deleting) await removed.run(() => admin("DELETE", panel.id, `/segments/${encodeURIComponent(id)}`));
            }}>
            Delete segment
          </button>
          <ErrorNote error={removed.failure} />
        </div>
      )}
      {confirmation}
    </Screen>
  );
}
