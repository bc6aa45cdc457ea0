import { Fragment, useRef, useState, type FormEvent } from "react";
import { admin } from "../api";
import { Link, navigate } from "../router";
import type { AddContact, AttributeView, ChannelPreferences, ContactMessageView, ContactPage, ContactEventsPage as EventPage, ContactSearch, ContactSearchPage as SearchPage, EditContact, ErasureView, EventView, PreferenceChannel, PreferencesChange, SuppressionReason } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { MessageCopyView, useCopyToggle } from "../components/message-copy";
import { Empty, ErrorNote, Field, FormActions, failureOf, formatTime, Loading, Screen, unplacedFailure, useLoad, useSubmit, useWhenVisible } from "../ui";
import { EmptyFor, may } from "../components/role";
import type { ScreenProps } from "../screen-props";
import { ContactJourneyPaths } from "./contact-journeys";

function useAttributes(panelId: string) {
  return useLoad(() => admin<{ attributes: AttributeView[] }>("GET", panelId, "/attributes"), [panelId]).data?.attributes;
}

type Match = NonNullable<ContactSearch["match"]>;
const MATCH_WORDS: Record<Match, string> = { exact: "is", prefix: "starts with", contains: "contains" };

function searchPath(search: ContactSearch): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(search)) if (value !== undefined && value !== "") query.set(name, String(value));
  return `/contacts?${query}`;
}

/** One attribute's input: a select for a boolean, text for the rest (the API reads "31" as an integer). */
function AttributeInput({ attribute, value, onChange, props }: { attribute: AttributeView; value: string; onChange: (value: string) => void; props: { id: string; "aria-describedby"?: string; "aria-invalid"?: boolean } }) {
  return attribute.type === "boolean" ? (
    <select {...props} value={value} onChange={(e) => onChange(e.target.value)}>
      <option value="">(not set)</option>
      <option value="true">true</option>
      <option value="false">false</option>
    </select>
  ) : (
    <input {...props} value={value} onChange={(e) => onChange(e.target.value)} />
  );
}

/**
 * A new contact by hand: the primary key first (required), then every other attribute of the
 * schema; empty inputs are not sent. The Worker's refusals appear once, under their inputs.
 */
function AddContactForm({ panelId, primaryKey, attributes, onCancel }: { panelId: string; primaryKey: string; attributes: AttributeView[]; onCancel: () => void }) {
  const ordered = [...attributes.filter((a) => a.name === primaryKey), ...attributes.filter((a) => a.name !== primaryKey)];
  const [draft, setDraft] = useState<Record<string, string>>({});
  const { failure, fields, busy, run } = useSubmit();
  const fieldOf = (name: string) => `attributes.${name}`;

  const save = async (event: FormEvent) => {
    event.preventDefault();
    const values: AddContact["attributes"] = {};
    for (const attribute of ordered) {
      const text = (draft[attribute.name] ?? "").trim();
      // The key is always sent, so an empty one is refused at its field.
      if (text === "" && attribute.name !== primaryKey) continue;
      values[attribute.name] = attribute.type === "boolean" ? text === "true" : text;
    }
    const body: AddContact = { attributes: values };
    let key = "";
    if (await run(async () => (key = (await admin<{ key: string }>("POST", panelId, "/contacts", body)).key))) {
      navigate(`/panels/${encodeURIComponent(panelId)}/contacts/${encodeURIComponent(key)}`);
    }
  };

  return (
    <form className="card" onSubmit={save} aria-label="Add a contact" noValidate>
      <ErrorNote error={unplacedFailure(failure, fields, ordered.map((a) => fieldOf(a.name)))} />
      <div className="grid-fields">
        {ordered.map((attribute) => (
          <Field
            key={attribute.name}
            label={attribute.name === primaryKey ? `${attribute.name} (primary key, required)` : attribute.name}
            hint={attribute.type}
            error={fields[fieldOf(attribute.name)]}
          >
            {(props) => <AttributeInput attribute={attribute} value={draft[attribute.name] ?? ""} onChange={(value) => setDraft({ ...draft, [attribute.name]: value })} props={props} />}
          </Field>
        ))}
      </div>
      <FormActions submitLabel="Add contact" busy={busy} onCancel={onCancel} />
    </form>
  );
}

