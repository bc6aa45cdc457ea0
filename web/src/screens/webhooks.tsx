import { useState, type FormEvent } from "react";
import { admin } from "../api";
import { Link, navigate } from "../router";
import type {
  CreateWebhook,
  CreateWebhookReplay,
  DeliveryView,
  PatchWebhook,
  WebhookReplayDryRun,
  WebhookReplayView,
  WebhookTestAnswer,
  WebhookView,
} from "../../../src/domain/answers";
import { DataTable, PAGE_SIZE } from "../components/data-table";
import { Empty, ErrorNote, Field, failureOf, formatTime, Loading, Screen, useLoad, unplacedFailure } from "../ui";
import { EmptyFor, IfAllowed, lockFor } from "../components/role";
import type { PanelRef, ScreenProps } from "../screen-props";

const path = (id: string, rest = "") => `/webhooks/${encodeURIComponent(id)}${rest}`;

interface Draft {
  label: string;
  url: string;
  version: "2.0" | "1.0";
  username: string;
  password: string;
  alertEmails: string;
  alertFrequency: "immediate" | "hourly" | "daily";
  signingSecret: string;
  removeSigningSecret: boolean;
}

function draftOf(webhook?: WebhookView): Draft {
  return {
    label: webhook?.label ?? "",
    url: webhook?.url ?? "",
    version: webhook?.version ?? "2.0",
    username: webhook?.username ?? "",
    password: "",
    alertEmails: webhook?.alert?.emails.join(", ") ?? "",
    alertFrequency: webhook?.alert?.frequency ?? "immediate",
    signingSecret: "",
    removeSigningSecret: false,
  };
}

const emailsOf = (text: string) =>
  text
    .split(/[\s,;]+/)
    .map((e) => e.trim())
    .filter(Boolean);

function createBody(draft: Draft): CreateWebhook {
  const emails = emailsOf(draft.alertEmails);
  return {
    label: draft.label,
    url: draft.url,
    version: draft.version,
    ...(draft.username ? { username: draft.username } : {}),
    ...(draft.password ? { password: draft.password } : {}),
    ...(emails.length ? { alert: { emails, frequency: draft.alertFrequency } } : {}),
    ...(draft.signingSecret ? { signing_secret: draft.signingSecret } : {}),
  };
}

/** Blank password and signing secret keep the stored ones (they are never shown); a blank username removes the credentials. */
function patchBody(draft: Draft): PatchWebhook {
  const emails = emailsOf(draft.alertEmails);
  return {
    label: draft.label,
    url: draft.url,
    version: draft.version,
    username: draft.username || null,
    ...(draft.password ? { password: draft.password } : {}),
    alert: emails.length ? { emails, frequency: draft.alertFrequency } : null,
    ...(draft.removeSigningSecret ? { signing_secret: null } : draft.signingSecret ? { signing_secret: draft.signingSecret } : {}),
  };
}

