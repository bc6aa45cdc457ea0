import { useState, type FormEvent } from "react";
import { admin } from "../api";
import type { EmailTemplateInput, EmailTemplateSummaryView, EmailTemplateView } from "../../../src/domain/answers";
import { useConfirm } from "../components/confirm-dialog";
import { EmailBody, shownByEmailBody } from "../components/email-body";
import type { EmailSource } from "../../../src/domain/email-source";
import { EmptyFor, may } from "../components/role";
import { DataTable, PAGE_SIZE } from "../components/data-table";
import { EmailTemplateFacts } from "./email-template-facts";
import type { ScreenProps } from "../screen-props";
import { ErrorNote, failureOf, Field, FormActions, formatTime, Loading, Screen, useLoad, useSubmit, unplacedFailure } from "../ui";

// The panel's saved email templates (issue 43, item 3): every role reads them (a viewer as text
// and a preview); marketers and owners add, change and delete them, as the admin routes allow.
// A campaign or a journey email step that names one copies it, so a change here reaches only
// what names it afterwards.
// (Not the journey templates of spec 6.3, which are whole journeys under Journeys → New.)

const templatePath = (id = "") => `/email-templates${id ? `/${encodeURIComponent(id)}` : ""}`;

/** The form's draft: the body's source as the editor keeps it (every default filled). */
type TemplateDraft = Omit<EmailTemplateInput, "body_source"> & { body_source: EmailSource | null };

const EMPTY: TemplateDraft = { name: "", subject: "", preheader: "", body_html: "<h1>Hello {{NAME|there}}</h1>\n<p></p>", body_source: null };

function TemplateForm({
  template,
  title,
  submitLabel,
  save,
  onCancel,
}: {
  template?: EmailTemplateView;
  title: string;
  submitLabel: string;
  save: (body: EmailTemplateInput) => Promise<unknown>;
  onCancel?: () => void;
}) {
  const start = template ? { name: template.name, subject: template.subject, preheader: template.preheader, body_html: template.body_html, body_source: template.body_source } : EMPTY;
  const [draft, setDraft] = useState<TemplateDraft>(start);
  // A new round of the editor after each template added: it starts again from a fresh message.
  const [round, setRound] = useState(0);
  const { failure, fields, busy, run } = useSubmit();
  const set = (name: "name" | "subject" | "preheader", value: string) => setDraft((d) => ({ ...d, [name]: value }));
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if ((await run(() => save(draft))) && !template) {
      setDraft(EMPTY);
      setRound((n) => n + 1);
    }
  };

  return (
    <form className="card" onSubmit={submit} aria-label={title}>
      <h2>{title}</h2>
      <ErrorNote error={unplacedFailure(failure, fields, (field) => ["name", "subject", "preheader", "body_html"].includes(field) || shownByEmailBody(field))} />
      <div className="row">
        <Field label="Template name" hint="Unique in the panel" error={fields.name}>
          {(props) => <input {...props} required value={draft.name} onChange={(e) => set("name", e.target.value)} />}
        </Field>
        <Field label="Subject" hint="{{ATTRIBUTE|fallback}} personalises it" error={fields.subject}>
          {(props) => <input {...props} required value={draft.subject} onChange={(e) => set("subject", e.target.value)} />}
        </Field>
      </div>
      <Field label="Preheader (optional)" hint="The preview text inboxes show after the subject; hidden in the message" error={fields.preheader}>
        {(props) => <input {...props} value={draft.preheader ?? ""} onChange={(e) => set("preheader", e.target.value)} />}
      </Field>
      <EmailBody
        key={round}
        value={{ html: draft.body_html, source: draft.body_source ?? null }}
        onChange={(body) => setDraft((d) => ({ ...d, body_html: body.html, body_source: body.source }))}
        label="HTML body"
        hint="At most 256 KiB; {{UNSUBSCRIBE}} places the unsubscribe link"
        previewTitle="Preview of the template's HTML body"
        error={fields.body_html}
        fields={fields}
        startVisual={!template}
      />
      <FormActions submitLabel={submitLabel} busy={busy} onCancel={onCancel} />
    </form>
  );
}

export function EmailTemplates({ panel }: ScreenProps) {
  const writable = may(panel, "campaigns");
  const [confirm, confirmation] = useConfirm();
  const { data, error, reload } = useLoad(() => admin<{ templates: EmailTemplateSummaryView[] }>("GET", panel.id, templatePath()), [panel.id]);
  const [editing, setEditing] = useState<EmailTemplateView | null>(null);
  const [failure, setFailure] = useState<string>();

  const create = async (body: EmailTemplateInput) => {
    await admin("POST", panel.id, templatePath(), body);
    reload();
  };
  const change = (id: string) => async (body: EmailTemplateInput) => {
    await admin("PUT", panel.id, templatePath(id), body);
    setEditing(null);
    reload();
  };
  const open = async (template: EmailTemplateSummaryView) => {
    setFailure(undefined);
    try {
      setEditing(await admin<EmailTemplateView>("GET", panel.id, templatePath(template.id)));
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };
  const remove = async (template: EmailTemplateSummaryView) => {
    const message = `Delete the email template ${template.name}? Campaigns and journeys made from it keep their own copy.`;
    if (!(await confirm({ title: "Delete this email template?", message, confirmLabel: "Delete template" }))) return;
    setFailure(undefined);
    try {
      await admin("DELETE", panel.id, templatePath(template.id));
      if (editing?.id === template.id) setEditing(null);
      reload();
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };

  return (
    <Screen title="Email templates">
      <p className="muted">Saved subjects and bodies for campaigns and journey emails. A campaign or journey step that uses one takes a copy: changing a template later does not change what was scheduled or sent.</p>
      <ErrorNote error={error ?? failure} />
      <DataTable
        caption="Email templates of the panel"
        rows={data?.templates}
        rowKey={(template) => template.id}
        rowLabel={(template) => `Email template ${template.name}`}
        loading={!error && <Loading />}
        pageSize={PAGE_SIZE}
        empty={
          <EmptyFor panel={panel} work="campaigns" title="No email templates yet">
            Save a subject and body once, then start campaigns and journey emails from it.
          </EmptyFor>
        }
        columns={[
          { header: "Name", rowHeader: true, cell: (template) => template.name, sortBy: (template) => template.name },
          { header: "Subject", cell: (template) => template.subject },
          { header: "Size", cell: (template) => `${Math.max(1, Math.round(template.body_bytes / 1024))} KB` },
          { header: "Updated", cell: (template) => formatTime(template.updated_at), sortBy: (template) => template.updated_at },
          {
            header: "Actions",
            cell: (template) => (
              <div className="row">
                <button type="button" className="secondary" onClick={() => void open(template)}>
                  {writable ? "Edit" : "View"}
                  <span className="visually-hidden"> {template.name}</span>
                </button>
                {writable && (
                  <button type="button" className="danger" onClick={() => void remove(template)}>
                    Delete<span className="visually-hidden"> {template.name}</span>
                  </button>
                )}
              </div>
            ),
          },
        ]}
      />
      {editing &&
        (writable ? (
          <TemplateForm key={editing.id} template={editing} title={`Edit ${editing.name}`} submitLabel="Save template" save={change(editing.id)} onCancel={() => setEditing(null)} />
        ) : (
          <EmailTemplateFacts template={editing} onClose={() => setEditing(null)} />
        ))}
      {writable && <TemplateForm title="New email template" submitLabel="Add template" save={create} />}
      {confirmation}
    </Screen>
  );
}
