import { useState, type FormEvent } from "react";
import { admin } from "../api";
import type { TopicInput, TopicView } from "../../../src/domain/answers";
import { useConfirm } from "../components/confirm-dialog";
import { DataTable, PAGE_SIZE } from "../components/data-table";
import { EmptyFor, may, RoleNote } from "../components/role";
import type { ScreenProps } from "../screen-props";
import { ErrorNote, failureOf, Field, FormActions, formatTime, Loading, Screen, unplacedFailure, useLoad, useSubmit } from "../ui";

// The panel's topics (issue 45, item 4): the subscription groups shown as boxes on the
// preference page, which campaigns and journey message steps may name. Every role reads them;
// marketers and owners add, rename, describe and delete them, as the admin routes allow.

const topicPath = (id = "") => `/topics${id ? `/${encodeURIComponent(id)}` : ""}`;

const EMPTY: TopicInput = { name: "", description: "" };

function TopicForm({ topic, save, onCancel }: { topic?: TopicView; save: (body: TopicInput) => Promise<unknown>; onCancel?: () => void }) {
  const [draft, setDraft] = useState<TopicInput>(topic ? { name: topic.name, description: topic.description } : EMPTY);
  const { failure, fields, busy, run } = useSubmit();
  const title = topic ? `Edit ${topic.name}` : "New topic";
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if ((await run(() => save(draft))) && !topic) setDraft(EMPTY);
  };
  return (
    <form className="card" onSubmit={submit} aria-label={title}>
      <h2>{title}</h2>
      <ErrorNote error={unplacedFailure(failure, fields, ["name", "description"])} />
      <Field label="Topic name" hint="Unique in the panel; recipients see it on the preference page" error={fields.name}>
        {(props) => <input {...props} required maxLength={100} value={draft.name} onChange={(e) => setDraft((d) => ({ ...d, name: e.target.value }))} />}
      </Field>
      <Field label="Description (optional)" hint="Shown under the name: what the topic's messages are about" error={fields.description}>
        {(props) => <textarea {...props} rows={2} maxLength={500} value={draft.description ?? ""} onChange={(e) => setDraft((d) => ({ ...d, description: e.target.value }))} />}
      </Field>
      <FormActions submitLabel={topic ? "Save topic" : "Add topic"} busy={busy} onCancel={onCancel} />
    </form>
  );
}

export function Topics({ panel }: ScreenProps) {
  const writable = may(panel, "topics");
  const [confirm, confirmation] = useConfirm();
  const { data, error, reload } = useLoad(() => admin<{ topics: TopicView[] }>("GET", panel.id, topicPath()), [panel.id]);
  const [editing, setEditing] = useState<TopicView | null>(null);
  const [failure, setFailure] = useState<string>();

  const create = async (body: TopicInput) => {
    await admin("POST", panel.id, topicPath(), body);
    reload();
  };
  const change = (id: string) => async (body: TopicInput) => {
    await admin("PUT", panel.id, topicPath(id), body);
    setEditing(null);
    reload();
  };
  const remove = async (topic: TopicView) => {
    const message = `Delete the topic ${topic.name}? Who left it is forgotten, and campaigns and journey steps that name it then reach everyone their audience holds.`;
    if (!(await confirm({ title: "Delete this topic?", message, confirmLabel: "Delete topic" }))) return;
    setFailure(undefined);
    try {
      await admin("DELETE", panel.id, topicPath(topic.id));
      if (editing?.id === topic.id) setEditing(null);
      reload();
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };

  return (
    <Screen title="Topics">
      <p className="muted">
        What recipients can choose to hear about: each topic is a box on the preference page. Every contact is in every topic until they leave it; a campaign or journey message about a topic skips those who left.
      </p>
      <ErrorNote error={error ?? failure} />
      <DataTable
        caption="Topics of the panel"
        rows={data?.topics}
        rowKey={(topic) => topic.id}
        rowLabel={(topic) => `Topic ${topic.name}`}
        loading={!error && <Loading />}
        pageSize={PAGE_SIZE}
        empty={
          <EmptyFor panel={panel} work="topics" title="No topics yet">
            Add one, then name it on a campaign or a journey message.
          </EmptyFor>
        }
        columns={[
          { header: "Name", rowHeader: true, cell: (topic) => topic.name, sortBy: (topic) => topic.name },
          { header: "Description", cell: (topic) => topic.description || <span className="muted">None</span> },
          { header: "Id", cell: (topic) => <code>{topic.id}</code> },
          { header: "Updated", cell: (topic) => formatTime(topic.updated_at), sortBy: (topic) => topic.updated_at },
          ...(writable
            ? [
                {
                  header: "Actions",
                  cell: (topic: TopicView) => (
                    <div className="row">
                      <button type="button" className="secondary" onClick={() => setEditing(topic)}>
                        Edit<span className="visually-hidden"> {topic.name}</span>
                      </button>
                      <button type="button" className="danger" onClick={() => void remove(topic)}>
                        Delete<span className="visually-hidden"> {topic.name}</span>
                      </button>
                    </div>
                  ),
                },
              ]
            : []),
        ]}
      />
      {editing && <TopicForm key={editing.id} topic={editing} save={change(editing.id)} onCancel={() => setEditing(null)} />}
      {writable ? <TopicForm save={create} /> : <RoleNote panel={panel} work="topics" what="Adding, renaming and deleting topics" />}
      {confirmation}
    </Screen>
  );
}
