import { useState, type FormEvent, type ReactNode } from "react";
import { ApiFailure, type FieldError } from "../api";
import type { OpsAction, OpsView } from "../../../src/domain/answers";
import { AlertSubscriptions } from "../components/alert-subscriptions";
import { DataTable } from "../components/data-table";
import { ErrorNote, Field, formatTime, Screen, useLoad } from "../ui";

// The deployment's operations view (/ops, issue 47): for whoever holds the ADMIN_TOKEN, not a
// panel's operators. The token is kept in this page's memory only (never stored): a reload asks
// again. Each item shows what fixes it; an action the admin API takes is a button here.

/** A call with the admin token (no cookie: the token is the caller). */
async function withToken<T>(token: string, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    credentials: "omit",
    headers: { accept: "application/json", authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? (JSON.parse(text) as { error?: string; errors?: FieldError[] }) : null;
  if (!response.ok) throw new ApiFailure(response.status, parsed?.error ?? `HTTP ${response.status}`, parsed?.errors ?? []);
  return parsed as T;
}

const bytes = (n: number | null) => (n === null ? "unknown" : n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(2)} GB` : `${(n / 1024 ** 2).toFixed(1)} MB`);

export default function Ops() {
  const [token, setToken] = useState<string>();
  if (!token) return <TokenForm onToken={setToken} />;
  return <OpsScreen token={token} onSignOut={() => setToken(undefined)} />;
}

function TokenForm({ onToken }: { onToken: (token: string) => void }) {
  const [value, setValue] = useState("");
  const [failure, setFailure] = useState<string>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    try {
      await withToken(value, "GET", "/admin/v1/alerts/subscriptions");
      onToken(value);
    } catch (problem) {
      setFailure(problem instanceof ApiFailure && problem.status === 401 ? "That is not the deployment's admin token." : String(problem));
    }
  };
  return (
    <main className="center">
      <Screen title="Operations">
        <p>The deployment's operations view is for the holder of its admin token (ADMIN_TOKEN). It stays in this page only.</p>
        <form onSubmit={submit}>
          <Field label="Admin token" error={failure}>
            {(props) => <input {...props} type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} required />}
          </Field>
          <button type="submit">Open</button>
        </form>
      </Screen>
    </main>
  );
}

function OpsScreen({ token, onSignOut }: { token: string; onSignOut: () => void }) {
  const view = useLoad(() => withToken<OpsView>(token, "GET", "/admin/v1/ops"), [token]);
  const [done, setDone] = useState<string>();
  const [failure, setFailure] = useState<string>();
  const act = async (action: OpsAction) => {
    setDone(undefined);
    setFailure(undefined);
    try {
      await withToken(token, action.method!, action.href);
      setDone(`Done: ${action.label}`);
      view.reload();
    } catch (problem) {
      setFailure(problem instanceof Error ? problem.message : String(problem));
    }
  };
  const fix = (action: OpsAction | null): ReactNode => {
    if (!action) return <span className="muted">nothing to do</span>;
    if (action.method === "POST") {
      return (
        <button type="button" className="secondary" onClick={() => act(action)}>
          {action.label}
        </button>
      );
    }
    if (action.method === "GET") return <code title={action.label}>GET {action.href}</code>;
    return (
      <span>
        {action.label} <span className="muted">({action.href})</span>
      </span>
    );
  };
  const data = view.data;
  return (
    <main id="main" className="ops">
      <Screen
        title="Operations"
        actions={
          <span>
            <button type="button" className="secondary" onClick={view.reload}>
              Refresh
            </button>{" "}
            <button type="button" className="secondary" onClick={onSignOut}>
              Forget the token
            </button>
          </span>
        }
      >
        <ErrorNote error={view.error ?? failure} />
        {done && <p role="status">{done}</p>}
        {data && (
          <p className="muted">
            Region {data.region}, as of {formatTime(data.generated_at)}.
          </p>
        )}
        <h2>Cron</h2>
        {data && (
          <p>
            {data.cron.last_tick_at ? `Last tick ${formatTime(data.cron.last_tick_at)} (${data.cron.since_last_tick_s} s ago)` : "No tick recorded yet"}
            {data.cron.late ? <strong className="error"> — late</strong> : null} {data.cron.action && fix(data.cron.action)}
          </p>
        )}
        <DataTable
          caption="Last cron ticks"
          rows={data?.cron.ticks}
          rowKey={(t) => t.scheduled_at}
          columns={[
            { header: "Due", cell: (t) => formatTime(t.scheduled_at), rowHeader: true },
            { header: "Started", cell: (t) => formatTime(t.started_at) },
            { header: "Duration", cell: (t) => `${t.duration_ms} ms` },
            { header: "Failed tasks", cell: (t) => t.failed_tasks },
          ]}
          empty={<p className="muted">No ticks recorded.</p>}
        />
        <h2>Queues</h2>
        <DataTable
          caption="Queues"
          rows={data?.queues}
          rowKey={(q) => q.binding}
          columns={[
            { header: "Queue", cell: (q) => q.queue, rowHeader: true },
            { header: "Backlog", cell: (q) => (q.backlog === null ? <span className="muted">{q.error}</span> : q.backlog) },
            { header: "Oldest message", cell: (q) => (q.oldest_message_age_s === null ? "—" : `${q.oldest_message_age_s} s old`) },
            { header: "Fix", cell: (q) => (q.action ? fix(q.action) : "") },
          ]}
        />
        <h2>Dead letters</h2>
        <p>{data && (data.dead_letters.last_24h.length ? data.dead_letters.last_24h.map((r) => `${r.count} from ${r.queue}`).join(", ") + " in the last 24 hours." : "None in the last 24 hours.")}</p>
        <DataTable
          caption="Latest dead letters"
          rows={data?.dead_letters.latest}
          rowKey={(l) => l.id}
          columns={[
            { header: "Received", cell: (l) => formatTime(l.received_at), rowHeader: true },
            { header: "Queue", cell: (l) => l.queue },
            { header: "Kind", cell: (l) => l.kind },
            { header: "Panel", cell: (l) => l.panel_id ?? "—" },
            { header: "What was done", cell: (l) => l.action },
            { header: "Fix", cell: (l) => fix(l.redrive) },
          ]}
          empty={<p className="muted">No dead letters kept.</p>}
        />
        <h2>Shards</h2>
        <DataTable
          caption="Shards"
          rows={data?.shards}
          rowKey={(s) => s.shard}
          columns={[
            { header: "Shard", cell: (s) => s.binding, rowHeader: true },
            { header: "Size", cell: (s) => (s.error ? <span className="error">{s.error}</span> : `${bytes(s.size_bytes)} of ${bytes(s.limit_bytes)} (${((s.used_share ?? 0) * 100).toFixed(1)}%)`) },
            { header: "Panels", cell: (s) => s.panels },
            { header: "Contacts", cell: (s) => s.contacts ?? "—" },
            { header: "Fix", cell: (s) => (s.action ? fix(s.action) : "") },
          ]}
        />
        <h2>Disabled webhooks</h2>
        <DataTable
          caption="Disabled webhooks"
          rows={data?.disabled_webhooks}
          rowKey={(w) => w.id}
          columns={[
            { header: "Webhook", cell: (w) => `${w.label} (${w.url})`, rowHeader: true },
            { header: "Panel", cell: (w) => w.panel_id },
            { header: "Why", cell: (w) => w.reason ?? "—" },
            { header: "Since", cell: (w) => formatTime(w.disabled_at) },
            { header: "Fix", cell: (w) => fix(w.action) },
          ]}
          empty={<p className="muted">No webhook is disabled.</p>}
        />
        <h2>Sender domains not verified</h2>
        <DataTable
          caption="Sender domains not verified"
          rows={data?.unverified_sender_domains}
          rowKey={(d) => `${d.panel_id} ${d.domain}`}
          columns={[
            { header: "Domain", cell: (d) => d.domain, rowHeader: true },
            { header: "Panel", cell: (d) => d.panel_id },
            { header: "State", cell: (d) => (d.state === "failed" ? "failed its last check" : "never checked") },
            { header: "Checked", cell: (d) => formatTime(d.checked_at) },
            { header: "Fix", cell: (d) => fix(d.action) },
          ]}
          empty={<p className="muted">Every sender domain is verified.</p>}
        />
        <h2>Stuck jobs</h2>
        <DataTable
          caption="Stuck jobs"
          rows={data?.stuck_jobs}
          rowKey={(j) => `${j.kind} ${j.id}`}
          columns={[
            { header: "Job", cell: (j) => `${j.kind} ${j.id}`, rowHeader: true },
            { header: "Panel", cell: (j) => j.panel_id },
            { header: "State", cell: (j) => j.state },
            { header: "Since", cell: (j) => formatTime(j.since) },
            { header: "What", cell: (j) => j.detail },
            { header: "Fix", cell: (j) => fix(j.action) },
          ]}
          empty={<p className="muted">Nothing is stuck.</p>}
        />
        <h2>Alerts</h2>
        <DataTable
          caption="Alert conditions holding now"
          rows={data?.alerts.holding}
          rowKey={(c) => c.key}
          columns={[
            { header: "Condition", cell: (c) => c.kind, rowHeader: true },
            { header: "What", cell: (c) => c.detail },
            { header: "Since", cell: (c) => formatTime(c.since) },
          ]}
          empty={<p className="muted">No alert condition holds.</p>}
        />
        <h3>Who hears of them</h3>
        <AlertSubscriptions holder={token} call={(method, path, body) => withToken(token, method, `/admin/v1/alerts/subscriptions${path}`, body)} />
      </Screen>
    </main>
  );
}
