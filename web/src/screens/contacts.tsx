import { useState, type FormEvent } from "react";
import { admin } from "../api";
import { Link } from "../router";
import type { ContactPage, ContactSearch, ContactView, EventView } from "../types";
import { Empty, ErrorNote, Field, failureOf, formatTime, Loading, Pager, Screen, useLoad } from "../ui";
import type { ScreenProps } from ".";

interface SearchPage {
  primary_key: string;
  contacts: ContactView[];
  next_cursor: string | null;
}

function searchPath(search: ContactSearch): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(search)) if (value !== undefined && value !== "") query.set(name, String(value));
  return `/contacts?${query}`;
}

export function Contacts({ panel }: ScreenProps) {
  const [text, setText] = useState("");
  const [match, setMatch] = useState<"prefix" | "exact">("prefix");
  const [search, setSearch] = useState<ContactSearch>({ q: "", match: "prefix" });
  // Cursors of the pages before this one, so Previous can go back.
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const { data, error } = useLoad(() => admin<SearchPage>("GET", panel.id, searchPath(search)), [panel.id, JSON.stringify(search)]);
  const base = `/panels/${encodeURIComponent(panel.id)}`;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    setTrail([]);
    setSearch({ q: text, match });
  };

  return (
    <Screen title="Contacts">
      <form className="card row" role="search" onSubmit={submit}>
        <Field label={`Search by ${data?.primary_key ?? "primary key"}`}>
          {(props) => <input {...props} type="search" value={text} onChange={(e) => setText(e.target.value)} />}
        </Field>
        <Field label="Match">
          {(props) => (
            <select {...props} value={match} onChange={(e) => setMatch(e.target.value as "prefix" | "exact")}>
              <option value="prefix">starts with</option>
              <option value="exact">exactly</option>
            </select>
          )}
        </Field>
        <button type="submit">Search</button>
      </form>
      <ErrorNote error={error} />
      {!data ? (
        <Loading />
      ) : data.contacts.length === 0 ? (
        search.q ? (
          <Empty title="No contact matches">No contact's {data.primary_key} {search.match === "exact" ? "is" : "starts with"} “{search.q}”. Try a shorter prefix.</Empty>
        ) : (
          <Empty title="No contacts yet">
            Contacts arrive through the API (contact add, bulk upload) or from a CSV file dropped on a list in <Link href={`${base}/lists`}>Lists</Link>.
          </Empty>
        )
      ) : (
        <>
          <table>
            <caption className="visually-hidden">Contacts found</caption>
            <thead>
              <tr>
                <th scope="col">{data.primary_key}</th>
                <th scope="col">Name</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {data.contacts.map((contact) => (
                <tr key={contact.key}>
                  <td>
                    <Link href={`${base}/contacts/${encodeURIComponent(contact.key)}`}>{contact.key}</Link>
                  </td>
                  <td>{String(contact.attributes.NAME ?? contact.attributes.FIRSTNAME ?? "—")}</td>
                  <td>{formatTime(contact.updated_at)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager
            label="Contact pages"
            onPrevious={
              trail.length
                ? () => {
                    const previous = trail.slice(0, -1);
                    setSearch({ ...search, after: trail.at(-1) });
                    setTrail(previous);
                  }
                : undefined
            }
            onNext={
              data.next_cursor
                ? () => {
                    setTrail([...trail, search.after]);
                    setSearch({ ...search, after: data.next_cursor! });
                  }
                : undefined
            }
          />
        </>
      )}
    </Screen>
  );
}

interface EventPage {
  events: EventView[];
  next_cursor: string | null;
}

export function Contact({ panel, params }: ScreenProps) {
  const key = params.key!;
  const { data, error } = useLoad(() => admin<ContactPage>("GET", panel.id, `/contacts/${encodeURIComponent(key)}`), [panel.id, key]);
  const [events, setEvents] = useState<EventView[]>([]);
  const [cursor, setCursor] = useState<string | null | undefined>(undefined);
  const [eventError, setEventError] = useState<string>();
  const first = useLoad(() => admin<EventPage>("GET", panel.id, `/contacts/${encodeURIComponent(key)}/events?limit=20`), [panel.id, key]);
  const shown = cursor === undefined ? (first.data?.events ?? []) : events;
  const next = cursor === undefined ? (first.data?.next_cursor ?? null) : cursor;

  const more = async () => {
    try {
      const page = await admin<EventPage>("GET", panel.id, `/contacts/${encodeURIComponent(key)}/events?limit=20&cursor=${encodeURIComponent(next!)}`);
      setEvents([...shown, ...page.events]);
      setCursor(page.next_cursor);
    } catch (problem) {
      setEventError(failureOf(problem).message);
    }
  };

  return (
    <Screen title={key}>
      <ErrorNote error={error ?? first.error ?? eventError} />
      {!data ? (
        <Loading />
      ) : (
        <>
          <h2>Attributes</h2>
          <dl className="facts card">
            {Object.entries(data.attributes).map(([name, value]) => (
              <div key={name} style={{ display: "contents" }}>
                <dt>{name}</dt>
                <dd>{String(value)}</dd>
              </div>
            ))}
          </dl>
          <h2>Lists</h2>
          {data.lists.length === 0 ? <p className="muted">In no list.</p> : <ul>{data.lists.map((list) => <li key={list.id}>{list.name}</li>)}</ul>}
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
            <button type="button" className="secondary" onClick={more}>
              Show older events
            </button>
          )}
        </>
      )}
    </Screen>
  );
}
