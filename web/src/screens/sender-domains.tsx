import { useState, type FormEvent } from "react";
import { admin, ApiFailure } from "../api";
import type { CreateSenderDomain, DomainCheckName, Overview, SenderDomainView, TrackingDomainView } from "../../../src/domain/answers";
import { DataTable } from "../components/data-table";
import { CopyableValue, CopyButton, ErrorNote, failureOf, Field, formatTime, Loading, Screen, useLoad, unplacedFailure } from "../ui";
import { EmptyFor, IfAllowed, lockFor, may } from "../components/role";
import type { PanelRef, ScreenProps } from "../screen-props";
import { useConfirm } from "../components/confirm-dialog";

// The domains the panel sends from (SPF, DKIM, DMARC records to publish and their last check)
// and its tracking domain (a CNAME). Reading is for every role; adding, verifying and removing
// are for owners, as the admin routes require: other roles see the buttons locked and, in place
// of the forms, the sentence saying so (components/role).

const RECORD_LABELS: Record<DomainCheckName, string> = {
  spf: "SPF",
  dkim: "DKIM (RSA)",
  dkim_ed25519: "DKIM (Ed25519, optional)",
  dmarc: "DMARC",
};

const STATE_LABELS: Record<SenderDomainView["state"], string> = {
  pending: "not checked yet",
  verified: "verified",
  failed: "not verified",
};

/** A TXT record as a zone-file line; values longer than 255 characters are split into quoted strings, as DNS stores them. */
function zoneLine(name: string, value: string): string {
  const chunks = value.match(/.{1,255}/g) ?? [""];
  return `${name}. 3600 IN TXT ${chunks.map((c) => `"${c}"`).join(" ")}`;
}

const domainPath = (domain: string, rest = "") => `/sender-domains/${encodeURIComponent(domain)}${rest}`;

/** Runs an action of a card: busy while it runs, its failure shown; the screen reloads after. */
function useAction(onDone: () => void) {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string>();
  const run = async (action: () => Promise<unknown>) => {
    setBusy(true);
    setFailure(undefined);
    try {
      await action();
      onDone();
    } catch (problem) {
      setFailure(failureOf(problem).message);
    } finally {
      setBusy(false);
    }
  };
  return { busy, failure, run };
}

function CheckResult({ domain, purpose }: { domain: SenderDomainView; purpose: DomainCheckName }) {
  const check = domain.checks?.[purpose];
  if (!check) return <span className="muted">not checked yet</span>;
  return (
    <>
      <span className={`badge check-${check.status}`}>{check.status}</span>
      {check.reason && <div className="error">{check.reason}</div>}
      {check.status === "fail" && check.found.length > 0 && (
        <div className="muted">
          Found: <code className="record-value">{check.found.join(" | ")}</code>
        </div>
      )}
    </>
  );
}

function SenderDomainCard({ panel, domain, onChanged }: { panel: PanelRef; domain: SenderDomainView; onChanged: () => void }) {
  const panelId = panel.id;
  const [confirm, confirmation] = useConfirm();
  const { busy, failure, run } = useAction(onChanged);
  const zone = domain.records
    .filter((r) => r.value !== null)
    .map((r) => zoneLine(r.name, r.value!))
    .join("\n");
  return (
    <li className="card" aria-label={`Sender domain ${domain.domain}`}>
      <div className="screen-head">
        <h2>
          {domain.domain} <span className={`badge domain-${domain.state}`}>{STATE_LABELS[domain.state]}</span>
        </h2>
        <div className="row">
          <button type="button" disabled={busy} {...lockFor(panel, "domains")} onClick={() => run(() => admin("POST", panelId, domainPath(domain.domain, "/verify")))}>
            {busy ? "Checking…" : "Verify"}
            <span className="visually-hidden"> {domain.domain}</span>
          </button>
          <button
            type="button"
            className="danger"
            disabled={busy}
            {...lockFor(panel, "domains")}
            aria-label={`Remove ${domain.domain}`}
            onClick={async () => {
              if (await confirm({
                title: "Remove this sender domain?",
                message: `Remove the sender domain ${domain.domain}? Its DKIM keys are deleted and its mail is no longer signed.`,
                confirmLabel: "Remove sender domain",
              })) await run(() => admin("DELETE", panelId, domainPath(domain.domain)));
            }}
          >
            Remove
          </button>
        </div>
      </div>
      <p className="muted">
        {domain.checked_at
          ? `Last checked ${formatTime(domain.checked_at)}.`
          : may(panel, "domains")
            ? "Publish the records below at your DNS host, then press “Verify”."
            : "Not checked yet."}{" "}
        SPF, DKIM (RSA)
        and DMARC must pass for the domain to be verified.
      </p>
      <ErrorNote error={failure} />
      <DataTable
        caption={`Records to publish for ${domain.domain} and the result of their last check`}
        rows={domain.records}
        rowKey={(record) => record.purpose}
        rowLabel={(record) => `${RECORD_LABELS[record.purpose]} record of ${domain.domain}`}
        columns={[
          { header: "Record", rowHeader: true, cell: (record) => RECORD_LABELS[record.purpose] },
          { header: "Type", cell: (record) => record.type },
          { header: "Name", cell: (record) => <CopyableValue text={record.name} label="Copy name" /> },
          {
            header: "Value to publish",
            cell: (record) =>
              record.value === null ? (
                <span className="muted">Any SPF record (v=spf1 …) that allows the servers you send through</span>
              ) : (
                <CopyableValue text={record.value} label="Copy value" />
              ),
          },
          { header: "Last check", cell: (record) => <CheckResult domain={domain} purpose={record.purpose} /> },
        ]}
      />
      <p>
        <CopyButton text={zone} label="Copy all as zone-file lines" />
      </p>
      {confirmation}
    </li>
  );
}