/** The configuration form, for a new webhook and for an existing one. */
function WebhookForm({
  webhook,
  submitLabel,
  onSubmit,
}: {
  webhook?: WebhookView;
  submitLabel: string;
  onSubmit: (draft: Draft) => Promise<void>;
}) {
  const [draft, setDraft] = useState(() => draftOf(webhook));
  const [fields, setFields] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string>();
  const [saved, setSaved] = useState(false);
  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setFailure(undefined);
    setFields({});
    setSaved(false);
    try {
      await onSubmit(draft);
      setSaved(true);
      if (!webhook) setDraft(draftOf());
    } catch (problem) {
      const { message, fields } = failureOf(problem);
      setFailure(message);
      setFields(fields);
    }
  };

  return (
    <form className="card" onSubmit={submit} aria-label={webhook ? "Webhook configuration" : "New webhook"}>
      <ErrorNote error={unplacedFailure(failure, fields, ["label", "url", "version", "username", "password", "alert", "alert.emails", "alert.frequency", "signing_secret"])} />
      <div className="row">
        <Field label="Label" error={fields.label}>
          {(props) => <input {...props} required value={draft.label} onChange={(e) => set("label", e.target.value)} />}
        </Field>
        <Field label="URL" hint="Where event batches are posted" error={fields.url}>
          {(props) => <input {...props} type="url" required value={draft.url} onChange={(e) => set("url", e.target.value)} />}
        </Field>
        <Field label="Payload version" error={fields.version}>
          {(props) => (
            <select {...props} value={draft.version} onChange={(e) => set("version", e.target.value as Draft["version"])}>
              <option value="2.0">2.0</option>
              <option value="1.0">1.0</option>
            </select>
          )}
        </Field>
      </div>
      <fieldset className="row">
        <legend>Basic authentication (optional)</legend>
        <Field label="Username" error={fields.username}>
          {(props) => <input {...props} autoComplete="off" value={draft.username} onChange={(e) => set("username", e.target.value)} />}
        </Field>
        <Field
          label="Password"
          hint={webhook?.password_set ? "A password is set; leave blank to keep it" : undefined}
          error={fields.password}
        >
          {(props) => <input {...props} type="password" autoComplete="new-password" value={draft.password} onChange={(e) => set("password", e.target.value)} />}
        </Field>
      </fieldset>
      <fieldset className="row">
        <legend>Alerts when deliveries fail (optional)</legend>
        <Field label="Alert recipients" hint="Email addresses, separated by commas" error={fields["alert.emails"] ?? fields.alert}>
          {(props) => <input {...props} value={draft.alertEmails} onChange={(e) => set("alertEmails", e.target.value)} />}
        </Field>
        <Field label="Alert frequency" error={fields["alert.frequency"]}>
          {(props) => (
            <select {...props} value={draft.alertFrequency} onChange={(e) => set("alertFrequency", e.target.value as Draft["alertFrequency"])}>
              <option value="immediate">immediate</option>
              <option value="hourly">hourly</option>
              <option value="daily">daily</option>
            </select>
          )}
        </Field>
      </fieldset>
      <fieldset className="row">
        <legend>Signing (optional)</legend>
        <Field
          label="Signing secret"
          hint={webhook?.signing_secret_set ? "A secret is set; leave blank to keep it" : "whsec_ followed by base64 of 24 to 64 bytes"}
          error={fields.signing_secret}
        >
          {(props) => (
            <input {...props} type="password" autoComplete="off" value={draft.signingSecret} onChange={(e) => set("signingSecret", e.target.value)} />
          )}
        </Field>
        {webhook?.signing_secret_set && (
          <label className="check">
            <input type="checkbox" checked={draft.removeSigningSecret} onChange={(e) => set("removeSigningSecret", e.target.checked)} /> Remove the signing secret
          </label>
        )}
      </fieldset>
      <button type="submit">{submitLabel}</button>
      {saved && webhook && (
        <span role="status" className="ok">
          {" "}
          Saved.
        </span>
      )}
    </form>
  );
}

function StateBadge({ state }: { state: WebhookView["state"] }) {
  return <span className={`badge state-${state}`}>{state}</span>;
}

export function Webhooks({ panel }: ScreenProps) {
  const { data, error } = useLoad(() => admin<{ webhooks: WebhookView[] }>("GET", panel.id, "/webhooks"), [panel.id]);
  const base = `/panels/${encodeURIComponent(panel.id)}`;
  const create = async (draft: Draft) => {
    const created = await admin<WebhookView>("POST", panel.id, "/webhooks", createBody(draft));
    navigate(base + path(created.id));
  };

  return (
    <Screen title="Webhooks">
      <p className="muted">
        Journeys post their events to these endpoints in batches. A new webhook is <em>configured</em> until its test gets HTTP 200; then it is{" "}
        <em>operational</em>.
      </p>
      <ErrorNote error={error} />
      <DataTable
        caption="Webhooks of the panel"
        rows={data?.webhooks}
        rowKey={(webhook) => webhook.id}
        pageSize={PAGE_SIZE}
        empty={
          <EmptyFor panel={panel} work="webhooks" title="No webhooks yet">
            Add one below with the URL of your endpoint, then open it and press “Send test”.
          </EmptyFor>
        }
        columns={[
          { header: "Label", cell: (webhook) => <Link href={base + path(webhook.id)}>{webhook.label}</Link>, sortBy: (webhook) => webhook.label },
          { header: "URL", cell: (webhook) => <code>{webhook.url}</code>, sortBy: (webhook) => webhook.url },
          { header: "State", cell: (webhook) => <StateBadge state={webhook.state} />, sortBy: (webhook) => webhook.state },
          { header: "Backlog", cell: (webhook) => webhook.backlog, sortBy: (webhook) => webhook.backlog },
          { header: "Updated", cell: (webhook) => formatTime(webhook.updated_at), sortBy: (webhook) => webhook.updated_at },
        ]}
      />
      <h2>Add a webhook</h2>
      <IfAllowed panel={panel} work="webhooks" what="Adding a webhook">
        <WebhookForm submitLabel="Create webhook" onSubmit={create} />
      </IfAllowed>
    </Screen>
  );
}

