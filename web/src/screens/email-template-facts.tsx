import type { EmailTemplateView } from "../../../src/domain/answers";
import { CopyButton, FormActions, orNone } from "../ui";

// An email template as a role that may read templates but not change them sees it: its name,
// subject and preheader as text, its body previewed as the editor previews it and its HTML source
// to read and copy (to paste into another tool), with nothing to type into or save.

export function EmailTemplateFacts({ template, onClose }: { template: EmailTemplateView; onClose: () => void }) {
  return (
    <section className="card" aria-label={`Template ${template.name}`}>
      <h2>Template {template.name}</h2>
      <dl className="facts">
        <dt>Template name</dt>
        <dd>{template.name}</dd>
        <dt>Subject</dt>
        <dd>{template.subject}</dd>
        <dt>Preheader</dt>
        <dd>{orNone(template.preheader)}</dd>
      </dl>
      <h3 id="template-preview-label">HTML body</h3>
      {/* An empty sandbox, as the editor's preview: the body's scripts, forms and links cannot run or reach the panel. */}
      <iframe title="Preview of the template's HTML body" aria-labelledby="template-preview-label" sandbox="" srcDoc={template.body_html} className="preview email-preview" />
      <details className="email-source">
        <summary>HTML source</summary>
        <CopyButton text={template.body_html} label="Copy the HTML" />
        <pre aria-label={`HTML source of ${template.name}`}>{template.body_html}</pre>
      </details>
      <FormActions busy={false} onCancel={onClose} cancelLabel="Close" />
    </section>
  );
}