export function Contacts({ panel }: ScreenProps) {
  const [text, setText] = useState("");
  const [attribute, setAttribute] = useState("");
  const [match, setMatch] = useState<Match>("prefix");
  const [search, setSearch] = useState<ContactSearch>({ q: "", match: "prefix" });
  const attributes = useAttributes(panel.id);
  // Cursors of the pages before this one, so Previous can go back.
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const { data, error } = useLoad(() => admin<SearchPage>("GET", panel.id, searchPath(search)), [panel.id, JSON.stringify(search)]);
  const base = `/panels/${encodeURIComponent(panel.id)}`;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setTrail([]);
    setSearch({ q: text, match, ...(attribute ? { attribute } : {}) });
  };
  const searched = search.attribute ?? data?.primary_key ?? "";
  const textual = !attribute || ["string", "date"].includes(attributes?.find((a) => a.name === attribute)?.type ?? "string");
  const [adding, setAdding] = useState(false);
  const mayAdd = may(panel, "audience");

  return (
    <Screen
      title="Contacts"
      actions={
        mayAdd && !adding && attributes && data ? (
          <button type="button" onClick={() => setAdding(true)}>
            Add contact
          </button>
        ) : undefined
      }
    >
      {adding && attributes && data && <AddContactForm panelId={panel.id} primaryKey={data.primary_key} attributes={attributes} onCancel={() => setAdding(false)} />}
      <form className="card row" role="search" onSubmit={submit}>
        <Field label="Search by">
          {(props) => (
            <select
              {...props}
              value={attribute}
              onChange={(e) => {
                setAttribute(e.target.value);
                const type = attributes?.find((a) => a.name === e.target.value)?.type;
                if (type && type !== "string" && type !== "date") setMatch("exact");
              }}
            >
              <option value="">{data?.primary_key ?? "primary key"} (primary key)</option>
              {attributes
                ?.filter((a) => a.name !== data?.primary_key)
                .map((a) => (
                  <option key={a.name} value={a.name}>
                    {a.name}
                  </option>
                ))}
            </select>
          )}
        </Field>
        <Field label="Value">
          {(props) => <input {...props} type="search" value={text} onChange={(e) => setText(e.target.value)} />}
        </Field>
        <Field label="Match">
          {(props) => (
            <select {...props} value={match} onChange={(e) => setMatch(e.target.value as Match)}>
              {textual && <option value="prefix">starts with</option>}
              {textual && <option value="contains">contains</option>}
              <option value="exact">exactly</option>
            </select>
          )}
        </Field>
        <button type="submit">Search</button>
      </form>
      <ErrorNote error={error} />
      {data?.scan?.bounded && (
        <p role="status" className="muted">
          Searched the {trail.length ? "next" : "first"} {data.scan.contacts.toLocaleString()} contacts{data.contacts.length ? "" : " and found none"}; refine the search, or look at the next {data.scan.contacts.toLocaleString()} with Next.
        </p>
      )}
      <DataTable
        caption="Contacts found"
        rows={data?.contacts}
        rowKey={(contact) => contact.key}
        empty={
          search.q ? (
            <Empty title="No contact matches">
              No contact's {searched} {MATCH_WORDS[search.match ?? "prefix"]} “{search.q}”{data?.scan?.bounded ? ` among the first ${data.scan.contacts.toLocaleString()} looked at` : ""}. Try a shorter prefix{search.attribute ? "" : ", or search by another attribute"}.
            </Empty>
          ) : (
            <EmptyFor panel={panel} work="audience" title="No contacts yet" otherwise="Contacts arrive through the API (contact add, bulk upload) and with files imported into lists.">
              Add one by hand with “Add contact”; contacts also arrive through the API (contact add, bulk upload) or from a CSV file dropped on a list in <Link href={`${base}/lists`}>Lists</Link>.
            </EmptyFor>
          )
        }
        columns={[
          { header: data?.primary_key, cell: (contact) => <Link href={`${base}/contacts/${encodeURIComponent(contact.key)}`}>{contact.key}</Link> },
          { header: "Name", cell: (contact) => String(contact.attributes.NAME ?? contact.attributes.FIRSTNAME ?? "—") },
          data?.attribute !== data?.primary_key && { header: data?.attribute, cell: (contact) => String(contact.attributes[data!.attribute] ?? "—") },
          { header: "Updated", cell: (contact) => formatTime(contact.updated_at) },
        ]}
        pagerLabel="Contact pages"
        serverPages={{
          onPrevious: trail.length
            ? () => {
                const previous = trail.slice(0, -1);
                setSearch({ ...search, after: trail.at(-1) });
                setTrail(previous);
              }
            : undefined,
          onNext: data?.next_cursor
            ? () => {
                setTrail([...trail, search.after]);
                setSearch({ ...search, after: data.next_cursor! });
              }
            : undefined,
        }}
      />
    </Screen>
  );
}

