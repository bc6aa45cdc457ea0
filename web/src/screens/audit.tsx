import { useState } from "react";
import { admin } from "../api";
import type { AuditAction, AuditEntryView } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { Empty, ErrorNote, Field, formatTime, Screen, useLoad } from "../ui";
import type { ScreenProps } from "../screen-props";

/** How each action reads in the log; the keys are the Worker's actions, so a new one fails to type-check here until named. */
const ACTIONS: Record<AuditAction, string> = {
  "panel.api_mode_changed": "API mode changed",
  "panel.settings_changed": "Settings changed",
  "user.created": "User created",
  "user.disabled": "User disabled",
  "user.enabled": "User enabled",
  "user.key_rotated": "API key rotated",
  "operator.added": "Operator added",
  "operator.role_changed": "Operator's role changed",
  "operator.removed": "Operator removed",
  "operator.invited": "Operator invited",
  "operator.invitation_resent": "Invitation sent again",
  "operator.invitation_revoked": "Invitation revoked",
  "operator.invitation_accepted": "Invitation accepted",
  "operator.passkey_added": "Passkey added",
  "operator.passkey_removed": "Passkey removed",
  "webhook.created": "Webhook created",
  "webhook.edited": "Webhook edited",
  "webhook.deleted": "Webhook deleted",
  "webhook.enabled": "Webhook enabled",
  "webhook.replay_started": "Webhook replay started",
  "webhook.replay_cancelled": "Webhook replay cancelled",
  "campaign.published": "Campaign published",
  "campaign.test_sent": "Campaign test sent",
  "campaign.drafted": "Campaign draft created",
  "campaign.edited": "Campaign edited",
  "campaign.ab_test_set": "Campaign A/B test set",
  "campaign.ab_test_removed": "Campaign A/B test removed",
  "campaign.scheduled": "Campaign scheduled",
  "campaign.unscheduled": "Campaign moved back to draft",
  "campaign.paused": "Campaign paused",
  "campaign.resumed": "Campaign resumed",
  "campaign.cancelled": "Campaign cancelled",
  "campaign.cloned": "Campaign cloned",
  "campaign.deleted": "Campaign deleted",
  "campaign.archived": "Campaign archived",
  "journey.created": "Journey created",
  "journey.edited": "Journey edited",
  "journey.started": "Journey started",
  "journey.paused": "Journey paused",
  "journey.resumed": "Journey resumed",
  "journey.stopped": "Journey stopped",
  "segment.created": "Segment created",
  "segment.edited": "Segment edited",
  "segment.deleted": "Segment deleted",
  "email_template.created": "Email template created",
  "email_template.edited": "Email template edited",
  "email_template.deleted": "Email template deleted",
  "topic.created": "Topic created",
  "topic.edited": "Topic edited",
  "topic.deleted": "Topic deleted",
  "signup_form.created": "Signup form created",
  "signup_form.edited": "Signup form edited",
  "signup_form.deleted": "Signup form deleted",
  "signup_form.settings_changed": "Signup form settings changed",
  "list.deleted": "List deleted",
  "list.emptied": "List emptied",
  "sender_domain.added": "Sender domain added",
  "sender_domain.removed": "Sender domain removed",
  "alert_subscription.added": "Alert subscription added",
  "alert_subscription.removed": "Alert subscription removed",
  "tracking_domain.set": "Tracking domain set",
  "tracking_domain.removed": "Tracking domain removed",
  "sms.settings_changed": "SMS provider changed",
  "sms.template_created": "SMS template created",
  "sms.template_replaced": "SMS template replaced",
  "sms.template_deleted": "SMS template deleted",
  "sms.number_stopped": "SMS stopped to a number",
  "sms.number_allowed": "SMS allowed to a number again",
  "push.settings_changed": "Push channels changed",
  "contact.erased": "Contact erased",
  "list.created": "List created",
  "list.renamed": "List renamed",
  "contact.added": "Contact added",
  "contact.edited": "Contact edited",
  "contact.preferences_changed": "Contact's subscriptions changed",
  "attribute.defined": "Attribute added",
  "activity.defined": "Activity defined",
  "import.started": "Import started",
};

/** The kinds of object, in words, for the "Object" filter (the part of an action before its dot). */
const TARGET_KINDS: Record<string, string> = {
  panel: "Panel settings",
  user: "API users and keys",
  operator: "Operators",
  webhook: "Webhooks",
  campaign: "Campaigns",
  journey: "Journeys",
  segment: "Segments",
  list: "Lists",
  sender_domain: "Sender domains",
  tracking_domain: "Tracking domain",
  sms: "SMS",
  push: "Push",
  contact: "Contacts",
  attribute: "Attributes",
  activity: "Activities",
  import: "Imports",
};

function who(actor: AuditEntryView["actor"]): string {
  if (actor.kind === "operator") return actor.email ?? actor.id;
  if (actor.kind === "api_key") return `API key of ${actor.email ?? actor.user_id}`;
  return "the deployment's admin token";
}

function isActor(value: unknown): value is AuditEntryView["actor"] {
  if (typeof value !== "object" || value === null || !("kind" in value)) return false;
  const { kind } = value as { kind: unknown };
  return kind === "admin_token" || (kind === "operator" && "id" in value) || (kind === "api_key" && "user_id" in value);
}

