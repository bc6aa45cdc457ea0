import { useState, type FormEvent } from "react";
import { admin } from "../api";
import type { AttributeView, FormSettingsView, ListView, SignupFormInput, SignupFormSummaryView, SignupFormView } from "../../../src/domain/answers";
import { useConfirm } from "../components/confirm-dialog";
import { EmptyFor, may } from "../components/role";
import { DataTable, PAGE_SIZE } from "../components/data-table";
import { SignupFormFacts } from "./signup-form-facts";
import type { ScreenProps } from "../screen-props";
import { CopyButton, ErrorNote, failureOf, Field, FormActions, formatTime, Loading, Screen, useLoad, useSubmit, unplacedFailure } from "../ui";

// Signup forms (issue 45): every role reads them (a viewer their settings as text); marketers and
// owners make and change them.
// Each form is a hosted page, an HTML snippet to paste into any site, and a JSON endpoint.
// Owners also set the Turnstile secret, what consent records keep, and download those records.

const formPath = (id = "") => `/forms${id ? `/${encodeURIComponent(id)}` : ""}`;

type Draft = Required<Pick<SignupFormInput, "name" | "title" | "consent_text" | "confirmation_text" | "thank_you_text">> & {
  fields: Array<{ attribute: string; label: string; required: boolean }>;
  lists: number[];
  redirect_url: string;
  allowed_origins: string;
  double_opt_in: boolean;
  turnstile_site_key: string;
};

const EMPTY: Draft = {
  name: "",
  title: "",
  fields: [{ attribute: "EMAIL", label: "Email address", required: true }],
  lists: [],
  consent_text: "I agree to receive email from you. I can unsubscribe at any time.",
  confirmation_text: "",
  thank_you_text: "",
  redirect_url: "",
  allowed_origins: "",
  double_opt_in: true,
  turnstile_site_key: "",
};

function draftOf(form: SignupFormView): Draft {
  return {
    name: form.name,
    title: form.title,
    fields: form.fields.map((f) => ({ attribute: f.attribute, label: f.label ?? "", required: f.required })),
    lists: form.lists,
    consent_text: form.consent_text,
    confirmation_text: form.confirmation_text,
    thank_you_text: form.thank_you_text,
    redirect_url: form.redirect_url ?? "",
    allowed_origins: form.allowed_origins.join("\n"),
    double_opt_in: form.double_opt_in,
    turnstile_site_key: form.turnstile_site_key ?? "",
  };
}

function bodyOf(draft: Draft): SignupFormInput {
  return {
    name: draft.name,
    title: draft.title,
    fields: draft.fields.map((f) => ({ attribute: f.attribute, ...(f.label.trim() ? { label: f.label.trim() } : {}), required: f.required })),
    lists: draft.lists,
    consent_text: draft.consent_text,
    confirmation_text: draft.confirmation_text,
    thank_you_text: draft.thank_you_text,
    redirect_url: draft.redirect_url.trim() || null,
    allowed_origins: draft.allowed_origins.split(/\s+/).filter(Boolean),
    double_opt_in: draft.double_opt_in,
    turnstile_site_key: draft.turnstile_site_key.trim() || null,
  };
}