/** The text an attribute's input shows for a stored value. */
function inputText(value: unknown): string {
  return value === undefined || value === null ? "" : String(value);
}

/**
 * The contact's attributes as a form: one input per attribute of the schema (the primary key
 * names the contact and stays as it is). Only changed attributes are sent, as text (the API's
 * rules read "31" as an integer); an emptied one is removed. The Worker's refusals appear under
 * their inputs.
 */
function AttributeEditor({ panelId, contact, attributes, onSaved, onCancel }: { panelId: string; contact: ContactPage; attributes: AttributeView[]; onSaved: () => void; onCancel: () => void }) {
  const editable = attributes.filter((a) => a.name !== contact.primary_key);
  const [draft, setDraft] = useState<Record<string, string>>(() => Object.fromEntries(editable.map((a) => [a.name, inputText(contact.attributes[a.name])])));
  const { failure, fields, busy, run } = useSubmit();

  const save = async (event: FormEvent) => {
    event.preventDefault();
    const changes: EditContact["attributes"] = {};
    for (const attribute of editable) {
      const before = inputText(contact.attributes[attribute.name]);
      const now = draft[attribute.name] ?? "";
      if (now === before) continue;
      changes[attribute.name] = now.trim() === "" ? null : attribute.type === "boolean" ? now === "true" : now;
    }
    if (Object.keys(changes).length === 0) return onCancel();
    const body: EditContact = { attributes: changes };
    if (await run(() => admin("PATCH", panelId, `/contacts/${encodeURIComponent(contact.key)}`, body))) onSaved();
  };

  return (
    <form className="card" onSubmit={save} aria-label="Edit attributes">
      <ErrorNote error={unplacedFailure(failure, fields, editable.map((a) => `attributes.${a.name}`))} />
      <p className="muted">
        {contact.primary_key} is the primary key and names the contact. Values follow the API's rules for their type; an emptied field removes the attribute.
      </p>
      <div className="grid-fields">
        {editable.map((attribute) => (
          <Field key={attribute.name} label={attribute.name} hint={attribute.type} error={fields[`attributes.${attribute.name}`]}>
            {(props) => <AttributeInput attribute={attribute} value={draft[attribute.name] ?? ""} onChange={(value) => setDraft({ ...draft, [attribute.name]: value })} props={props} />}
          </Field>
        ))}
      </div>
      <FormActions submitLabel="Save attributes" busy={busy} onCancel={onCancel} />
    </form>
  );
}

const SUPPRESSION_REASONS: Record<SuppressionReason, string> = {
  unsubscribe: "unsubscribed",
  complaint: "marked as spam by the recipient (only they can subscribe again)",
  hard_bounce: "hard-bounced",
};

function Messages({ panelId, messages, base }: { panelId: string; messages: ContactMessageView[]; base: string }) {
  const { open, toggle } = useCopyToggle();
  return (
    <>
      <DataTable
        caption="Messages sent to the contact, newest first"
        rows={messages}
        rowKey={(m, index) => `${m.kind}-${m.source_id}-${m.step_id ?? ""}-${index}`}
        empty={<Empty title="No messages yet">Campaign email and journey messages sent to this contact appear here with their opens and clicks.</Empty>}
        columns={[
          { header: "When", cell: (m) => formatTime(m.at) },
          {
            header: "From",
            cell: (m) =>
              m.kind === "journey" ? (
                <>
                  Journey <Link href={`${base}/journeys/${encodeURIComponent(m.source_id)}`}>{m.source_name}</Link>, step {m.step_id}
                </>
              ) : (
                <>Campaign {m.source_name}</>
              ),
          },
          { header: "Channel", cell: (m) => m.channel },
          { header: "Subject", cell: (m) => m.subject ?? "—" },
          {
            header: "Status",
            cellProps: (m) => ({ title: m.error ?? undefined }),
            cell: (m) => (
              <>
                {m.status}
                {m.bounced && <span className="badge">bounced</span>}
                {m.unsubscribed && <span className="badge">unsubscribed</span>}
              </>
            ),
          },
          { header: "Opens", cell: (m) => m.opens },
          { header: "Clicks", cell: (m) => m.clicks },
          {
            header: "Copy",
            cell: (m) => (m.has_copy ? toggle(m.message_id, m.subject ?? "") : ""),
          },
        ]}
      />
      {open && <MessageCopyView panelId={panelId} messageId={open} />}
    </>
  );
}

