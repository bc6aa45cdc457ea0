import { useState, type FormEvent } from "react";
import { admin } from "../api";
import { Link } from "../router";
import type { CampaignView, CreateCampaign } from "../types";
import { Empty, ErrorNote, Field, failureOf, Loading, Screen, useLoad } from "../ui";
import type { ScreenProps } from ".";

interface CampaignList {
  campaigns: CampaignView[];
  timezone: string;
  lead_minutes: number;
}

/** UTF-8 text as base64, the form the API takes source_code in. */
function base64Utf8(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** `<input type="datetime-local">` gives YYYY-MM-DDTHH:mm[:SS]; the API reads YYYY-MM-DD HH:mm:SS in the panel's zone. */
function scheduleText(local: string): string {
  const [date = "", time = ""] = local.split("T");
  return `${date} ${time.length === 5 ? `${time}:00` : time}`;
}

const SAMPLE_HTML = "<h1>Hello {{NAME|there}}</h1>\n<p>Our spring sale starts today.</p>";

interface Draft {
  campaign_name: string;
  list_name: string;
  contacts_upload_source: string;
  subject_line: string;
  sender_name: string;
  sender_email_id: string;
  tags: string;
  schedule: string;
  html: string;
  notify_me: string;
}

const EMPTY: Draft = {
  campaign_name: "",
  list_name: "",
  contacts_upload_source: "",
  subject_line: "",
  sender_name: "",
  sender_email_id: "",
  tags: "",
  schedule: "",
  html: SAMPLE_HTML,
  notify_me: "",
};

function requestOf(draft: Draft): CreateCampaign {
  return {
    campaign_name: draft.campaign_name,
    list_name: draft.list_name,
    contacts_upload_source: draft.contacts_upload_source,
    subject_line: draft.subject_line,
    sender_name: draft.sender_name,
    sender_email_id: draft.sender_email_id,
    tags: draft.tags,
    schedule_date: scheduleText(draft.schedule),
    source_code: base64Utf8(draft.html),
    notify_me: draft.notify_me,
  };
}

/** The merge tags a body or subject uses: {{ATTRIBUTE}} or {{ATTRIBUTE|fallback}}. */
function mergeTags(text: string): string[] {
  return [...new Set([...text.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*(?:\|[^}]*)?\}\}/g)].map((m) => m[1]!.toUpperCase()))];
}

function NewCampaign({ panelId, timezone, leadMinutes, onCreated }: { panelId: string; timezone: string; leadMinutes: number; onCreated: (c: CampaignView) => void }) {
  const [draft, setDraft] = useState<Draft>(EMPTY);
  const [fields, setFields] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string>();
  const set = (key: keyof Draft, value: string) => setDraft((d) => ({ ...d, [key]: value }));
  const fieldError = (name: string) => fields[name] ?? fields[`data.${name}`];

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setFailure(undefined);
    setFields({});
    try {
      const created = await admin<CampaignView>("POST", panelId, "/campaigns", requestOf(draft));
      setDraft(EMPTY);
      onCreated(created);
    } catch (problem) {
      const { message, fields } = failureOf(problem);
      setFailure(message);
      setFields(fields);
    }
  };

  const tags = mergeTags(`${draft.subject_line} ${draft.html}`);
  const text = (key: keyof Draft, label: string, options: { type?: string; hint?: string } = {}) => (
    <Field label={label} hint={options.hint} error={fieldError(key === "schedule" ? "schedule_date" : key)}>
      {(props) => <input {...props} type={options.type ?? "text"} required={key !== "tags"} value={draft[key]} onChange={(e) => set(key, e.target.value)} />}
    </Field>
  );

  return (
    <form className="card" onSubmit={submit} aria-label="New campaign">
      <ErrorNote error={failure} />
      <div className="row">
        {text("campaign_name", "Campaign name")}
        {text("subject_line", "Subject line", { hint: "{{ATTRIBUTE|fallback}} personalises it" })}
      </div>
      <div className="row">
        {text("sender_name", "Sender name")}
        {text("sender_email_id", "Sender email", { type: "email" })}
      </div>
      <div className="row">
        {text("contacts_upload_source", "Contacts file URL", { type: "url", hint: "http(s) URL of a .csv file or a .zip of .csv files" })}
        {text("list_name", "New list name", { hint: "The contacts go into this new list" })}
      </div>
      <div className="row">
        {text("schedule", "Send at", { type: "datetime-local", hint: `In the panel's time zone ${timezone}, at least ${leadMinutes} minutes ahead` })}
        {text("tags", "Tags (optional)", { hint: "Up to 5, separated by commas" })}
        {text("notify_me", "Notify", { hint: "Addresses that get the answer by email, separated by commas" })}
      </div>
      <div className="split">
        <Field label="HTML body" error={fieldError("source_code")}>
          {(props) => <textarea {...props} required rows={14} value={draft.html} onChange={(e) => set("html", e.target.value)} />}
        </Field>
        <div className="field">
          <span id="preview-label" className="label">
            Preview
          </span>
          {/* An empty sandbox: the body's scripts, forms and links cannot run or reach the panel. */}
          <iframe title="Preview of the HTML body" aria-labelledby="preview-label" sandbox="" srcDoc={draft.html} className="preview" />
        </div>
      </div>
      <p className="muted" aria-live="polite">
        Merge tags used: {tags.length ? tags.join(", ") : "none"}
      </p>
      <button type="submit">Schedule campaign</button>
    </form>
  );
}

