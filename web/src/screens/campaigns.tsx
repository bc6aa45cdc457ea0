import { useRef, useState, type FormEvent } from "react";
import { admin } from "../api";
import { Link } from "../router";
import type { CampaignList, CampaignView, CreateAudienceCampaign, CreateCampaign, CreatedCampaign, EmailTemplateSummaryView, EmailTemplateView, ListView, SegmentView } from "../../../src/domain/answers";
import { DataTable, PAGE_SIZE } from "../components/data-table";
import { ErrorNote, Field, listedOrNone, Loading, Screen, useLoad, useSubmit, unplacedFailure } from "../ui";
import { EmptyFor, may, RoleNote } from "../components/role";
import type { ScreenProps } from "../screen-props";
import { AudienceEstimateNote } from "./campaign-preview";
import { bodyMembers, EmailBody, shownByEmailBody } from "../components/email-body";
import type { EmailSource } from "../../../src/domain/email-source";

/** UTF-8 text as base64, the form the API takes source_code in. */
function base64Utf8(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

/** `<input type="datetime-local">` gives YYYY-MM-DDTHH:mm[:SS]; the API reads YYYY-MM-DD HH:mm:SS in the panel's zone. */
export function scheduleText(local: string): string {
  const [date = "", time = ""] = local.split("T");
  return `${date} ${time.length === 5 ? `${time}:00` : time}`;
}

const SAMPLE_HTML = "<h1>Hello {{NAME|there}}</h1>\n<p>Our spring sale starts today.</p>";

type Mode = "audience" | "file";

interface Draft {
  mode: Mode;
  name: string;
  subject: string;
  sender_name: string;
  sender_email: string;
  reply_to: string;
  schedule: string;
  /** Send at local time: each recipient at this HH:MM on its own clock (audience mode); empty: at once. */
  local_time: string;
  tags: string;
  html: string;
  /** The visual editor's source of `html`; null: written by hand. */
  body_source: EmailSource | null;
  /** A saved email template the campaign copies when it is scheduled, in place of `html` (audience mode). */
  email_template: string;
  // An audience of lists and saved segments (CONTRACT 9).
  lists: number[];
  segments: string[];
  exclude_lists: number[];
  exclude_segments: string[];
  // A contacts file, under the rules of upload_contact_and_publish (4.10).
  contacts_upload_source: string;
  list_name: string;
  notify_me: string;
}

const EMPTY: Draft = {
  mode: "audience",
  name: "",
  subject: "",
  sender_name: "",
  sender_email: "",
  reply_to: "",
  schedule: "",
  local_time: "",
  tags: "",
  html: SAMPLE_HTML,
  body_source: null,
  email_template: "",
  lists: [],
  segments: [],
  exclude_lists: [],
  exclude_segments: [],
  contacts_upload_source: "",
  list_name: "",
  notify_me: "",
};

function audienceRequest(draft: Draft): CreateAudienceCampaign {
  // A draft may be saved before its time is chosen.
  const when = draft.schedule ? { schedule_date: scheduleText(draft.schedule) } : {};
  return {
    name: draft.name,
    // With a template, an empty subject takes the template's.
    ...(draft.email_template && !draft.subject.trim() ? {} : { subject: draft.subject }),
    sender_name: draft.sender_name,
    sender_email: draft.sender_email,
    ...(draft.reply_to.trim() ? { reply_to: draft.reply_to.trim() } : {}),
    ...(draft.email_template ? { email_template: draft.email_template } : bodyMembers({ html: draft.html, source: draft.body_source })),
    ...when,
    ...(draft.local_time ? { local_time: draft.local_time } : {}),
    tags: draft.tags,
    audience: { lists: draft.lists, segments: draft.segments, exclude_lists: draft.exclude_lists, exclude_segments: draft.exclude_segments },
  };
}

function fileRequest(draft: Draft): CreateCampaign {
  return {
    campaign_name: draft.name,
    list_name: draft.list_name,
    contacts_upload_source: draft.contacts_upload_source,
    subject_line: draft.subject,
    sender_name: draft.sender_name,
    sender_email_id: draft.sender_email,
    tags: draft.tags,
    schedule_date: scheduleText(draft.schedule),
    source_code: base64Utf8(draft.html),
    notify_me: draft.notify_me,
  };
}

/** The request's member each draft field is checked as, per audience mode, for its error. */
const FIELD_NAMES: Record<Mode, Partial<Record<keyof Draft, string>>> = {
  audience: { schedule: "schedule_date", html: "html" },
  file: { name: "campaign_name", subject: "subject_line", sender_email: "sender_email_id", schedule: "schedule_date", html: "source_code" },
};

/** The merge tags a body or subject uses: {{ATTRIBUTE}} or {{ATTRIBUTE|fallback}}. */
function mergeTags(text: string): string[] {
  return [...new Set([...text.matchAll(/\{\{\s*([A-Za-z0-9_]+)\s*(?:\|[^}]*)?\}\}/g)].map((m) => m[1]!.toUpperCase()))];
}

