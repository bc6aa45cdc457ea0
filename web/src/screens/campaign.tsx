import { useEffect, useState, type FormEvent } from "react";
import { admin } from "../api";
import { Link, navigate } from "../router";
import type { CampaignAction, CampaignView, DeletedCampaign, EditCampaign, OutboxMessage, OutboxMessageView, ScheduleCampaign, TestSend, TestSent, CampaignBody } from "../../../src/domain/answers";
import { useConfirm } from "../components/confirm-dialog";
import { EmptyFor, may, RoleNote } from "../components/role";
import { DataTable } from "../components/data-table";
import { ErrorNote, Field, formatTime, Loading, Screen, useLoad, useSubmit, unplacedFailure } from "../ui";
import { audienceText, scheduleText, useAudienceNames } from "./campaigns";
import { CampaignReportSection } from "./campaign-report";
import { AbTestForm } from "./campaign-ab-test";
import type { PanelRef, ScreenProps } from "../screen-props";
import { AudienceEstimateNote, CampaignChecksSection, CampaignPreviewSection, VariantChoice, variantLetters } from "./campaign-preview";
import { bodyMembers, EmailBody, shownByEmailBody, type EmailBodyValue } from "../components/email-body";

/** Addresses as typed: separated by commas, semicolons, spaces or new lines. */
const addressesOf = (text: string) => text.split(/[\s,;]+/).filter(Boolean);

function TestSendForm({ panelId, campaignId, onSent, variants }: { panelId: string; campaignId: string; onSent: () => void; variants: number }) {
  const [emails, setEmails] = useState("");
  const [variant, setVariant] = useState("");
  const [sentTo, setSentTo] = useState<string[]>();
  const { failure, fields, busy, run } = useSubmit(onSent);
  const chosen = variantLetters(variants).includes(variant) ? variant : "";
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSentTo(undefined);
    const to = addressesOf(emails);
    const body: TestSend = { emails: to, ...(chosen ? { variant: chosen as TestSend["variant"] } : {}) };
    if (await run(() => admin<TestSent>("POST", panelId, `/campaigns/${encodeURIComponent(campaignId)}/test`, body))) setSentTo(to);
  };
  // A refusal names emails.N: show it at the field, saying which address.
  const fieldError = Object.entries(fields).filter(([name]) => name !== "variant").map(([name, message]) => {
    const i = /^emails\.(\d+)$/.exec(name)?.[1];
    return i === undefined ? message : `${addressesOf(emails)[Number(i)]}: ${message}`;
  })[0];
  return (
    <form className="card" onSubmit={submit} aria-label="Send a test copy">
      <Field label="Send a test copy to" hint="Up to 10 addresses, separated by commas. Subject prefixed [Test]; links as written, no tracking, no counter moves." error={fieldError}>
        {(props) => <input {...props} required value={emails} onChange={(e) => setEmails(e.target.value)} />}
      </Field>
      <VariantChoice variants={variants} value={chosen} onChange={setVariant} label="Test variant" error={fields.variant} />
      <button type="submit" disabled={busy}>
        Send test
      </button>
      {sentTo && (
        <p role="status" className="ok">
          Test copy{chosen ? ` of variant ${chosen}` : ""} sent to {sentTo.join(", ")}.
        </p>
      )}
      <ErrorNote error={fieldError || fields.variant ? undefined : failure} />
    </form>
  );
}

/** The actions with a button of their own; edit and (re)schedule have forms. */
const BUTTONS: Partial<Record<CampaignAction, string>> = {
  send_now: "Send now",
  unschedule: "Back to draft",
  pause: "Pause",
  resume: "Resume",
  cancel: "Cancel campaign",
  clone: "Clone",
  delete: "Delete",
};