const CHANNEL_NAMES: Record<PreferenceChannel, string> = { email: "Email", sms: "SMS", push: "Push notifications" };
const CHANNEL_STATES: Record<ChannelPreferences[PreferenceChannel], string> = {
  subscribed: "subscribed",
  unsubscribed: "unsubscribed (the contact's choice)",
  complained: "stopped: the contact marked email as spam; only they can subscribe again, from an email's preference page",
  bounced: "stopped: the address hard-bounced",
  stopped: "stopped by the provider or an operator",
  unreachable: "no address or number",
};

/** What the contact receives per channel, as its preference page shows it; marketers may switch a channel the contact can change. */
function Channels({ panelId, contactKey, writable }: { panelId: string; contactKey: string; writable: boolean }) {
  const path = `/contacts/${encodeURIComponent(contactKey)}/preferences`;
  const [version, setVersion] = useState(0);
  const { data, error } = useLoad(() => admin<{ preferences: ChannelPreferences }>("GET", panelId, path), [panelId, path, version]);
  const { failure, busy, run } = useSubmit(() => setVersion((v) => v + 1));
  if (error) return <ErrorNote error={error} />;
  if (!data) return <Loading />;
  const change = (channel: PreferenceChannel, to: "subscribed" | "unsubscribed") => {
    const body: PreferencesChange = { [channel]: to };
    void run(() => admin("PUT", panelId, path, body));
  };
  return (
    <div className="card">
      <dl className="facts" aria-label="Channels">
        {(Object.keys(CHANNEL_NAMES) as PreferenceChannel[]).map((channel) => {
          const state = data.preferences[channel];
          return (
            <Fragment key={channel}>
              <dt>{CHANNEL_NAMES[channel]}</dt>
              <dd>
                {CHANNEL_STATES[state]}{" "}
                {writable && (state === "subscribed" || state === "unsubscribed") && (
                  <button type="button" className="secondary" disabled={busy} onClick={() => change(channel, state === "subscribed" ? "unsubscribed" : "subscribed")}>
                    {state === "subscribed" ? `Turn ${CHANNEL_NAMES[channel].toLowerCase()} off` : `Turn ${CHANNEL_NAMES[channel].toLowerCase()} on`}
                  </button>
                )}
              </dd>
            </Fragment>
          );
        })}
      </dl>
      <ErrorNote error={failure} />
    </div>
  );
}