export interface Choices {
  lists: ListView[];
  segments: SegmentView[];
}

/** Checkboxes for the panel's lists and segments: whom to send to, or whom to leave out. */
function AudienceChoice({
  legend,
  choices,
  lists,
  segments,
  error,
  onChange,
}: {
  legend: string;
  choices: Choices;
  lists: number[];
  segments: string[];
  error?: string;
  onChange: (lists: number[], segments: string[]) => void;
}) {
  const toggle = <T,>(values: T[], value: T, on: boolean) => (on ? [...values, value] : values.filter((v) => v !== value));
  return (
    <fieldset aria-describedby={error ? `${legend}-error` : undefined}>
      <legend>{legend}</legend>
      {choices.lists.length + choices.segments.length === 0 && <p className="muted">The panel has no lists or saved segments yet.</p>}
      <div className="choices">
        {choices.lists.map((list) => (
          <label key={`l${list.id}`} className="check">
            <input type="checkbox" checked={lists.includes(list.id)} onChange={(e) => onChange(toggle(lists, list.id, e.target.checked), segments)} />
            List {list.name} ({list.count})
          </label>
        ))}
        {choices.segments.map((segment) => (
          <label key={`s${segment.id}`} className="check">
            <input type="checkbox" checked={segments.includes(segment.id)} onChange={(e) => onChange(lists, toggle(segments, segment.id, e.target.checked))} />
            Segment {segment.name} ({segment.members ?? "…"})
          </label>
        ))}
      </div>
      {error && (
        <small id={`${legend}-error`} className="error">
          {error}
        </small>
      )}
    </fieldset>
  );
}

