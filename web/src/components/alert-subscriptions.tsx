import { useState, type FormEvent } from "react";
import { ApiFailure } from "../api";
import type { AlertSubscriptionList, CreateAlertSubscription } from "../../../src/domain/answers";
import { DataTable } from "./data-table";
import { ErrorNote, Field, formatTime, useLoad } from "../ui";

// Who hears of operations alerts (issue 47): the deployment admin's subscriptions on /ops, a
// panel's owners' in its Settings. One form and list for both; each screen says where they go.

const ALERT_KINDS: [CreateAlertSubscription["kinds"][number], string][] = [
  ["webhook_disabled", "a webhook is disabled"],
  ["sender_domain_unverified", "a sender domain fails its check"],
  ["dead_letters", "dead letters appear"],
  ["shard_full", "a shard passes 80% of its size"],
  ["cron_late", "the cron is late by over 5 minutes"],
];

/** A call to the subscriptions' collection: `path` is "" for it, "/{id}" for one. */
export type SubscriptionsCall = <T>(method: string, path: string, body?: unknown) => Promise<T>;

/** The list and the form; `holder` (the token, the panel's id) reloads the list when it changes. */
export function AlertSubscriptions({ call, holder }: { call: SubscriptionsCall; holder: string }) {
  const list = useLoad(() => call<AlertSubscriptionList>("GET", ""), [holder]);
  const [kinds, setKinds] = useState<string[]>(ALERT_KINDS.map(([kind]) => kind));
  const [target, setTarget] = useState("");
  const [secret, setSecret] = useState("");
  const [failure, setFailure] = useState<{ message: string; fields: Record<string, string> }>();
  const isUrl = /^https?:\/\//i.test(target.trim());
  const add = async (event: FormEvent) => {
    event.preventDefault();
    setFailure(undefined);
    const webhook = { url: target.trim(), ...(secret.trim() ? { signing_secret: secret.trim() } : {}) };
    const body = { kinds, ...(isUrl ? { webhook } : { email: target.trim() }) } as CreateAlertSubscription;
    try {
      await call("POST", "", body);
      setTarget("");
      setSecret("");
      list.reload();
    } catch (problem) {
      const errors = problem instanceof ApiFailure ? problem.errors : [];
      setFailure({ message: problem instanceof Error ? problem.message : String(problem), fields: Object.fromEntries(errors.map((e) => [e.field.replace(/^webhook\./, ""), e.message])) });
    }
  };
  const remove = async (id: string) => {
    await call("DELETE", `/${encodeURIComponent(id)}`).catch((problem: unknown) => setFailure({ message: String(problem), fields: {} }));
    list.reload();
  };
  const named = failure && (failure.fields.email ?? failure.fields.url ?? failure.fields.kinds);
  return (
    <>
      <ErrorNote error={list.error} />
      <DataTable
        caption="Alert subscriptions"
        rows={list.data?.subscriptions}
        rowKey={(s) => s.id}
        columns={[
          { header: "To", cell: (s) => s.email ?? s.webhook_url, rowHeader: true },
          { header: "Of", cell: (s) => s.kinds.join(", ") },
          { header: "Last failed delivery", cell: (s) => (s.last_error ? `${s.last_error} (${formatTime(s.last_error_at)})` : "—") },
          {
            header: "Remove",
            cell: (s) => (
              <button type="button" className="secondary" aria-label={`Remove ${s.email ?? s.webhook_url}`} onClick={() => remove(s.id)}>
                Remove
              </button>
            ),
          },
        ]}
        empty={<p className="muted">Nobody is subscribed.</p>}
      />
      <form onSubmit={add} className="card" aria-label="Subscribe to alerts">
        <fieldset>
          <legend>Tell me when</legend>
          {ALERT_KINDS.map(([kind, label]) => (
            <label key={kind} className="check">
              <input type="checkbox" checked={kinds.includes(kind)} onChange={(e) => setKinds(e.target.checked ? [...kinds, kind] : kinds.filter((k) => k !== kind))} /> {label}
            </label>
          ))}
        </fieldset>
        <Field label="Email address, or your webhook's URL" error={named ?? (failure?.fields.signing_secret ? undefined : failure?.message)}>
          {(props) => <input {...props} value={target} onChange={(e) => setTarget(e.target.value)} required />}
        </Field>
        {isUrl && (
          <Field label="Signing secret (optional)" hint="whsec_ and base64, as webhooks are signed (Standard Webhooks); never shown again" error={failure?.fields.signing_secret}>
            {(props) => <input {...props} type="password" autoComplete="off" value={secret} onChange={(e) => setSecret(e.target.value)} />}
          </Field>
        )}
        <button type="submit">Subscribe</button>
      </form>
    </>
  );
}