function AddSenderDomain({ panelId, onAdded }: { panelId: string; onAdded: () => void }) {
  const [domain, setDomain] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [failure, setFailure] = useState<string>();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setFields({});
    setFailure(undefined);
    try {
      const body: CreateSenderDomain = { domain };
      await admin("POST", panelId, "/sender-domains", body);
      setDomain("");
      onAdded();
    } catch (problem) {
      const { message, fields } = failureOf(problem);
      setFailure(message);
      setFields(fields);
    }
  };
  return (
    <form className="card" onSubmit={submit} aria-label="Add a sender domain">
      <ErrorNote error={unplacedFailure(failure, fields, ["domain"])} />
      <div className="row">
        <Field label="Sender domain" hint="The part after @ in your sender addresses, such as shop.example.com" error={fields.domain}>
          {(props) => <input {...props} required value={domain} onChange={(e) => setDomain(e.target.value)} />}
        </Field>
        <button type="submit">Add domain</button>
      </div>
    </form>
  );
}

async function loadTrackingDomain(panelId: string): Promise<TrackingDomainView | null> {
  try {
    return await admin<TrackingDomainView>("GET", panelId, "/tracking-domain");
  } catch (failure) {
    if (failure instanceof ApiFailure && failure.status === 404) return null;
    throw failure;
  }
}