function FormEditor({
  form,
  attributes,
  lists,
  title,
  submitLabel,
  save,
  onCancel,
}: {
  form?: SignupFormView;
  attributes: AttributeView[];
  lists: ListView[];
  title: string;
  submitLabel: string;
  save: (body: SignupFormInput) => Promise<unknown>;
  onCancel?: () => void;
}) {
  const [draft, setDraft] = useState<Draft>(form ? draftOf(form) : EMPTY);
  const { failure, fields, busy, run } = useSubmit();
  const set = <K extends keyof Draft>(name: K, value: Draft[K]) => setDraft((d) => ({ ...d, [name]: value }));
  const setField = (i: number, change: Partial<Draft["fields"][number]>) => set("fields", draft.fields.map((f, j) => (j === i ? { ...f, ...change } : f)));
  const unused = attributes.filter((a) => !draft.fields.some((f) => f.attribute === a.name));
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if ((await run(() => save(bodyOf(draft)))) && !form) setDraft(EMPTY);
  };

  return (
    <form className="card" onSubmit={submit} aria-label={title}>
      <h2>{title}</h2>
      <ErrorNote error={unplacedFailure(failure, fields, (field) => FORM_FIELDS.includes(field) || /^(fields\.\d+\.attribute|allowed_origins\.\d+)$/.test(field))} />
      <div className="row">
        <Field label="Form name" hint="Unique in the panel; visitors do not see it" error={fields.name}>
          {(props) => <input {...props} required value={draft.name} onChange={(e) => set("name", e.target.value)} />}
        </Field>
        <Field label="Page heading" hint="The hosted page's title" error={fields.title}>
          {(props) => <input {...props} value={draft.title} onChange={(e) => set("title", e.target.value)} />}
        </Field>
      </div>
      <fieldset>
        <legend>Fields</legend>
        {fields.fields && <p className="error">{fields.fields}</p>}
        {draft.fields.map((f, i) => (
          <div className="row" key={`${f.attribute}-${i}`}>
            <Field label={`Field ${i + 1}: attribute`} error={fields[`fields.${i}.attribute`]}>
              {(props) => (
                <select {...props} value={f.attribute} onChange={(e) => setField(i, { attribute: e.target.value })}>
                  {[f.attribute, ...unused.map((a) => a.name)].map((name) => (
                    <option key={name} value={name}>
                      {name}
                    </option>
                  ))}
                </select>
              )}
            </Field>
            <Field label={`Field ${i + 1}: label`}>{(props) => <input {...props} value={f.label} onChange={(e) => setField(i, { label: e.target.value })} />}</Field>
            <label className="check">
              <input type="checkbox" checked={f.required} onChange={(e) => setField(i, { required: e.target.checked })} /> Required
            </label>
            <button type="button" className="secondary" onClick={() => set("fields", draft.fields.filter((_, j) => j !== i))}>
              Remove<span className="visually-hidden"> field {f.attribute}</span>
            </button>
          </div>
        ))}
        {unused.length > 0 && (
          <button type="button" className="secondary" onClick={() => set("fields", [...draft.fields, { attribute: unused[0]!.name, label: "", required: false }])}>
            Add a field
          </button>
        )}
      </fieldset>
      <fieldset>
        <legend>Lists offered</legend>
        {fields.lists && <p className="error">{fields.lists}</p>}
        {lists.length === 0 && <p className="muted">The panel has no lists yet.</p>}
        {lists.map((list) => (
          <label className="check" key={list.id}>
            <input
              type="checkbox"
              checked={draft.lists.includes(list.id)}
              onChange={(e) => set("lists", e.target.checked ? [...draft.lists, list.id] : draft.lists.filter((id) => id !== list.id))}
            />{" "}
            {list.name}
          </label>
        ))}
        <p className="muted">One list is joined without asking; with several, visitors tick the ones they want.</p>
      </fieldset>
      <Field label="Consent text" hint="Shown above the button and kept in each consent record" error={fields.consent_text}>
        {(props) => <textarea {...props} rows={2} value={draft.consent_text} onChange={(e) => set("consent_text", e.target.value)} />}
      </Field>
      <label className="check">
        <input type="checkbox" checked={draft.double_opt_in} onChange={(e) => set("double_opt_in", e.target.checked)} /> Double opt-in: lists are joined only after the
        visitor confirms by email (the link works 48 hours)
      </label>
      {fields.double_opt_in && <p className="error">{fields.double_opt_in}</p>}
      <div className="row">
        <Field label="Confirmation text" hint="With double opt-in: the page after submitting, and the email's opening" error={fields.confirmation_text}>
          {(props) => <textarea {...props} rows={2} value={draft.confirmation_text} onChange={(e) => set("confirmation_text", e.target.value)} />}
        </Field>
        <Field label="Thank-you text" hint="Once subscribed" error={fields.thank_you_text}>
          {(props) => <textarea {...props} rows={2} value={draft.thank_you_text} onChange={(e) => set("thank_you_text", e.target.value)} />}
        </Field>
      </div>
      <div className="row">
        <Field label="Redirect after success (optional)" hint="https://… instead of the thank-you page" error={fields.redirect_url}>
          {(props) => <input {...props} type="url" value={draft.redirect_url} onChange={(e) => set("redirect_url", e.target.value)} />}
        </Field>
        <Field label="Turnstile site key (optional)" hint="Turns Cloudflare Turnstile on; the secret goes in the form settings" error={fields.turnstile_site_key}>
          {(props) => <input {...props} value={draft.turnstile_site_key} onChange={(e) => set("turnstile_site_key", e.target.value)} />}
        </Field>
      </div>
      <Field label="Allowed origins" hint="Sites whose pages may post to the form, one per line (https://shop.example.com)" error={fields.allowed_origins ?? fields["allowed_origins.0"]}>
        {(props) => <textarea {...props} rows={2} value={draft.allowed_origins} onChange={(e) => set("allowed_origins", e.target.value)} />}
      </Field>
      <FormActions submitLabel={submitLabel} busy={busy} onCancel={onCancel} />
    </form>
  );
}