/** The endpoint's answer to a test or enable action. */
function TestResult({ answer }: { answer: WebhookTestAnswer }) {
  const passed = answer.status === 200;
  return (
    <div className={`card ${passed ? "ok" : "error"}`} role="status" aria-label="Test result">
      <p>
        <strong>{answer.status === null ? `The endpoint could not be reached (${answer.error ?? "error"})` : `The endpoint answered HTTP ${answer.status}`}</strong>
        {answer.state && <> · the webhook is now {answer.state}</>}
        {answer.backlog !== undefined && <> · backlog {answer.backlog}</>}
      </p>
      {!passed && answer.message && <p>{answer.message}</p>}
    </div>
  );
}

function Deliveries({ panel, webhookId, tick }: { panel: PanelRef; webhookId: string; tick: number }) {
  const panelId = panel.id;
  const { data, error, reload } = useLoad(
    () => admin<{ deliveries: DeliveryView[] }>("GET", panelId, path(webhookId, "/deliveries?limit=50")),
    [panelId, webhookId, tick],
  );
  return (
    <section aria-labelledby="deliveries-title">
      <div className="screen-head">
        <h2 id="deliveries-title">Delivery log</h2>
        <button type="button" className="secondary" onClick={reload}>
          Refresh the log
        </button>
      </div>
      <ErrorNote error={error} />
      <DataTable
        caption="Delivery and test attempts, newest first"
        rows={data?.deliveries}
        rowKey={(d, i) => `${d.at}-${d.batch_id}-${i}`}
        empty={
          <EmptyFor panel={panel} work="webhooks" title="No attempts yet" otherwise="Every attempt to deliver this webhook's events, and every test, is listed here, newest first.">
            Press “Send test”, or wait for a journey to send events: every attempt is listed here, newest first.
          </EmptyFor>
        }
        columns={[
          { header: "Time", cell: (d) => formatTime(d.at) },
          { header: "Kind", cell: (d) => d.kind },
          { header: "Batch", cell: (d) => <code>{d.batch_id}</code> },
          { header: "Events", cell: (d) => d.events },
          {
            header: "Status",
            cellProps: (d) => ({ title: d.response || undefined }),
            cell: (d) => d.status ?? `${d.error ?? "error"}${d.error_message ? `: ${d.error_message}` : ""}`,
          },
          { header: "Latency", cell: (d) => `${d.duration_ms} ms` },
          { header: "Outcome", cell: (d) => d.outcome },
          { header: "Next retry", cell: (d) => (d.next_attempt_at ? formatTime(d.next_attempt_at) : "—") },
        ]}
      />
    </section>
  );
}