/** Owners' right-of-access export and erasure; erasing asks for the contact's key typed again. */
function PersonalData({ panelId, contactKey, onErased }: { panelId: string; contactKey: string; onErased: (erasure: ErasureView) => void }) {
  const [typed, setTyped] = useState("");
  const { failure, busy, run } = useSubmit();
  const path = `/contacts/${encodeURIComponent(contactKey)}`;
  const erase = async (event: FormEvent) => {
    event.preventDefault();
    await run(async () => onErased(await admin<ErasureView>("DELETE", panelId, path)));
  };
  return (
    <div className="card">
      <p>
        <a href={`/admin/v1/panels/${encodeURIComponent(panelId)}${path}/export`} download>
          Download everything held about this contact (JSON)
        </a>
      </p>
      <form onSubmit={erase} aria-label="Erase this contact">
        <p className="muted">
          Erasing removes the contact, its lists, events (archived days too), messages and journeys for good. Its email and SMS stops are kept, as hashes.
        </p>
        <Field label={`Type ${contactKey} to confirm`}>{(props) => <input {...props} value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" />}</Field>
        <button type="submit" className="danger" disabled={busy || typed !== contactKey}>
          Erase contact
        </button>
        <ErrorNote error={failure} />
      </form>
    </div>
  );
}

export function Contact({ panel, params }: ScreenProps) {
  const key = params.key!;
  const base = `/panels/${encodeURIComponent(panel.id)}`;
  const { data, error, reload } = useLoad(() => admin<ContactPage>("GET", panel.id, `/contacts/${encodeURIComponent(key)}`), [panel.id, key]);
  const attributes = useAttributes(panel.id);
  const [editing, setEditing] = useState(false);
  const [saved, setSaved] = useState(false);
  const [events, setEvents] = useState<EventView[]>([]);
  const [cursor, setCursor] = useState<string | null | undefined>(undefined);
  const [eventError, setEventError] = useState<string>();
  const first = useLoad(() => admin<EventPage>("GET", panel.id, `/contacts/${encodeURIComponent(key)}/events?limit=20`), [panel.id, key]);
  const shown = cursor === undefined ? (first.data?.events ?? []) : events;
  const next = cursor === undefined ? (first.data?.next_cursor ?? null) : cursor;
  const mayEdit = may(panel, "audience");
  const [erased, setErased] = useState<ErasureView>();

  // The observer and the button may both ask for the same page; one request goes.
  const loading = useRef(false);
  const more = async () => {
    if (!next || loading.current) return;
    loading.current = true;
    try {
      const page = await admin<EventPage>("GET", panel.id, `/contacts/${encodeURIComponent(key)}/events?limit=20&cursor=${encodeURIComponent(next)}`);
      setEvents([...shown, ...page.events]);
      setCursor(page.next_cursor);
    } catch (problem) {
      setEventError(failureOf(problem).message);
    } finally {
      loading.current = false;
    }
  };
  const olderWhenVisible = useWhenVisible(() => void more());

  if (erased) {
    return (
      <Screen title="Contact erased">
        <p role="status" className="ok">
          The contact is erased{erased.state === "archive" ? "; its archived days are being rewritten in the background" : ""}. The audit log records it as {erased.erasure_id}.
        </p>
        <Link href={`${base}/contacts`}>Back to contacts</Link>
      </Screen>
    );
  }
  return (
    <Screen title={key}>
      <ErrorNote error={error ?? first.error ?? eventError} />
      {!data ? (
        <Loading />
      ) : (
        <>
          <div className="screen-head">
            <h2>Attributes</h2>
            {mayEdit && !editing && attributes && (
              <button
                type="button"
                className="secondary"
                onClick={() => {
                  setSaved(false);
                  setEditing(true);
                }}
              >
                Edit attributes
              </button>
            )}
          </div>
          {saved && (
            <p role="status" className="ok">
              Attributes saved.
            </p>
          )}
          {editing && attributes ? (
            <AttributeEditor
              panelId={panel.id}
              contact={data}
              attributes={attributes}
              onCancel={() => setEditing(false)}
              onSaved={() => {
                setEditing(false);
                setSaved(true);
                reload();
              }}
            />
          ) : (
            <dl className="facts card" aria-label="Attributes">
              {Object.entries(data.attributes).map(([name, value]) => (
                <div key={name} style={{ display: "contents" }}>
                  <dt>{name}</dt>
                  <dd>{String(value)}</dd>
                </div>
              ))}
            </dl>
          )}
          <h2>Email</h2>
          <p className="card" data-testid="suppression">
            {data.suppression ? (
              <>
                Campaign email to <strong>{data.suppression.address}</strong> is stopped: {SUPPRESSION_REASONS[data.suppression.reason]} since {formatTime(data.suppression.since)}.
              </>
            ) : typeof data.attributes.EMAIL === "string" ? (
              <>Email to {data.attributes.EMAIL} is not suppressed.</>
            ) : (
              <>The contact has no EMAIL, so it gets no email.</>
            )}
          </p>
          <h2>Channels</h2>
          <Channels panelId={panel.id} contactKey={key} writable={mayEdit} />
          <h2>Lists</h2>
          {data.lists.length === 0 ? <p className="muted">In no list.</p> : <ul>{data.lists.map((list) => <li key={list.id}>{list.name}</li>)}</ul>}
          <h2>Messages</h2>
          <Messages panelId={panel.id} messages={data.messages} base={base} />
          <ContactJourneyPaths panelId={panel.id} contactKey={key} />
          <h2>Timeline</h2>
          {shown.length === 0 ? (
            <Empty title="No events yet">Activities recorded for this contact through the activity API, and email opens and clicks, appear here newest first.</Empty>
          ) : (
            <ol className="timeline" aria-label="Events, newest first">
              {shown.map((event) => (
                <li key={event.guid} className="card">
                  <strong>{event.name}</strong> <span className="badge">{event.channel}</span> <span className="muted">{formatTime(event.occurred_at)}</span>
                  {Object.keys(event.params ?? {}).length > 0 && <pre>{JSON.stringify(event.params, null, 2)}</pre>}
                </li>
              ))}
            </ol>
          )}
          {next && (
            <button key={next} ref={olderWhenVisible} type="button" className="secondary" onClick={() => void more()}>
              Show older events
            </button>
          )}
          {may(panel, "erasure") && (
            <>
              <h2>Personal data</h2>
              <PersonalData panelId={panel.id} contactKey={key} onErased={setErased} />
            </>
          )}
        </>
      )}
    </Screen>
  );
}
