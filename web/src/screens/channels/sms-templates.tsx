import { useState } from "react";
import { admin } from "../../api";
import type { SmsTemplateInput, SmsTemplateView } from "../../../../src/domain/answers";
import { DataTable, PAGE_SIZE } from "../../components/data-table";
import { Empty, ErrorNote, failureOf, Loading, useLoad } from "../../ui";
import { SmsLengthNote } from "./sms-length";
import { SmsTemplatePreview } from "./sms-preview";
import { SmsTemplateForm } from "./sms-template-form";
import { useConfirm } from "../../components/confirm-dialog";

// The panel's SMS templates: every role reads and previews them; marketers and owners add,
// change and delete them, as the admin routes allow.

const templatePath = (id = "") => `/sms/templates${id ? `/${encodeURIComponent(id)}` : ""}`;

type Open = { kind: "edit" | "preview"; template: SmsTemplateView } | null;

function TemplateActions({ template, writable, onOpen, onDelete }: { template: SmsTemplateView; writable: boolean; onOpen: (open: Open) => void; onDelete: () => void }) {
  return (
    <div className="row">
      <button type="button" className="secondary" onClick={() => onOpen({ kind: "preview", template })}>
        Preview<span className="visually-hidden"> {template.name}</span>
      </button>
      {writable && (
        <>
          <button type="button" className="secondary" onClick={() => onOpen({ kind: "edit", template })}>
            Edit<span className="visually-hidden"> {template.name}</span>
          </button>
          <button type="button" className="danger" onClick={onDelete}>
            Delete<span className="visually-hidden"> {template.name}</span>
          </button>
        </>
      )}
    </div>
  );
}

export function SmsTemplates({ panelId, writable }: { panelId: string; writable: boolean }) {
  const [confirm, confirmation] = useConfirm();
  const { data, error, reload } = useLoad(() => admin<{ templates: SmsTemplateView[] }>("GET", panelId, templatePath()), [panelId]);
  const [open, setOpen] = useState<Open>(null);
  const [failure, setFailure] = useState<string>();

  const create = async (body: SmsTemplateInput) => {
    await admin("POST", panelId, templatePath(), body);
    reload();
  };
  const change = (id: string) => async (body: SmsTemplateInput) => {
    await admin("PUT", panelId, templatePath(id), body);
    setOpen(null);
    reload();
  };
  const remove = async (template: SmsTemplateView) => {
    const message = `Delete the SMS template ${template.name}? A journey step that names it records its messages as failed.`;
    if (!(await confirm({ title: "Delete this SMS template?", message, confirmLabel: "Delete template" }))) return;
    setFailure(undefined);
    try {
      await admin("DELETE", panelId, templatePath(template.id));
      if (open?.template.id === template.id) setOpen(null);
      reload();
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };

  return (
    <section aria-labelledby="sms-templates-title">
      <h2 id="sms-templates-title">SMS templates</h2>
      <ErrorNote error={error ?? failure} />
      <DataTable
        caption="SMS templates of the panel"
        rows={data?.templates}
        rowKey={(template) => template.id}
        rowLabel={(template) => `SMS template ${template.name}`}
        loading={!error && <Loading />}
        pageSize={PAGE_SIZE}
        empty={<Empty title="No SMS templates yet">Journeys' SMS steps can name a template instead of carrying their text.</Empty>}
        columns={[
          { header: "Name", rowHeader: true, cell: (template) => template.name, sortBy: (template) => template.name },
          { header: "Message", cell: (template) => template.body },
          { header: "Length", cell: (template) => <SmsLengthNote length={template.length} /> },
          { header: "Merge tags", cell: (template) => (template.merge_tags.length ? template.merge_tags.join(", ") : "—") },
          { header: "Actions", cell: (template) => <TemplateActions template={template} writable={writable} onOpen={setOpen} onDelete={() => void remove(template)} /> },
        ]}
      />
      {open?.kind === "preview" && <SmsTemplatePreview key={open.template.id} panelId={panelId} template={open.template} onClose={() => setOpen(null)} />}
      {open?.kind === "edit" && (
        <SmsTemplateForm
          key={open.template.id}
          template={open.template}
          title={`Edit ${open.template.name}`}
          submitLabel="Save template"
          save={change(open.template.id)}
          onCancel={() => setOpen(null)}
        />
      )}
      {writable && <SmsTemplateForm title="New SMS template" submitLabel="Add template" save={create} />}
      {confirmation}
    </section>
  );
}