/** A datetime-local value (the panel's zone: the API reads a time without zone in it). */
function localInput(at: number): string {
  const d = new Date(at - new Date(at).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/**
 * Re-sending a past range of events (owners): a dry run counts them first, the replay starts
 * only once that count is confirmed, and each replay's progress is listed with a cancel.
 * The id is made with the count, so pressing "Replay" twice starts one replay.
 */
function Replays({ panelId, webhookId }: { panelId: string; webhookId: string }) {
  const [range, setRange] = useState(() => ({ from: localInput(Date.now() - 86_400_000), to: localInput(Date.now()) }));
  const [counted, setCounted] = useState<{ body: CreateWebhookReplay; answer: WebhookReplayDryRun }>();
  const [fields, setFields] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [tick, setTick] = useState(0);
  const { data, error, reload } = useLoad(() => admin<{ replays: WebhookReplayView[] }>("GET", panelId, path(webhookId, "/replays")), [panelId, webhookId, tick]);

  const run = async (work: () => Promise<void>) => {
    setBusy(true);
    setFailure(undefined);
    setFields({});
    try {
      await work();
    } catch (problem) {
      const { message, fields } = failureOf(problem);
      setFailure(message);
      setFields(fields);
    } finally {
      setBusy(false);
    }
  };
  const count = (event: FormEvent) => {
    event.preventDefault();
    void run(async () => {
      const body: CreateWebhookReplay = { id: `rpl-${crypto.randomUUID()}`, from: `${range.from}:00`, to: `${range.to}:00` };
      const answer = await admin<WebhookReplayDryRun>("POST", panelId, path(webhookId, "/replays"), { ...body, dry_run: true });
      setCounted({ body, answer });
    });
  };
  const start = () =>
    run(async () => {
      await admin<WebhookReplayView>("POST", panelId, path(webhookId, "/replays"), counted!.body);
      setCounted(undefined);
      setTick((t) => t + 1);
    });
  const cancel = (id: string) =>
    run(async () => {
      await admin<WebhookReplayView>("POST", panelId, path(webhookId, `/replays/${encodeURIComponent(id)}/cancel`));
      setTick((t) => t + 1);
    });
  const change = (key: "from" | "to", value: string) => {
    setRange((r) => ({ ...r, [key]: value }));
    setCounted(undefined);
  };

  return (
    <section aria-labelledby="replays-title">
      <div className="screen-head">
        <h2 id="replays-title">Replays</h2>
        <button type="button" className="secondary" onClick={reload}>
          Refresh replays
        </button>
      </div>
      <form className="card" onSubmit={count} aria-label="Replay events">
        <p className="muted">Re-sends the panel's events of a time range to this webhook, oldest first, marked as replays (header X-Webhook-Replay, "replay": true in each event).</p>
        <ErrorNote error={unplacedFailure(failure, fields, ["from", "to"])} />
        <div className="row">
          <Field label="From" hint="In the panel's time zone" error={fields.from}>
            {(props) => <input {...props} type="datetime-local" required value={range.from} onChange={(e) => change("from", e.target.value)} />}
          </Field>
          <Field label="To" error={fields.to}>
            {(props) => <input {...props} type="datetime-local" required value={range.to} onChange={(e) => change("to", e.target.value)} />}
          </Field>
        </div>
        <div className="row">
          <button type="submit" className="secondary" disabled={busy}>
            Count events
          </button>
          {counted && (
            <>
              <span role="status">
                {counted.answer.events} event{counted.answer.events === 1 ? "" : "s"} in {counted.answer.batches} batch{counted.answer.batches === 1 ? "" : "es"}
              </span>
              <button type="button" disabled={busy || counted.answer.events === 0} onClick={start}>
                Replay {counted.answer.events} event{counted.answer.events === 1 ? "" : "s"}
              </button>
            </>
          )}
        </div>
      </form>
      <ErrorNote error={error} />
      <DataTable
        caption="Replays of this webhook, newest first"
        rows={data?.replays}
        rowKey={(r) => r.id}
        empty={<Empty title="No replays yet">Count the events of a range, then replay them.</Empty>}
        columns={[
          { header: "Started", cell: (r) => formatTime(r.created_at) },
          { header: "Range", cell: (r) => `${formatTime(r.from)} – ${formatTime(r.to)}` },
          { header: "State", cell: (r) => r.state },
          { header: "Sent", cell: (r) => `${r.events_sent} of ${r.events_total}` },
          { header: "Delivered", cell: (r) => `${r.events_delivered} in ${r.batches_delivered} batches` },
          { header: "Up to", cell: (r) => (r.cursor ? formatTime(r.cursor.occurred_at) : "—") },
          {
            header: "Actions",
            cell: (r) =>
              r.state === "running" ? (
                <button type="button" className="secondary" disabled={busy} onClick={() => cancel(r.id)} aria-label={`Cancel replay ${r.id}`}>
                  Cancel
                </button>
              ) : (
                "—"
              ),
          },
        ]}
      />
    </section>
  );
}

export function Webhook({ panel, params }: ScreenProps) {
  const id = params.id ?? "";
  const [tick, setTick] = useState(0);
  const { data, error, reload } = useLoad(() => admin<WebhookView>("GET", panel.id, path(id)), [panel.id, id, tick]);
  const [answer, setAnswer] = useState<WebhookTestAnswer>();
  const [failure, setFailure] = useState<string>();
  const [busy, setBusy] = useState(false);
  const locked = lockFor(panel, "webhooks");

  const act = async (action: "test" | "enable") => {
    setBusy(true);
    setFailure(undefined);
    setAnswer(undefined);
    try {
      setAnswer(await admin<WebhookTestAnswer>("POST", panel.id, path(id, `/${action}`)));
    } catch (problem) {
      setFailure(failureOf(problem).message);
    } finally {
      setBusy(false);
      setTick((t) => t + 1);
    }
  };
  const save = async (draft: Draft) => {
    await admin<WebhookView>("PATCH", panel.id, path(id), patchBody(draft));
    setTick((t) => t + 1);
  };

  if (error) return <Screen title="Webhook"><ErrorNote error={error} /></Screen>;
  if (!data) return <Loading />;
  return (
    <Screen
      title={data.label}
      actions={
        <Link href={`/panels/${encodeURIComponent(panel.id)}/webhooks`}>
          All webhooks
        </Link>
      }
    >
      <dl className="facts" aria-label="Webhook state">
        <dt>State</dt>
        <dd>
          <StateBadge state={data.state} />
          {data.disabled_reason && <span className="error"> {data.disabled_reason} (since {formatTime(data.disabled_at)})</span>}
        </dd>
        <dt>URL</dt>
        <dd>
          <code>{data.url}</code>
        </dd>
        {/* What the configuration form holds, readable by a role that cannot open the form. */}
        <dt>Payload version</dt>
        <dd>{data.version}</dd>
        <dt>Basic authentication</dt>
        <dd>{data.username === null ? "none" : `as ${data.username}`}</dd>
        <dt>Signing secret</dt>
        <dd>{data.signing_secret_set ? "set" : "none"}</dd>
        <dt>Failure alerts</dt>
        <dd>{data.alert ? `${data.alert.frequency} to ${data.alert.emails.join(", ")}` : "none"}</dd>
        <dt>Backlog</dt>
        <dd>
          {data.backlog} event{data.backlog === 1 ? "" : "s"} waiting{data.backlog_oldest_at && <>, oldest from {formatTime(data.backlog_oldest_at)}</>}
          {data.dropped > 0 && <>; {data.dropped} dropped</>}
        </dd>
        <dt>In flight</dt>
        <dd>
          {data.in_flight
            ? `${data.in_flight.events} events, ${data.in_flight.failed_attempts} failed attempts, next retry ${formatTime(data.in_flight.next_attempt_at)}`
            : "nothing"}
        </dd>
      </dl>
      <div className="row">
        <button type="button" disabled={busy} {...locked} onClick={() => act("test")}>
          Send test
        </button>
        {data.state === "disabled" && (
          <button type="button" disabled={busy} {...locked} onClick={() => act("enable")}>
            Enable webhook
          </button>
        )}
        <button type="button" className="secondary" onClick={reload}>
          Refresh
        </button>
      </div>
      <ErrorNote error={failure} />
      {answer && <TestResult answer={answer} />}
      <Deliveries panel={panel} webhookId={id} tick={tick} />
      <IfAllowed panel={panel} work="webhookReplays" what="Replaying past events">
        <Replays panelId={panel.id} webhookId={id} />
      </IfAllowed>
      <h2>Configuration</h2>
      <IfAllowed panel={panel} work="webhooks" what="Changing the webhook's configuration">
        <WebhookForm webhook={data} submitLabel="Save changes" onSubmit={save} />
      </IfAllowed>
    </Screen>
  );
}