function Snippet({ form }: { form: SignupFormView }) {
  return (
    <section className="card" aria-label={`Snippet of ${form.name}`}>
      <h2>Put {form.name} on a site</h2>
      <p>
        Hosted page:{" "}
        <a href={form.hosted_url} target="_blank" rel="noreferrer">
          {form.hosted_url}
        </a>
      </p>
      <p className="muted">Or paste this HTML into any page (it works without script); sites posting JSON with fetch use {form.json_url}.</p>
      <pre className="code">
        <code>{form.snippet}</code>
      </pre>
      <CopyButton text={form.snippet} label="Copy snippet" />
    </section>
  );
}

function FormSettings({ panelId, owner }: { panelId: string; owner: boolean }) {
  const { data, error, reload } = useLoad(() => admin<FormSettingsView>("GET", panelId, "/form-settings"), [panelId]);
  const [secret, setSecret] = useState("");
  const { failure, fields, busy, run } = useSubmit(reload);
  if (!data) return <ErrorNote error={error} />;
  const save = (body: { turnstile_secret?: string | null; consent_keeps_client?: boolean }) => run(() => admin("PUT", panelId, "/form-settings", body));
  return (
    <section className="card" aria-label="Form settings">
      <h2>Form settings</h2>
      <ErrorNote error={unplacedFailure(failure, fields, ["turnstile_secret"])} />
      <p>Turnstile secret: {data.turnstile_secret_set ? "set" : "not set"}</p>
      {owner && (
        <>
          <form
            className="row"
            onSubmit={(e) => {
              e.preventDefault();
              void save({ turnstile_secret: secret }).then((ok) => ok && setSecret(""));
            }}
          >
            <Field label="Turnstile secret key" hint="Kept encrypted; never shown again" error={fields.turnstile_secret}>
              {(props) => <input {...props} type="password" autoComplete="off" required value={secret} onChange={(e) => setSecret(e.target.value)} />}
            </Field>
            <button type="submit" disabled={busy}>
              Save secret
            </button>
          </form>
          <label className="check">
            <input type="checkbox" checked={data.consent_keeps_client} disabled={busy} onChange={(e) => void save({ consent_keeps_client: e.target.checked })} /> Consent records
            keep the visitor's IP address and browser
          </label>
          <p>
            <a href={`/admin/v1/panels/${encodeURIComponent(panelId)}/consent.csv`} download>
              Download consent records (CSV)
            </a>
          </p>
        </>
      )}
    </section>
  );
}

/** The form's settings shown at an input of their own: a refusal naming only these is shown there, not again on top. */
const FORM_FIELDS = ["name", "title", "fields", "consent_text", "confirmation_text", "thank_you_text", "redirect_url", "turnstile_site_key", "allowed_origins"];

