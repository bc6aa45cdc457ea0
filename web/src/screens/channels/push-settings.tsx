import { useState, type FormEvent } from "react";
import { admin, ApiFailure } from "../../api";
import type { PushSettingsChange, PushSettingsView, ServiceAccountKey } from "../../../../src/domain/answers";
import { CopyableValue, ErrorNote, Field, Loading, useLoad, useSubmit, unplacedFailure } from "../../ui";

// The panel's push channels: web push (bpn; the service makes the VAPID keys) and app push
// through FCM (apn; a service account's key file, its private key never shown back). Marketers
// read the setup; owners turn each channel on or off.

type Save = (change: PushSettingsChange) => Promise<unknown>;

function OnOff({ on }: { on: boolean }) {
  return <span className={`badge state-${on ? "operational" : "configured"}`}>{on ? "on" : "off"}</span>;
}

function WebPush({ web, owner, save }: { web: PushSettingsView["web_push"]; owner: boolean; save: Save }) {
  const [subject, setSubject] = useState(web.sends ? web.subject : "");
  const { failure, fields, busy, run } = useSubmit();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    await run(() => save({ web_push: { subject } }));
  };
  return (
    <div className="card" aria-labelledby="web-push-title" role="group">
      <h3 id="web-push-title">
        Web push <OnOff on={web.sends} />
      </h3>
      <p className="muted">Journeys' browser push (bpn) steps go to the browsers that subscribed on your site. {web.subscriptions} subscribed.</p>
      {web.sends && (
        <dl className="facts" aria-label="Web push settings">
          <dt>Contact for push services</dt>
          <dd>{web.subject}</dd>
          <dt>VAPID public key</dt>
          <dd>
            <CopyableValue text={web.public_key} label="Copy public key" />
          </dd>
          <dt>Subscribe URL</dt>
          <dd>
            <CopyableValue text={web.subscribe_url} label="Copy subscribe URL" />
          </dd>
        </dl>
      )}
      {owner && (
        <form onSubmit={submit} aria-label="Set up web push">
          <ErrorNote error={unplacedFailure(failure, fields, ["web_push", "web_push.subject"])} />
          <Field label="Contact for push services" hint="mailto: address or https: URL push services may write to" error={fields["web_push.subject"] ?? fields.web_push}>
            {(props) => <input {...props} required value={subject} onChange={(e) => setSubject(e.target.value)} />}
          </Field>
          <div className="row">
            <button type="submit" disabled={busy}>
              {web.sends ? "Save web push" : "Turn web push on"}
            </button>
            {web.sends && (
              <button type="button" className="danger" disabled={busy} onClick={() => void run(() => save({ web_push: null }))}>
                Turn web push off
              </button>
            )}
          </div>
        </form>
      )}
    </div>
  );
}

/** The key file as the API takes it; text that is not a JSON object is refused here, named as the API would. */
function serviceAccountOf(text: string): ServiceAccountKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    const message = "must be the service account key file's JSON object";
    throw new ApiFailure(400, `fcm.service_account ${message}`, [{ field: "fcm.service_account", message }]);
  }
  return parsed as ServiceAccountKey;
}

/** The first refusal of the key file, naming the member it is about. */
function keyFileError(fields: Record<string, string>): string | undefined {
  const found = Object.entries(fields).find(([name]) => name === "fcm" || name.startsWith("fcm."));
  if (!found) return undefined;
  const member = found[0].replace(/^fcm\.?(service_account\.?)?/, "");
  return member ? `${member}: ${found[1]}` : found[1];
}

function Fcm({ fcm, owner, save }: { fcm: PushSettingsView["fcm"]; owner: boolean; save: Save }) {
  const [keyFile, setKeyFile] = useState("");
  const { failure, fields, busy, run } = useSubmit();
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    await run(() => save({ fcm: { service_account: serviceAccountOf(keyFile) } }));
  };
  return (
    <div className="card" aria-labelledby="fcm-title" role="group">
      <h3 id="fcm-title">
        App push (FCM) <OnOff on={fcm.sends} />
      </h3>
      <p className="muted">Journeys' app push (apn) steps go through Firebase Cloud Messaging to the app installs that registered. {fcm.tokens} registered.</p>
      {fcm.sends && (
        <dl className="facts" aria-label="FCM settings">
          <dt>Firebase project</dt>
          <dd>{fcm.project_id}</dd>
          <dt>Service account</dt>
          <dd>{fcm.client_email}</dd>
          <dt>Private key</dt>
          <dd>set (stored encrypted, never shown)</dd>
          <dt>Token URL for apps</dt>
          <dd>
            <CopyableValue text={fcm.register_url} label="Copy token URL" />
          </dd>
        </dl>
      )}
      {owner && (
        <form onSubmit={submit} aria-label="Set up app push (FCM)">
          <ErrorNote error={unplacedFailure(failure, fields, (field) => Object.keys(fields).length === 1 && (field === "fcm" || field.startsWith("fcm.")))} />
          <Field label="Service account key file (JSON)" hint="The whole file Google Cloud gives for the service account" error={keyFileError(fields)}>
            {(props) => <textarea {...props} required rows={5} spellCheck={false} value={keyFile} onChange={(e) => setKeyFile(e.target.value)} />}
          </Field>
          <div className="row">
            <button type="submit" disabled={busy}>
              {fcm.sends ? "Replace the key" : "Turn FCM on"}
            </button>
            {fcm.sends && (
              <button type="button" className="danger" disabled={busy} onClick={() => void run(() => save({ fcm: null }))}>
                Turn FCM off
              </button>
            )}
          </div>
        </form>
      )}
    </div>
  );
}

export function PushSettings({ panelId, owner }: { panelId: string; owner: boolean }) {
  const { data, error, reload } = useLoad(() => admin<PushSettingsView>("GET", panelId, "/push"), [panelId]);
  const save: Save = async (change) => {
    await admin("PUT", panelId, "/push", change);
    reload();
  };
  return (
    <section aria-labelledby="push-title">
      <h2 id="push-title">Push notifications</h2>
      <ErrorNote error={error} />
      {!data ? (
        !error && <Loading />
      ) : (
        <>
          {!owner && <p className="muted">Only an owner of the panel can turn push channels on or off.</p>}
          <WebPush key={`web-${data.updated_at}`} web={data.web_push} owner={owner} save={save} />
          <Fcm key={`fcm-${data.updated_at}`} fcm={data.fcm} owner={owner} save={save} />
        </>
      )}
    </section>
  );
}