/** A value in words; a { before, after } pair reads "before → after". */
function valueText(value: unknown): string {
  if (typeof value === "object" && value !== null && "before" in value && "after" in value) {
    const { before, after } = value as { before: unknown; after: unknown };
    return `${valueText(before)} → ${valueText(after)}`;
  }
  if (value === null) return "none";
  // An actor an entry's detail names (who finished an erasure another requested) reads as the entry's own actor does.
  if (isActor(value)) return who(value);
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

function details(detail: Record<string, unknown>): string {
  return Object.entries(detail)
    .map(([name, value]) =>
      name === "changed" && typeof value === "object" && value !== null && !Array.isArray(value)
        ? Object.entries(value).map(([field, change]) => `${field.replaceAll("_", " ")}: ${valueText(change)}`).join("; ")
        : `${name.replaceAll("_", " ")}: ${valueText(value)}`,
    )
    .join("; ");
}

/** Who did what in the panel, newest first; owners only. */
export function Audit({ panel }: ScreenProps) {
  const [action, setAction] = useState<AuditAction | "">("");
  const [targetKind, setTargetKind] = useState("");
  const [actor, setActor] = useState("");
  const [from, setFrom] = useState("");
  const [to, setTo] = useState("");
  const [before, setBefore] = useState<string>();
  // Cursors of the pages before this one, so Previous can go back.
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  // Dates are read as the browser's local days; the API takes instants.
  const day = (date: string, next = false) => (date ? new Date(new Date(`${date}T00:00:00`).getTime() + (next ? 86_400_000 : 0)).toISOString() : "");
  const filters: Record<string, string> = Object.fromEntries(
    Object.entries({ action, target_kind: targetKind, actor: actor.trim(), from: day(from), to: day(to, true) }).filter(([, value]) => value !== ""),
  );
  const query = new URLSearchParams({ limit: "50", ...filters, ...(before ? { before } : {}) });
  const csvHref = `/admin/v1/panels/${encodeURIComponent(panel.id)}/audit?${new URLSearchParams({ ...filters, format: "csv" })}`;
  const changed =
    <T,>(set: (value: T) => void) =>
    (value: T) => {
      set(value);
      setBefore(undefined);
      setTrail([]);
    };
  const { data, error } = useLoad(() => admin<{ entries: AuditEntryView[]; next_cursor: string | null }>("GET", panel.id, `/audit?${query}`), [panel.id, query.toString()]);

  return (
    <Screen title="Audit log">
      <p className="muted">
        Every change to the panel's configuration (keys, API mode, settings, users and operators, webhooks, campaigns, journeys, segments, lists, attributes, activities, imports and
        hand edits of contacts), by operators, the admin token or an API key: who made it, when, and what it was before and after. Contacts added or updated through the API are not
        listed. Only owners see this log.
      </p>
      <div className="card row">
        <Field label="Object">
          {(props) => (
            <select {...props} value={targetKind} onChange={(e) => changed(setTargetKind)(e.target.value)}>
              <option value="">every kind</option>
              {Object.entries(TARGET_KINDS).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Who" hint="admin_token, api_key, or an operator's or API user's id">
          {(props) => <input {...props} value={actor} onChange={(e) => changed(setActor)(e.target.value)} />}
        </Field>
        <Field label="From">{(props) => <input {...props} type="date" value={from} onChange={(e) => changed(setFrom)(e.target.value)} />}</Field>
        <Field label="To (inclusive)">{(props) => <input {...props} type="date" value={to} onChange={(e) => changed(setTo)(e.target.value)} />}</Field>
        <Field label="Show">
          {(props) => (
            <select
              {...props}
              value={action}
              onChange={(e) => changed(setAction)(e.target.value as AuditAction | "")}
            >
              <option value="">every change</option>
              {Object.entries(ACTIONS).map(([value, label]) => (
                <option key={value} value={value}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
      </div>
      <p>
        <a href={csvHref} download>
          Download CSV
        </a>{" "}
        <span className="muted">(every entry the filters keep)</span>
      </p>
      <ErrorNote error={error} />
      <DataTable
        caption="Audit log, newest first"
        rows={data?.entries}
        rowKey={(entry) => entry.id}
        empty={
          <Empty title="Nothing recorded yet">Changes appear here as owners and marketers make them, for example turning API mode on in Settings or rotating a key in Users and API keys.</Empty>
        }
        columns={[
          { header: "When", cell: (entry) => formatTime(entry.at) },
          { header: "Who", cell: (entry) => who(entry.actor) },
          { header: "What", cell: (entry) => ACTIONS[entry.action] ?? entry.action },
          { header: "Object", cell: (entry) => <code>{entry.target}</code> },
          { header: "Details", cell: (entry) => details(entry.detail) || "—" },
        ]}
        pagerLabel="Audit log pages"
        serverPages={{
          onPrevious: trail.length
            ? () => {
                setBefore(trail.at(-1));
                setTrail(trail.slice(0, -1));
              }
            : undefined,
          onNext: data?.next_cursor
            ? () => {
                setTrail([...trail, before]);
                setBefore(data.next_cursor!);
              }
            : undefined,
        }}
      />
    </Screen>
  );
}
