import { useState, type FormEvent } from "react";
import { admin } from "../../api";
import type { SmsProviderName, SmsSettingsChange, SmsSettingsView } from "../../../../src/domain/answers";
import { CopyableValue, ErrorNote, Field, formatTime, Loading, useLoad, useSubmit, unplacedFailure } from "../../ui";

// The panel's SMS provider: what is configured (never its credential, which the API does not
// return) and, for owners, the form that chooses it. Marketers read it; viewers cannot.

const PROVIDER_LABELS: Record<SmsProviderName, string> = {
  outbox: "Outbox (records SMS, sends none)",
  twilio: "Twilio",
  msg91: "MSG91",
};

/** The non-secret settings of each provider, labelled as its console names them. */
const SETTING_LABELS: Record<string, string> = {
  account_sid: "Account SID",
  from: "Sending number",
  messaging_service_sid: "Messaging service SID",
  sender_id: "Sender id",
  template_id: "Flow/template id",
  dlt_template_id: "DLT template id",
};

export function SmsProviderFacts({ sms }: { sms: SmsSettingsView }) {
  if (!sms.sends) {
    return <p>No provider: journeys' SMS go to the outbox, where they are recorded and not sent.</p>;
  }
  const settings = Object.entries(SETTING_LABELS).flatMap(([name, label]) => {
    const value = (sms as Record<string, unknown>)[name];
    return typeof value === "string" ? [[label, value] as const] : [];
  });
  return (
    <dl className="facts" aria-label="SMS provider settings">
      <dt>Provider</dt>
      <dd>{PROVIDER_LABELS[sms.provider]}</dd>
      {settings.map(([label, value]) => (
        <Fact key={label} label={label} value={value} />
      ))}
      <dt>Credential</dt>
      <dd>set (stored encrypted, never shown)</dd>
      <dt>Delivery report URL</dt>
      <dd>
        <CopyableValue text={sms.delivery_report_url} label="Copy delivery report URL" />
      </dd>
      <dt>Replies URL (STOP)</dt>
      <dd>
        <CopyableValue text={sms.replies_url} label="Copy replies URL" />
      </dd>
      <dt>Changed</dt>
      <dd>{formatTime(sms.updated_at)}</dd>
    </dl>
  );
}

function Fact({ label, value }: { label: string; value: string }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <code>{value}</code>
      </dd>
    </>
  );
}

interface Draft {
  provider: SmsProviderName;
  account_sid: string;
  auth_token: string;
  from: string;
  messaging_service_sid: string;
  authkey: string;
  sender_id: string;
  template_id: string;
  dlt_template_id: string;
}

function draftOf(sms: SmsSettingsView): Draft {
  const current = sms as Partial<Record<keyof Draft, string>>;
  return {
    provider: sms.provider,
    account_sid: current.account_sid ?? "",
    auth_token: "",
    from: current.from ?? "",
    messaging_service_sid: current.messaging_service_sid ?? "",
    authkey: "",
    sender_id: current.sender_id ?? "",
    template_id: current.template_id ?? "",
    dlt_template_id: current.dlt_template_id ?? "",
  };
}

/** The body of PUT /sms: the chosen provider's fields, empty optional ones left out. */
function bodyOf(draft: Draft): SmsSettingsChange {
  const given = (value: string) => (value.trim() ? value : undefined);
  if (draft.provider === "twilio") {
    return { provider: "twilio", account_sid: draft.account_sid, auth_token: draft.auth_token, from: given(draft.from), messaging_service_sid: given(draft.messaging_service_sid) };
  }
  if (draft.provider === "msg91") {
    return { provider: "msg91", authkey: draft.authkey, sender_id: draft.sender_id, template_id: draft.template_id, dlt_template_id: given(draft.dlt_template_id) };
  }
  return { provider: "outbox" };
}

export function SmsProviderForm({ panelId, sms, onSaving, onSaved }: { panelId: string; sms: SmsSettingsView; onSaving: () => void; onSaved: () => void }) {
  const [draft, setDraft] = useState(() => draftOf(sms));
  const { failure, fields, busy, run } = useSubmit(onSaved);
  const set = (name: keyof Draft, value: string) => setDraft((d) => ({ ...d, [name]: value }));
  const text = (name: keyof Draft, label: string, hint?: string, secret = false) => (
    <Field label={label} hint={hint} error={fields[name]}>
      {(props) => (
        <input {...props} type={secret ? "password" : "text"} autoComplete={secret ? "new-password" : "off"} value={draft[name]} onChange={(e) => set(name, e.target.value)} />
      )}
    </Field>
  );
  const credentialHint = sms.sends ? "The one set is never shown: enter it with every change." : undefined;

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    // A note of an earlier save must not stand beside this attempt's refusal.
    onSaving();
    // Once saved, the screen reloads and gives the form the stored settings (the credential blank again).
    await run(() => admin("PUT", panelId, "/sms", bodyOf(draft)));
  };

  return (
    <form className="card" onSubmit={submit} aria-label="SMS provider">
      <h3>Change the provider</h3>
      <ErrorNote error={unplacedFailure(failure, fields, (field) => field === "provider" || field in draft)} />
      <Field label="Provider" error={fields.provider}>
        {(props) => (
          <select {...props} value={draft.provider} onChange={(e) => set("provider", e.target.value)}>
            {Object.entries(PROVIDER_LABELS).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        )}
      </Field>
      {draft.provider === "twilio" && (
        <div className="grid-fields">
          {text("account_sid", "Account SID", "AC and 32 hex digits")}
          {text("auth_token", "Auth token", credentialHint, true)}
          {text("from", "Sending number", "E.164, such as +14155550100; or a messaging service below")}
          {text("messaging_service_sid", "Messaging service SID", "MG and 32 hex digits; instead of a sending number")}
        </div>
      )}
      {draft.provider === "msg91" && (
        <div className="grid-fields">
          {text("authkey", "Authkey", credentialHint, true)}
          {text("sender_id", "Sender id", "The DLT-approved header, 3 to 11 letters or digits")}
          {text("template_id", "Flow/template id", "The MSG91 flow whose content is ##message##")}
          {text("dlt_template_id", "DLT template id", "Optional: 10 to 25 digits")}
        </div>
      )}
      {draft.provider === "outbox" && <p className="muted">Saving the outbox removes the provider and its credential: SMS are recorded and not sent.</p>}
      <button type="submit" disabled={busy}>
        Save SMS provider
      </button>
    </form>
  );
}

/** What is configured, and the form for those who may change it (owners). */
export function SmsProvider({ panelId, owner }: { panelId: string; owner: boolean }) {
  const { data, error, reload } = useLoad(() => admin<SmsSettingsView>("GET", panelId, "/sms"), [panelId]);
  const [saved, setSaved] = useState(false);
  return (
    <section aria-labelledby="sms-provider-title">
      <h2 id="sms-provider-title">SMS provider</h2>
      <ErrorNote error={error} />
      {saved && (
        <p role="status" className="ok">
          SMS provider saved.
        </p>
      )}
      {!data ? (
        !error && <Loading />
      ) : (
        <>
          <div className="card">
            <SmsProviderFacts sms={data} />
          </div>
          {owner ? (
            <SmsProviderForm key={data.sends ? data.updated_at : "outbox"} panelId={panelId} sms={data} onSaving={() => setSaved(false)} onSaved={() => (setSaved(true), reload())} />
          ) : (
            <p className="muted">Only an owner of the panel can change the provider.</p>
          )}
        </>
      )}
    </section>
  );
}
