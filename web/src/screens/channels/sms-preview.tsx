import { useState, type FormEvent } from "react";
import { admin } from "../../api";
import type { SmsPreview, SmsPreviewRequest, SmsTemplateView } from "../../../../src/domain/answers";
import { ErrorNote, Field, useSubmit } from "../../ui";
import { SmsLengthNote } from "./sms-length";

/** A template filled with the values given for its merge tags, as a contact would get it. */
export function SmsTemplatePreview({ panelId, template, onClose }: { panelId: string; template: SmsTemplateView; onClose: () => void }) {
  const [values, setValues] = useState<Record<string, string>>({});
  const [preview, setPreview] = useState<SmsPreview>();
  const { failure, busy, run } = useSubmit();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    // A tag left empty shows its fallback, as for a contact without the attribute.
    const attributes = Object.fromEntries(Object.entries(values).filter(([, value]) => value !== ""));
    const body: SmsPreviewRequest = { template: template.id, attributes };
    await run(async () => setPreview(await admin<SmsPreview>("POST", panelId, "/sms/preview", body)));
  };

  return (
    <form className="card" onSubmit={submit} aria-label={`Preview of ${template.name}`}>
      <h3>Preview of {template.name}</h3>
      <ErrorNote error={failure} />
      {template.merge_tags.length === 0 ? (
        <p className="muted">The template has no merge tags: every contact gets the same text.</p>
      ) : (
        <div className="grid-fields">
          {template.merge_tags.map((tag) => (
            <Field key={tag} label={tag} hint="Empty: the tag's fallback">
              {(props) => <input {...props} value={values[tag] ?? ""} onChange={(e) => setValues((v) => ({ ...v, [tag]: e.target.value }))} />}
            </Field>
          ))}
        </div>
      )}
      <div className="row">
        <button type="submit" disabled={busy}>
          Show preview
        </button>
        <button type="button" className="secondary" onClick={onClose}>
          Close preview
        </button>
      </div>
      {preview && (
        <div role="status" aria-label="Previewed message">
          <pre>{preview.text}</pre>
          <p className="muted">
            <SmsLengthNote length={preview.length} />
          </p>
        </div>
      )}
    </form>
  );
}
