import type { ListView, SignupFormView } from "../../../src/domain/answers";
import { FormActions, listedOrNone, orNone } from "../ui";

// A signup form's settings as text, for a role that may read forms but not change them: the same
// settings the editor holds, named as its fields are, with nothing to type into or save (as the
// journey side panel and a webhook's facts show theirs to a viewer).

/** An empty text the hosted page and the confirmation email fill in with their own. */
const orDefault = (text: string, fallback: string) => (text.trim() ? text : fallback);

export function SignupFormFacts({ form, lists, onClose }: { form: SignupFormView; lists: ListView[]; onClose: () => void }) {
  const listNames = form.lists.map((id) => lists.find((list) => list.id === id)?.name ?? `list ${id}`);
  return (
    <section className="card" aria-label={`Settings of ${form.name}`}>
      <h2>Settings of {form.name}</h2>
      <dl className="facts">
        <dt>Form name</dt>
        <dd>{form.name}</dd>
        <dt>Page heading</dt>
        <dd>{orDefault(form.title, `the form's name (${form.name})`)}</dd>
        <dt>Fields</dt>
        <dd>
          <ul className="plain">
            {form.fields.map((f) => (
              <li key={f.attribute}>
                {f.attribute}
                {f.label ? ` labelled “${f.label}”` : ""}, {f.required ? "required" : "optional"}
              </li>
            ))}
          </ul>
        </dd>
        <dt>Lists offered</dt>
        <dd>{listedOrNone(listNames)}</dd>
        <dt>Consent text</dt>
        <dd>{orNone(form.consent_text)}</dd>
        <dt>Double opt-in</dt>
        <dd>{form.double_opt_in ? "on: lists are joined only after the visitor confirms by email" : "off"}</dd>
        <dt>Confirmation text</dt>
        <dd>{orDefault(form.confirmation_text, "the default message")}</dd>
        <dt>Thank-you text</dt>
        <dd>{orDefault(form.thank_you_text, "the default message")}</dd>
        <dt>Redirect after success</dt>
        <dd>{orNone(form.redirect_url)}</dd>
        <dt>Turnstile site key</dt>
        <dd>{orNone(form.turnstile_site_key)}</dd>
        <dt>Allowed origins</dt>
        <dd>{listedOrNone(form.allowed_origins)}</dd>
      </dl>
      <FormActions busy={false} onCancel={onClose} cancelLabel="Close" />
    </section>
  );
}