/** What the campaign's state allows (the Worker says which: `actions`), as buttons and forms; cancel and delete ask first. */
function Lifecycle({ panelId, campaign, onChanged }: { panelId: string; campaign: CampaignView; onChanged: () => void }) {
  const path = `/campaigns/${encodeURIComponent(campaign.id)}`;
  const { failure, fields, busy, run } = useSubmit(onChanged);
  const [confirm, dialog] = useConfirm();
  const [when, setWhen] = useState("");
  const [done, setDone] = useState<string>();
  const can = (action: CampaignAction) => campaign.actions.includes(action);
  const act = async (action: CampaignAction) => {
    setDone(undefined);
    if (action === "cancel" && !(await confirm({ title: `Cancel “${campaign.name}”?`, message: "Nothing more of it goes out; what already went out stays in its report. A cancelled campaign cannot be resumed.", confirmLabel: "Cancel campaign" }))) return;
    if (action === "delete") {
      const archives = campaign.status === "sent" || campaign.counters.sent > 0;
      const message = archives ? "It reached its recipients, so it is archived: hidden from the list, its report kept." : "The campaign and its body are deleted for good.";
      if (!(await confirm({ title: `Delete “${campaign.name}”?`, message, confirmLabel: archives ? "Archive" : "Delete" }))) return;
      await run(async () => {
        const answer = await admin<DeletedCampaign>("DELETE", panelId, path);
        if (answer.outcome === "deleted") navigate(`/panels/${encodeURIComponent(panelId)}/campaigns`);
        else setDone("Archived: its report is kept.");
      });
      return;
    }
    if (action === "clone") {
      await run(async () => {
        const copy = await admin<CampaignView>("POST", panelId, `${path}/clone`);
        navigate(`/panels/${encodeURIComponent(panelId)}/campaigns/${encodeURIComponent(copy.id)}`);
      });
      return;
    }
    const body: ScheduleCampaign | undefined = action === "send_now" ? { send_now: true } : undefined;
    await run(() => admin("POST", panelId, action === "send_now" ? `${path}/schedule` : `${path}/${action}`, body ?? {}));
  };
  const schedule = async (event: FormEvent) => {
    event.preventDefault();
    setDone(undefined);
    const body: ScheduleCampaign = { schedule_date: scheduleText(when) };
    if (await run(() => admin("POST", panelId, `${path}/schedule`, body))) setWhen("");
  };
  const buttons = (Object.keys(BUTTONS) as CampaignAction[]).filter(can);
  if (!buttons.length && !can("schedule") && !can("reschedule") && !can("edit")) return null;
  return (
    <section className="card" aria-label="Campaign actions">
      {(can("schedule") || can("reschedule")) && (
        <form onSubmit={schedule} className="row" aria-label={can("schedule") ? "Schedule" : "Reschedule"}>
          <Field label={can("schedule") ? "Schedule for" : "Reschedule to"} hint={`In the panel's time zone ${campaign.timezone}`} error={fields.schedule_date}>
            {(props) => <input {...props} type="datetime-local" step={1} required value={when} onChange={(e) => setWhen(e.target.value)} />}
          </Field>
          <button type="submit" disabled={busy}>
            {can("schedule") ? "Schedule" : "Reschedule"}
          </button>
        </form>
      )}
      {buttons.length > 0 && (
        <div className="row">
          {buttons.map((action) => (
            <button key={action} type="button" className={action === "cancel" || action === "delete" ? "danger" : "secondary"} disabled={busy} onClick={() => act(action)}>
              {BUTTONS[action]}
            </button>
          ))}
        </div>
      )}
      {done && (
        <p role="status" className="ok">
          {done}
        </p>
      )}
      <ErrorNote error={unplacedFailure(failure, fields, ["schedule_date"]) ?? fields.send_now} />
      {can("edit") && <EditForm panelId={panelId} campaign={campaign} onSaved={onChanged} />}
      {dialog}
    </section>
  );
}