function NewCampaign({ panelId, timezone, leadMinutes, onCreated }: { panelId: string; timezone: string; leadMinutes: number; onCreated: (c: CreatedCampaign) => void }) {
  const [draft, setDraft] = useState<Draft>(EMPTY);
  // A new round of the body's editor after each campaign saved: it starts again from a fresh message.
  const [round, setRound] = useState(0);
  const { failure, fields, run } = useSubmit();
  const choices = useLoad(
    async (): Promise<Choices> => {
      const [lists, segments] = await Promise.all([
        admin<{ lists: ListView[] }>("GET", panelId, "/lists"),
        admin<{ segments: SegmentView[] }>("GET", panelId, "/segments"),
      ]);
      return { lists: lists.lists, segments: segments.segments };
    },
    [panelId],
  );
  const templates = useLoad(() => admin<{ templates: EmailTemplateSummaryView[] }>("GET", panelId, "/email-templates"), [panelId]);
  // The chosen template as it is now, for the preview; the campaign copies it when scheduled.
  const [loadedTemplate, setTemplate] = useState<EmailTemplateView>();
  // The last choice: an earlier choice's answer arriving after it is not shown.
  const chosenTemplate = useRef("");
  const chooseTemplate = async (id: string) => {
    chosenTemplate.current = id;
    setDraft((d) => ({ ...d, email_template: id }));
    const view = id ? await admin<EmailTemplateView>("GET", panelId, `/email-templates/${encodeURIComponent(id)}`) : undefined;
    if (chosenTemplate.current === id) setTemplate(view);
  };
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const fieldError = (key: keyof Draft) => {
    const name = FIELD_NAMES[draft.mode][key] ?? key;
    return fields[name] ?? fields[`data.${name}`];
  };
  // The first refusal among the audience's members (audience, audience.lists.0, …).
  const audienceField = (prefixes: string[]) => Object.keys(fields).find((name) => prefixes.some((p) => name === p || name.startsWith(`${p}.`)));
  const audienceError = (prefixes: string[]) => {
    const name = audienceField(prefixes);
    return name === undefined ? undefined : fields[name];
  };
  // The refusals shown under an input (the draft's, the audience's first of each kind, the template): not again on top.
  const placed = new Set([
    ...Object.keys(draft).flatMap((key) => {
      const name = FIELD_NAMES[draft.mode][key as keyof Draft] ?? key;
      return [name, `data.${name}`];
    }),
    audienceField(["audience.lists", "audience.segments"]) ?? "audience",
    audienceField(["audience.exclude_lists", "audience.exclude_segments"]) ?? "",
    "email_template",
  ]);

  const submit = async (event: FormEvent<HTMLFormElement>) => {
    event.preventDefault();
    // "Save as draft" keeps it unscheduled (lists and segments only: a contacts file is scheduled as 4.10 says).
    const asDraft = (event.nativeEvent as SubmitEvent).submitter?.getAttribute("value") === "draft" && draft.mode === "audience";
    await run(async () => {
      const body = draft.mode === "audience" ? { ...audienceRequest(draft), ...(asDraft ? { draft: true } : {}) } : fileRequest(draft);
      const created = await admin<CreatedCampaign>("POST", panelId, "/campaigns", body);
      setDraft(EMPTY);
      setRound((n) => n + 1);
      setTemplate(undefined);
      onCreated(created);
    });
  };

  const usesTemplate = draft.mode === "audience" && draft.email_template !== "";
  // Only the chosen template's own answer: another's is not shown while this one loads.
  const template = usesTemplate && loadedTemplate?.id === draft.email_template ? loadedTemplate : undefined;
  const body = usesTemplate ? (template?.body_html ?? "") : draft.html;
  const tags = mergeTags(`${draft.subject || (usesTemplate ? (template?.subject ?? "") : "")} ${body}`);
  const text = (key: keyof Draft, label: string, options: { type?: string; hint?: string; optional?: boolean } = {}) => (
    <Field label={label} hint={options.hint} error={fieldError(key)}>
      {(props) => <input {...props} type={options.type ?? "text"} required={!options.optional} value={String(draft[key])} onChange={(e) => set(key, e.target.value as never)} />}
    </Field>
  );

  return (
    <form className="card" onSubmit={submit} aria-label="New campaign">
      <ErrorNote error={unplacedFailure(failure, fields, (field) => placed.has(field) || shownByEmailBody(field)) ?? choices.error} />
      <div className="row">
        {text("name", "Campaign name")}
        {usesTemplate
          ? text("subject", "Subject line (optional)", { hint: `Empty: the template's, “${template?.subject ?? ""}”`, optional: true })
          : text("subject", "Subject line", { hint: "{{ATTRIBUTE|fallback}} personalises it" })}
      </div>
      <div className="row">
        {text("sender_name", "Sender name")}
        {text("sender_email", "Sender email", { type: "email" })}
        {draft.mode === "audience" && text("reply_to", "Reply-to (optional)", { type: "email", optional: true })}
      </div>
      <fieldset>
        <legend>Audience</legend>
        <div className="row">
          <label className="check">
            <input type="radio" name="mode" checked={draft.mode === "audience"} onChange={() => set("mode", "audience")} />
            Lists and saved segments
          </label>
          <label className="check">
            <input type="radio" name="mode" checked={draft.mode === "file"} onChange={() => setDraft((d) => ({ ...d, mode: "file", email_template: "" }))} />
            A contacts file, imported into a new list
          </label>
        </div>
        {draft.mode === "audience" ? (
          !choices.data ? (
            <Loading />
          ) : (
            <>
              <p className="muted">Contacts in any list or segment chosen to send to get one message, unless they are in one to leave out or their address is suppressed. Segments are read when the campaign goes out.</p>
              <AudienceChoice
                legend="Send to"
                choices={choices.data}
                lists={draft.lists}
                segments={draft.segments}
                error={audienceError(["audience.lists", "audience.segments"]) ?? fields.audience}
                onChange={(lists, segments) => setDraft((d) => ({ ...d, lists, segments }))}
              />
              <AudienceChoice
                legend="Leave out"
                choices={choices.data}
                lists={draft.exclude_lists}
                segments={draft.exclude_segments}
                error={audienceError(["audience.exclude_lists", "audience.exclude_segments"])}
                onChange={(lists, segments) => setDraft((d) => ({ ...d, exclude_lists: lists, exclude_segments: segments }))}
              />
              <AudienceEstimateNote
                panelId={panelId}
                audience={{ lists: draft.lists, segments: draft.segments, exclude_lists: draft.exclude_lists, exclude_segments: draft.exclude_segments }}
              />
            </>
          )
        ) : (
          <div className="row">
            {text("contacts_upload_source", "Contacts file URL", { type: "url", hint: "http(s) URL of a .csv file or a .zip of .csv files" })}
            {text("list_name", "New list name", { hint: "The contacts go into this new list" })}
            {text("notify_me", "Notify", { hint: "Addresses that get the answer by email, separated by commas" })}
          </div>
        )}
      </fieldset>
      <div className="row">
        {text("schedule", "Send at", {
          type: "datetime-local",
          hint: `In the panel's time zone ${timezone}, at least ${leadMinutes} minutes ahead${draft.mode === "audience" ? "; a draft may leave it empty" : ""}`,
        })}
        {draft.mode === "audience" &&
          text("local_time", "Local send time (optional)", {
            type: "time",
            hint: "Each contact at this time of the send date on their own clock (TIMEZONE attribute, else the panel's zone), over up to 26 hours; where it has passed at the send time, at once",
            optional: true,
          })}
        {text("tags", "Tags (optional)", { hint: "Up to 5, separated by commas", optional: true })}
      </div>
      {draft.mode === "audience" && (
        <Field label="Email template" hint="A saved template's subject and body, copied when the campaign is saved" error={fields.email_template ?? templates.error}>
          {(props) => (
            <select {...props} value={draft.email_template} onChange={(e) => void chooseTemplate(e.target.value)}>
              <option value="">None: write the HTML body below</option>
              {templates.data?.templates.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.name}
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      <div>
        {usesTemplate ? (
          <div className="split">
            <p className="muted">The body is the template {template ? `“${template.name}”` : ""} as it is when you save the campaign; later changes to the template do not reach it.</p>
            <div className="field">
              <span id="preview-label" className="label">
                Preview
              </span>
              {/* An empty sandbox: the body's scripts, forms and links cannot run or reach the panel. The
                  frame is made once the template's body is here, with it, and made again for
                  another template: filling an empty frame just made raced Chromium's set-up of
                  it (the browser test sometimes never saw the body). */}
              {template ? <iframe key={template.id} title="Preview of the HTML body" aria-labelledby="preview-label" sandbox="" srcDoc={body} className="preview" /> : <Loading />}
            </div>
          </div>
        ) : (
          <EmailBody
            key={round}
            value={{ html: draft.html, source: draft.body_source }}
            onChange={(value) => setDraft((d) => ({ ...d, html: value.html, body_source: value.source }))}
            label="HTML body"
            previewTitle="Preview of the HTML body"
            error={fieldError("html")}
            fields={fields}
            startVisual
          />
        )}
      </div>
      <p className="muted" aria-live="polite">
        Merge tags used: {listedOrNone(tags)}
      </p>
      <div className="row">
        <button type="submit" value="schedule">
          Schedule campaign
        </button>
        {draft.mode === "audience" && (
          // The time may still be empty: the browser's own required checks would stop a draft.
          <button type="submit" value="draft" className="secondary" formNoValidate>
            Save as draft
          </button>
        )}
      </div>
    </form>
  );
}

/** The names of the panel's lists and segments, to say whom campaigns go to. */
export function useAudienceNames(panelId: string, after: unknown) {
  return useLoad(
    async (): Promise<Choices> => ({
      lists: (await admin<{ lists: ListView[] }>("GET", panelId, "/lists")).lists,
      segments: (await admin<{ segments: SegmentView[] }>("GET", panelId, "/segments")).segments,
    }),
    [panelId, after],
  );
}

/** Whom a campaign goes to, in words. */
export function audienceText(campaign: CampaignView, choices: Choices | undefined): string {
  const listName = (id: number) => choices?.lists.find((l) => l.id === id)?.name ?? `#${id}`;
  if (!campaign.audience) return campaign.list_id === null ? "—" : `its own list ${listName(campaign.list_id)} (from a contacts file)`;
  const segmentName = (id: string) => choices?.segments.find((s) => s.id === id)?.name ?? id;
  const a = campaign.audience;
  const to = [...a.lists.map((id) => `list ${listName(id)}`), ...a.segments.map((id) => `segment ${segmentName(id)}`)].join(", ");
  const out = [...a.exclude_lists.map((id) => `list ${listName(id)}`), ...a.exclude_segments.map((id) => `segment ${segmentName(id)}`)].join(", ");
  return out ? `${to}; not ${out}` : to;
}

export function Campaigns({ panel }: ScreenProps) {
  const { data, error, reload } = useLoad(() => admin<CampaignList>("GET", panel.id, "/campaigns"), [panel.id]);
  const names = useAudienceNames(panel.id, data);
  const [created, setCreated] = useState<CreatedCampaign>();
  return (
    <Screen title="Campaigns">
      <ErrorNote error={error} />
      {created && (
        <p role="status" className="ok">
          {created.status === "draft" ? <>Campaign “{created.name}” saved as a draft.</> : <>Campaign “{created.name}” scheduled for {created.schedule_date} ({created.timezone}).</>}
        </p>
      )}
      {created?.warnings?.map((warning) => (
        <p key={warning.field} className="muted">
          Note: {warning.message}. See <Link href={`/panels/${encodeURIComponent(panel.id)}/sender-domains`}>Sender domains</Link>.
        </p>
      ))}
      <DataTable
        caption="Campaigns of the panel, newest first"
        rows={data?.campaigns}
        rowKey={(c) => c.id}
        pageSize={PAGE_SIZE}
        empty={
          <EmptyFor panel={panel} work="campaigns" title="No campaigns yet">
            Create one below: name it, choose its lists and segments (or a contacts file), write the HTML body and pick when it goes out.
          </EmptyFor>
        }
        columns={[
          { header: "Name", cell: (c) => <Link href={`/panels/${encodeURIComponent(panel.id)}/campaigns/${encodeURIComponent(c.id)}`}>{c.name}</Link>, sortBy: (c) => c.name },
          {
            header: "Status",
            cell: (c) => (
              <span className={`badge campaign-${c.status}`} title={c.status_reason ?? undefined}>
                {c.status}
              </span>
            ),
            sortBy: (c) => c.status,
          },
          { header: `Send at (${data?.timezone ?? ""})`, cell: (c) => c.schedule_date, sortBy: (c) => c.schedule_date },
          { header: "To", cell: (c) => audienceText(c, names.data) },
          { header: "Recipients", cell: (c) => c.counters.recipients, sortBy: (c) => c.counters.recipients },
          { header: "Sent", cell: (c) => c.counters.sent, sortBy: (c) => c.counters.sent },
          { header: "Failed", cell: (c) => c.counters.failed, sortBy: (c) => c.counters.failed },
          { header: "Unique opens", cell: (c) => c.counters.unique_opens, sortBy: (c) => c.counters.unique_opens },
          { header: "Unique clicks", cell: (c) => c.counters.unique_clicks, sortBy: (c) => c.counters.unique_clicks },
          { header: "Bounces", cell: (c) => c.counters.bounces, sortBy: (c) => c.counters.bounces },
          { header: "Unsubscribes", cell: (c) => c.counters.unsubscribes, sortBy: (c) => c.counters.unsubscribes },
        ]}
      />
      <h2>New email campaign</h2>
      <RoleNote panel={panel} work="campaigns" what="Scheduling a campaign" />
      {data && may(panel, "campaigns") && (
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
