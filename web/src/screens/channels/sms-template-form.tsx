import { useState, type FormEvent } from "react";
import type { SmsTemplateInput, SmsTemplateView } from "../../../../src/domain/answers";
import { ErrorNote, Field, FormActions, useSubmit, unplacedFailure } from "../../ui";

// One SMS template's fields, for a new template or a change to one; the API measures its length.

interface Draft {
  name: string;
  body: string;
  dlt_template_id: string;
  provider_template_id: string;
}

const draftOf = (template?: SmsTemplateView): Draft => ({
  name: template?.name ?? "",
  body: template?.body ?? "",
  dlt_template_id: template?.dlt_template_id ?? "",
  provider_template_id: template?.provider_template_id ?? "",
});

/** Empty optional ids are sent as null: a change clears them. */
const bodyOf = (draft: Draft): SmsTemplateInput => ({
  name: draft.name,
  body: draft.body,
  dlt_template_id: draft.dlt_template_id.trim() || null,
  provider_template_id: draft.provider_template_id.trim() || null,
});

export function SmsTemplateForm({
  template,
  title,
  submitLabel,
  save,
  onCancel,
}: {
  template?: SmsTemplateView;
  title: string;
  submitLabel: string;
  save: (body: SmsTemplateInput) => Promise<unknown>;
  onCancel?: () => void;
}) {
  const [draft, setDraft] = useState(() => draftOf(template));
  const { failure, fields, busy, run } = useSubmit();
  const set = (name: keyof Draft, value: string) => setDraft((d) => ({ ...d, [name]: value }));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if ((await run(() => save(bodyOf(draft)))) && !template) setDraft(draftOf());
  };

  return (
    <form className="card" onSubmit={submit} aria-label={title}>
      <h3>{title}</h3>
      <ErrorNote error={unplacedFailure(failure, fields, ["name", "body", "dlt_template_id", "provider_template_id"])} />
      <Field label="Template name" error={fields.name}>
        {(props) => <input {...props} required value={draft.name} onChange={(e) => set("name", e.target.value)} />}
      </Field>
      <Field label="Message" hint="Merge tags as in email, such as {{FIRSTNAME | there}}; links are shortened when sent" error={fields.body}>
        {(props) => <textarea {...props} required rows={4} value={draft.body} onChange={(e) => set("body", e.target.value)} />}
      </Field>
      <div className="grid-fields">
        <Field label="DLT template id" hint="India: the TRAI DLT id the text is registered under" error={fields.dlt_template_id}>
          {(props) => <input {...props} value={draft.dlt_template_id} onChange={(e) => set("dlt_template_id", e.target.value)} />}
        </Field>
        <Field label="Provider template id" hint="Optional: the provider's own id for this text" error={fields.provider_template_id}>
          {(props) => <input {...props} value={draft.provider_template_id} onChange={(e) => set("provider_template_id", e.target.value)} />}
        </Field>
      </div>
      <FormActions submitLabel={submitLabel} busy={busy} onCancel={onCancel} />
    </form>
  );
}