/** Edits a campaign until it sends: its words, sender and (when given) a new HTML body. */
function EditForm({ panelId, campaign, onSaved }: { panelId: string; campaign: CampaignView; onSaved: () => void }) {
  const [draft, setDraft] = useState({ name: campaign.name, subject: campaign.subject, sender_name: campaign.sender_name, sender_email: campaign.sender_email, reply_to: campaign.reply_to ?? "" });
  // The body, once loaded: sent back only when it changed.
  const [body, setBody] = useState<EmailBodyValue>();
  const [saved, setSaved] = useState(false);
  const { failure, fields, busy, run } = useSubmit(onSaved);
  // The body as written, to edit in place; sent back only when changed.
  const written = useLoad(() => admin<CampaignBody>("GET", panelId, `/campaigns/${encodeURIComponent(campaign.id)}/body`), [panelId, campaign.id]);
  useEffect(() => {
    if (written.data) setBody((b) => b ?? { html: written.data!.html, source: written.data!.body_source });
  }, [written.data]);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    const edit: EditCampaign = {
      name: draft.name,
      subject: draft.subject,
      sender_name: draft.sender_name,
      sender_email: draft.sender_email,
      reply_to: draft.reply_to.trim() || null,
      ...(body && body.html.trim() && (body.html !== written.data?.html || JSON.stringify(body.source) !== JSON.stringify(written.data?.body_source)) ? bodyMembers(body) : {}),
    };
    if (await run(() => admin("PATCH", panelId, `/campaigns/${encodeURIComponent(campaign.id)}`, edit))) setSaved(true);
  };
  const text = (key: keyof typeof draft, label: string, type = "text", required = true) => (
    <Field label={label} error={fields[key]}>
      {(props) => <input {...props} type={type} required={required} value={draft[key]} onChange={(e) => setDraft((d) => ({ ...d, [key]: e.target.value }))} />}
    </Field>
  );
  return (
    <details>
      <summary>Edit</summary>
      <form onSubmit={submit} aria-label="Edit campaign">
        <div className="row">
          {text("name", "Campaign name")}
          {text("subject", "Subject line")}
        </div>
        <div className="row">
          {text("sender_name", "Sender name")}
          {text("sender_email", "Sender email", "email")}
          {text("reply_to", "Reply-to (optional)", "email", false)}
        </div>
        {written.error && <ErrorNote error={written.error} />}
        {body ? (
          <EmailBody value={body} onChange={setBody} label="HTML body" hint="Left as it is, the body stays as it is" previewTitle="Preview of the edited body" error={fields.html} fields={fields} />
        ) : (
          !written.error && <Loading />
        )}
        <button type="submit" disabled={busy}>
          Save changes
        </button>
        {saved && (
          <p role="status" className="ok">
            Saved.
          </p>
        )}
        <ErrorNote error={unplacedFailure(failure, fields, (field) => ["name", "subject", "sender_name", "sender_email", "reply_to", "html"].includes(field) || shownByEmailBody(field))} />
      </form>
    </details>
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

function SentCopies({ panel, campaignId, after }: { panel: PanelRef; campaignId: string; after: number }) {
  const panelId = panel.id;
  const mayOpen = may(panel, "outboxCopies");
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
        empty={
          <EmptyFor panel={panel} work="campaigns" title="No copies kept" otherwise="The outbox keeps the copies this deployment sends when its email provider is the outbox.">
            The outbox keeps the copies this deployment sends when its email provider is the outbox; send a test to see one.
          </EmptyFor>
        }
        columns={[
          {
            header: "To",
            cell: (m) =>
              mayOpen ? (
                <button type="button" className="link" aria-pressed={open === m.id} onClick={() => setOpen(open === m.id ? undefined : m.id)}>
                  {m.to}
                </button>
              ) : (
                m.to
              ),
          },
          { header: "Subject", cell: (m) => m.subject },
          { header: "Sent", cell: (m) => formatTime(m.created_at) },
          { header: "Note", cell: (m) => m.note ?? "" },
        ]}
      />
      <RoleNote panel={panel} work="outboxCopies" what="Opening a copy as sent (its unsubscribe links work)" />
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
        <dd>{data.status === "draft" ? "Not scheduled yet (a draft)" : `${data.schedule_date} (${data.timezone})`}</dd>
        <dt>Tags</dt>
        <dd>{data.tags.length ? data.tags.join(", ") : "—"}</dd>
        <dt>Finished</dt>
        <dd>{formatTime(data.finished_at)}</dd>
      </dl>
      {data.audience && (data.status === "draft" || data.status === "scheduled") && <AudienceEstimateNote panelId={panel.id} audience={data.audience} />}
      {may(panel, "campaigns") && <Lifecycle key={data.id} panelId={panel.id} campaign={data} onChanged={() => setSends((n) => n + 1)} />}
      {may(panel, "campaigns") && (data.status === "draft" || data.status === "scheduled") && (
        <AbTestForm key={`ab-${data.id}`} panelId={panel.id} campaignId={data.id} onSaved={() => setSends((n) => n + 1)} />
      )}
      <h2>Preview</h2>
      <CampaignPreviewSection panelId={panel.id} campaignId={data.id} refresh={sends} variants={data.ab_test?.variants ?? 0} />
      {may(panel, "campaigns") && <CampaignChecksSection panelId={panel.id} campaignId={data.id} />}
      <CampaignReportSection panelId={panel.id} campaignId={data.id} refresh={sends} />
      {may(panel, "campaigns") && (
        <>
          <h2>Test send</h2>
          <TestSendForm panelId={panel.id} campaignId={data.id} onSent={() => setSends((n) => n + 1)} variants={data.ab_test?.variants ?? 0} />
        </>
      )}
      <h2>Copies kept by the outbox</h2>
      <SentCopies panel={panel} campaignId={data.id} after={sends} />
    </Screen>
  );
}