export function Campaigns({ panel }: ScreenProps) {
  const { data, error, reload } = useLoad(() => admin<CampaignList>("GET", panel.id, "/campaigns"), [panel.id]);
  const [created, setCreated] = useState<CampaignView>();
  return (
    <Screen title="Campaigns">
      <ErrorNote error={error} />
      {created && (
        <p role="status" className="ok">
          Campaign “{created.name}” scheduled for {created.schedule_date} ({created.timezone}).
        </p>
      )}
      {created?.warnings?.map((warning) => (
        <p key={warning.field} className="muted">
          Note: {warning.message}. See <Link href={`/panels/${encodeURIComponent(panel.id)}/sender-domains`}>Sender domains</Link>.
        </p>
      ))}
      {!data ? (
        <Loading />
      ) : data.campaigns.length === 0 ? (
        <Empty title="No campaigns yet">Create one below: name it, point it at a contacts file, write the HTML body and pick when it goes out.</Empty>
      ) : (
        <table>
          <caption className="visually-hidden">Campaigns of the panel, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Status</th>
              <th scope="col">Send at ({data.timezone})</th>
              <th scope="col">Recipients</th>
              <th scope="col">Sent</th>
              <th scope="col">Failed</th>
              <th scope="col">Unique opens</th>
              <th scope="col">Unique clicks</th>
              <th scope="col">Bounces</th>
              <th scope="col">Unsubscribes</th>
            </tr>
          </thead>
          <tbody>
            {data.campaigns.map((c) => (
              <tr key={c.id}>
                <td>{c.name}</td>
                <td>
                  <span className={`badge campaign-${c.status}`} title={c.status_reason ?? undefined}>
                    {c.status}
                  </span>
                </td>
                <td>{c.schedule_date}</td>
                <td>{c.counters.recipients}</td>
                <td>{c.counters.sent}</td>
                <td>{c.counters.failed}</td>
                <td>{c.counters.unique_opens}</td>
                <td>{c.counters.unique_clicks}</td>
                <td>{c.counters.bounces}</td>
                <td>{c.counters.unsubscribes}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>New email campaign</h2>
      {data && (
        <NewCampaign
          panelId={panel.id}
          timezone={data.timezone}
          leadMinutes={data.lead_minutes}
          onCreated={(c) => {
            setCreated(c);
            reload();
          }}
        />
      )}
    </Screen>
  );
}
