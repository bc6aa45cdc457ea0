import { useState, type FormEvent } from "react";
import { admin } from "../api";
import { Link } from "../router";
import type { CampaignView, OutboxMessage, OutboxMessageView, TestSend } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { Empty, ErrorNote, Field, formatTime, Loading, Screen, useLoad, useSubmit } from "../ui";
import { audienceText, useAudienceNames } from "./campaigns";
import { CampaignReportSection } from "./campaign-report";
import type { ScreenProps } from "../screen-props";

function TestSendForm({ panelId, campaignId, onSent }: { panelId: string; campaignId: string; onSent: () => void }) {
  const [email, setEmail] = useState("");
  const [sentTo, setSentTo] = useState<string>();
  const { failure, fields, busy, run } = useSubmit(onSent);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSentTo(undefined);
    const body: TestSend = { email };
    if (await run(() => admin("POST", panelId, `/campaigns/${encodeURIComponent(campaignId)}/test`, body))) setSentTo(email);
  };
  return (
    <form className="card" onSubmit={submit} aria-label="Send a test copy">
      <Field label="Send a test copy to" hint="Subject prefixed [Test]; links as written, no tracking, no counter moves." error={fields.email}>
        {(props) => <input {...props} type="email" required value={email} onChange={(e) => setEmail(e.target.value)} />}
      </Field>
      <button type="submit" disabled={busy}>
        Send test
      </button>
      {sentTo && (
        <p role="status" className="ok">
          Test copy sent to {sentTo}.
        </p>
      )}
      <ErrorNote error={failure} />
    </form>
  );
}

/** One kept copy, its HTML shown in a sandbox that runs no script and loads nothing of the panel's. */
function SentCopy({ panelId, id }: { panelId: string; id: string }) {
  const { data, error } = useLoad(() => admin<OutboxMessage>("GET", panelId, `/outbox/${encodeURIComponent(id)}`), [panelId, id]);
  if (error) return <ErrorNote error={error} />;
  if (!data) return <Loading />;
  return (
    <section aria-label={`Copy sent to ${data.to}`}>
      <p>
        <strong>{data.subject}</strong> to {data.to}, {formatTime(data.created_at)}
      </p>
      {data.html === null ? <pre>{data.raw}</pre> : <iframe title={`HTML of the copy sent to ${data.to}`} sandbox="" srcDoc={data.html} className="preview" />}
    </section>
  );
}

function SentCopies({ panelId, campaignId, after }: { panelId: string; campaignId: string; after: number }) {
  const { data, error } = useLoad(
    () => admin<{ messages: OutboxMessageView[] }>("GET", panelId, `/outbox?campaign=${encodeURIComponent(campaignId)}&limit=20`),
    [panelId, campaignId, after],
  );
  const [open, setOpen] = useState<string>();
  if (error) return <ErrorNote error={error} />;
  return (
    <>
      <DataTable
        caption="Copies of this campaign the outbox kept, newest first"
        rows={data?.messages}
        rowKey={(m) => m.id}
        empty={<Empty title="No copies kept">The outbox keeps the copies this deployment sends when its email provider is the outbox; send a test to see one.</Empty>}
        columns={[
          {
            header: "To",
            cell: (m) => (
              <button type="button" className="link" aria-pressed={open === m.id} onClick={() => setOpen(open === m.id ? undefined : m.id)}>
                {m.to}
              </button>
            ),
          },
          { header: "Subject", cell: (m) => m.subject },
          { header: "Sent", cell: (m) => formatTime(m.created_at) },
          { header: "Note", cell: (m) => m.note ?? "" },
        ]}
      />
      {open && <SentCopy panelId={panelId} id={open} />}
    </>
  );
}

/** One campaign: what it is, how it went, a test copy and the copies kept. */
export function Campaign({ panel, params }: ScreenProps) {
  const id = params.id ?? "";
  const [sends, setSends] = useState(0);
  const { data, error } = useLoad(() => admin<CampaignView>("GET", panel.id, `/campaigns/${encodeURIComponent(id)}`), [panel.id, id, sends]);
  const names = useAudienceNames(panel.id, data?.id);
  const back = (
    <Link href={`/panels/${encodeURIComponent(panel.id)}/campaigns`}>
      All campaigns
    </Link>
  );
  if (error) return <Screen title="Campaign" actions={back}><ErrorNote error={error} /></Screen>;
  if (!data) return <Loading />;
  return (
    <Screen title={data.name} actions={back}>
      <dl className="facts" aria-label="Campaign">
        <dt>Status</dt>
        <dd>
          <span className={`badge campaign-${data.status}`}>{data.status}</span>
          {data.status_reason && <span className="muted"> {data.status_reason}</span>}
        </dd>
        <dt>Subject</dt>
        <dd>{data.subject}</dd>
        <dt>From</dt>
        <dd>
          {data.sender_name} &lt;{data.sender_email}&gt;{data.reply_to && <>, replies to {data.reply_to}</>}
        </dd>
        <dt>To</dt>
        <dd>{audienceText(data, names.data)}</dd>
        <dt>Send at</dt>
        <dd>
          {data.schedule_date} ({data.timezone})
        </dd>
        <dt>Tags</dt>
        <dd>{data.tags.length ? data.tags.join(", ") : "—"}</dd>
        <dt>Finished</dt>
        <dd>{formatTime(data.finished_at)}</dd>
      </dl>
      <CampaignReportSection panelId={panel.id} campaignId={data.id} refresh={sends} />
      {panel.role !== "viewer" && (
        <>
          <h2>Test send</h2>
          <TestSendForm panelId={panel.id} campaignId={data.id} onSent={() => setSends((n) => n + 1)} />
        </>
      )}
      <h2>Copies kept by the outbox</h2>
      <SentCopies panelId={panel.id} campaignId={data.id} after={sends} />
    </Screen>
  );
}