export function Forms({ panel }: ScreenProps) {
  const writable = may(panel, "forms");
  const [confirm, confirmation] = useConfirm();
  const { data, error, reload } = useLoad(
    async () => {
      const [forms, attributes, lists] = await Promise.all([
        admin<{ forms: SignupFormSummaryView[] }>("GET", panel.id, formPath()),
        admin<{ attributes: AttributeView[] }>("GET", panel.id, "/attributes"),
        admin<{ lists: ListView[] }>("GET", panel.id, "/lists"),
      ]);
      return { forms: forms.forms, attributes: attributes.attributes, lists: lists.lists };
    },
    [panel.id],
  );
  const [open, setOpen] = useState<SignupFormView | null>(null);
  const [failure, setFailure] = useState<string>();

  const create = async (body: SignupFormInput) => {
    setOpen(await admin<SignupFormView>("POST", panel.id, formPath(), body));
    reload();
  };
  const change = (id: string) => async (body: SignupFormInput) => {
    setOpen(await admin<SignupFormView>("PUT", panel.id, formPath(id), body));
    reload();
  };
  const show = async (form: SignupFormSummaryView) => {
    setFailure(undefined);
    try {
      setOpen(await admin<SignupFormView>("GET", panel.id, formPath(form.id)));
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };
  const remove = async (form: SignupFormSummaryView) => {
    const message = `Delete the signup form ${form.name}? Its page and snippet stop taking signups, and confirmation links not yet followed stop working.`;
    if (!(await confirm({ title: "Delete this signup form?", message, confirmLabel: "Delete form" }))) return;
    setFailure(undefined);
    try {
      await admin("DELETE", panel.id, formPath(form.id));
      if (open?.id === form.id) setOpen(null);
      reload();
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };

  return (
    <Screen title="Signup forms">
      <p className="muted">Forms that let a site's visitors subscribe themselves: a hosted page, an HTML snippet for any site, and a JSON endpoint.</p>
      <ErrorNote error={error ?? failure} />
      <DataTable
        caption="Signup forms of the panel"
        rows={data?.forms}
        rowKey={(form) => form.id}
        rowLabel={(form) => `Signup form ${form.name}`}
        loading={!error && <Loading />}
        pageSize={PAGE_SIZE}
        empty={
          <EmptyFor panel={panel} work="forms" title="No signup forms yet">
            Make one below, then link its page or paste its snippet into a site.
          </EmptyFor>
        }
        columns={[
          { header: "Name", rowHeader: true, cell: (form) => form.name, sortBy: (form) => form.name },
          { header: "Double opt-in", cell: (form) => (form.double_opt_in ? "On" : "Off") },
          { header: "Turnstile", cell: (form) => (form.turnstile_site_key ? "On" : "Off") },
          { header: "Updated", cell: (form) => formatTime(form.updated_at), sortBy: (form) => form.updated_at },
          {
            header: "Actions",
            cell: (form) => (
              <div className="row">
                <button type="button" className="secondary" onClick={() => void show(form)}>
                  {writable ? "Edit" : "View"}
                  <span className="visually-hidden"> {form.name}</span>
                </button>
                {writable && (
                  <button type="button" className="danger" onClick={() => void remove(form)}>
                    Delete<span className="visually-hidden"> {form.name}</span>
                  </button>
                )}
              </div>
            ),
          },
        ]}
      />
      {open && data && (
        <>
          <Snippet form={open} />
          {writable ? (
            <FormEditor
              key={`${open.id}-${open.updated_at}`}
              form={open}
              attributes={data.attributes}
              lists={data.lists}
              title={`Edit ${open.name}`}
              submitLabel="Save form"
              save={change(open.id)}
              onCancel={() => setOpen(null)}
            />
          ) : (
            <SignupFormFacts form={open} lists={data.lists} onClose={() => setOpen(null)} />
          )}
        </>
      )}
      {writable && data && <FormEditor attributes={data.attributes} lists={data.lists} title="New signup form" submitLabel="Add form" save={create} />}
      <FormSettings panelId={panel.id} owner={may(panel, "channelSettings")} />
      {confirmation}
    </Screen>
  );
}