function TrackingDomain({ panel }: { panel: PanelRef }) {
  const panelId = panel.id;
  const [confirm, confirmation] = useConfirm();
  const [tick, setTick] = useState(0);
  const reload = () => setTick((t) => t + 1);
  const { data, error } = useLoad(() => loadTrackingDomain(panelId), [panelId, tick]);
  const [check, setCheck] = useState<TrackingDomainView>();
  const { busy, failure, run } = useAction(reload);
  const [domain, setDomain] = useState("");
  const [fields, setFields] = useState<Record<string, string>>({});
  const [formFailure, setFormFailure] = useState<string>();

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setFields({});
    setFormFailure(undefined);
    setCheck(undefined);
    try {
      const body: CreateSenderDomain = { domain };
      await admin("PUT", panelId, "/tracking-domain", body);
      setDomain("");
      reload();
    } catch (problem) {
      const { message, fields } = failureOf(problem);
      setFormFailure(message);
      setFields(fields);
    }
  };

  return (
    <section aria-labelledby="tracking-title">
      <h2 id="tracking-title">Tracking domain</h2>
      <p className="muted">
        Links, the open pixel and the unsubscribe link of the panel's email use this host of your own domain once it is verified, so they match the sender's
        domain. Without one they use the service's address.
      </p>
      <ErrorNote error={error} />
      {data === undefined ? (
        !error && <Loading />
      ) : data === null ? (
        <EmptyFor panel={panel} work="domains" title="No tracking domain">
          Set a host such as t.shop.example.com below, publish its CNAME record, then verify it.
        </EmptyFor>
      ) : (
        <section className="card" aria-label={`Tracking domain ${data.domain}`}>
          <div className="screen-head">
            <h3>
              {data.domain} <span className={`badge domain-${data.verified ? "verified" : "failed"}`}>{data.verified ? "verified" : "not verified"}</span>
            </h3>
            <div className="row">
              <button
                type="button"
                disabled={busy}
                {...lockFor(panel, "domains")}
                onClick={() => run(async () => setCheck(await admin<TrackingDomainView>("POST", panelId, "/tracking-domain/verify")))}
              >
                {busy ? "Checking…" : "Verify"}
                <span className="visually-hidden"> {data.domain}</span>
              </button>
              <button
                type="button"
                className="danger"
                disabled={busy}
                {...lockFor(panel, "domains")}
                aria-label={`Remove ${data.domain}`}
                onClick={async () => {
                  if (await confirm({
                    title: "Remove the tracking domain?",
                    message: `Remove the tracking domain ${data.domain}? Links go back to the service's address.`,
                    confirmLabel: "Remove tracking domain",
                  })) await run(async () => (await admin("DELETE", panelId, "/tracking-domain"), setCheck(undefined)));
                }}
              >
                Remove
              </button>
            </div>
          </div>
          <ErrorNote error={failure} />
          <DataTable
            caption="Record to publish for the tracking domain"
            rows={[data.record]}
            rowKey={(record) => record.name}
            rowLabel={() => `CNAME record of ${data.domain}`}
            columns={[
              { header: "Type", cell: (record) => record.type },
              { header: "Name", cell: (record) => <CopyableValue text={record.name} label="Copy name" /> },
              { header: "Value to publish", cell: (record) => <CopyableValue text={record.value} label="Copy value" /> },
            ]}
          />
          <p className="muted">{data.checked_at ? `Last checked ${formatTime(data.checked_at)}.` : "Not checked yet."}</p>
          {check && check.domain === data.domain && (
            <p role="status" className={check.verified ? "ok" : "error"}>
              {check.verified ? "The CNAME points at the service: the domain is verified." : `Not verified: ${check.reason ?? "the CNAME was not found"}.`}
              {check.found && check.found.length > 0 && <> Found: {check.found.join(", ")}.</>}
            </p>
          )}
        </section>
      )}
      <IfAllowed panel={panel} work="domains" what="Setting the tracking domain">
        <form className="card" onSubmit={submit} aria-label="Set the tracking domain">
          <ErrorNote error={unplacedFailure(formFailure, fields, ["domain"])} />
          <div className="row">
            <Field label="Tracking host" hint="A host of your sender domain, such as t.shop.example.com; setting another replaces the current one" error={fields.domain}>
              {(props) => <input {...props} required value={domain} onChange={(e) => setDomain(e.target.value)} />}
            </Field>
            <button type="submit">Set tracking domain</button>
          </div>
        </form>
      </IfAllowed>
      {confirmation}
    </section>
  );
}

/** What the deployment does with mail from an unverified domain, in the Worker's own words (the overview's email member). */
function EmailSetupNote({ email }: { email: Overview["email"] }) {
  if (email.problem) {
    return (
      <p className="error" role="alert">
        Email is not sent: {email.problem}.
      </p>
    );
  }
  if (!email.real_email) {
    return (
      <p className="muted">
        Email goes to the outbox, which keeps every message and sends none: mail from a domain that is not verified is accepted there with a note. A provider
        that sends real email refuses campaigns and journeys from such a domain.
      </p>
    );
  }
  return <p className="muted">Email is sent through {email.provider}: campaigns and journeys from a domain that is not verified are refused.</p>;
}

export function SenderDomains({ panel }: ScreenProps) {
  const [tick, setTick] = useState(0);
  const reload = () => setTick((t) => t + 1);
  const { data, error } = useLoad(() => admin<{ sender_domains: SenderDomainView[] }>("GET", panel.id, "/sender-domains"), [panel.id, tick]);
  const overview = useLoad(() => admin<Overview>("GET", panel.id, "/overview"), [panel.id]);

  return (
    <Screen title="Sender domains">
      {overview.data && <EmailSetupNote email={overview.data.email} />}
      <ErrorNote error={error} />
      {!data ? (
        !error && <Loading />
      ) : data.sender_domains.length === 0 ? (
        <EmptyFor panel={panel} work="domains" title="No sender domains yet">
          Add the domain of your sender addresses below: its SPF, DKIM and DMARC records to publish are shown here.
        </EmptyFor>
      ) : (
        <ul className="plain">
          {data.sender_domains.map((domain) => (
            <SenderDomainCard key={domain.domain} panel={panel} domain={domain} onChanged={reload} />
          ))}
        </ul>
      )}
      <IfAllowed panel={panel} work="domains" what="Adding a sender domain">
        <h2>Add a sender domain</h2>
        <AddSenderDomain panelId={panel.id} onAdded={reload} />
      </IfAllowed>
      <TrackingDomain panel={panel} />
    </Screen>
  );
}
