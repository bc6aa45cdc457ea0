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
  "webhook.created": "Webhook created",
  "webhook.edited": "Webhook edited",
  "webhook.deleted": "Webhook deleted",
  "webhook.enabled": "Webhook enabled",
  "campaign.published": "Campaign published",
  "campaign.test_sent": "Campaign test sent",
  "campaign.drafted": "Campaign draft created",
  "campaign.edited": "Campaign edited",
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
  "list.deleted": "List deleted",
  "list.emptied": "List emptied",
  "sender_domain.added": "Sender domain added",
  "sender_domain.removed": "Sender domain removed",
  "tracking_domain.set": "Tracking domain set",
  "tracking_domain.removed": "Tracking domain removed",
  "sms.settings_changed": "SMS provider changed",
  "push.settings_changed": "Push channels changed",
  "contact.erased": "Contact erased",
};

function details(detail: Record<string, unknown>): string {
  return Object.entries(detail)
    .map(([name, value]) => `${name.replaceAll("_", " ")}: ${typeof value === "object" && value !== null ? JSON.stringify(value) : String(value)}`)
    .join("; ");
}

/** Who did what in the panel, newest first; owners only. */
export function Audit({ panel }: ScreenProps) {
  const [action, setAction] = useState<AuditAction | "">("");
  const [before, setBefore] = useState<string>();
  // Cursors of the pages before this one, so Previous can go back.
  const [trail, setTrail] = useState<(string | undefined)[]>([]);
  const query = new URLSearchParams({ limit: "50", ...(action ? { action } : {}), ...(before ? { before } : {}) });
  const { data, error } = useLoad(() => admin<{ entries: AuditEntryView[]; next_cursor: string | null }>("GET", panel.id, `/audit?${query}`), [panel.id, query.toString()]);

  return (
    <Screen title="Audit log">
      <p className="muted">Changes to keys, API mode, settings, users and operators, webhooks, campaigns and journeys: who made them and when. Only owners see this log.</p>
      <div className="card row">
        <Field label="Show">
          {(props) => (
            <select
              {...props}
              value={action}
              onChange={(e) => {
                setAction(e.target.value as AuditAction | "");
                setBefore(undefined);
                setTrail([]);
              }}
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
          { header: "Who", cell: (entry) => (entry.actor.kind === "operator" ? entry.actor.email : "the deployment's admin token") },
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
