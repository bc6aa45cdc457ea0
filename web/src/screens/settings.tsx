import { useState, type FormEvent } from "react";
import { admin } from "../api";
import type { PanelPatch, PanelView } from "../../../src/domain/answers";
import { asCurl, sampleCalls } from "../sample-calls";
import { CopyButton, ErrorNote, failureOf, Field, Loading, Screen, useLoad } from "../ui";
import { lockFor, may, RoleNote } from "../components/role";
import { AlertSubscriptions } from "../components/alert-subscriptions";
import type { ScreenProps } from "../screen-props";

const UNKNOWN_ATTRIBUTES: Record<PanelView["unknown_attributes"], string> = {
  reject: "Refuse the call, naming the attribute (default)",
  ignore: "Ignore them and store the rest",
  create: "Create them as text attributes",
};

/** What API clients may send: attributes the panel does not know, and browser origins allowed to call. */
function ClientSettings({ panel, save, locked }: { panel: PanelView; save: (change: PanelPatch, done: string) => Promise<Record<string, string>>; locked: ReturnType<typeof lockFor> }) {
  const [mode, setMode] = useState(panel.unknown_attributes);
  const [origins, setOrigins] = useState(panel.cors_origins.join("\n"));
  const [fields, setFields] = useState<Record<string, string>>({});

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const cors_origins = origins.split("\n").map((line) => line.trim()).filter(Boolean);
    setFields(await save({ unknown_attributes: mode, cors_origins }, "Client settings saved."));
  };

  return (
    <form className="card" onSubmit={submit} aria-label="Client settings">
      <h2>What clients may send</h2>
      <Field label="Contact attributes the panel does not have" error={fields.unknown_attributes}>
        {(props) => (
          <select {...props} value={mode} onChange={(e) => setMode(e.target.value as PanelView["unknown_attributes"])}>
            {Object.entries(UNKNOWN_ATTRIBUTES).map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        )}
      </Field>
      <Field
        label="Browser origins allowed to call the API (CORS)"
        hint="One per line, such as https://shop.example.com, or * for any; empty allows none"
        error={fields.cors_origins ?? Object.entries(fields).find(([name]) => name.startsWith("cors_origins."))?.[1]}
      >
        {(props) => <textarea {...props} rows={3} value={origins} onChange={(e) => setOrigins(e.target.value)} />}
      </Field>
      <button type="submit" {...locked}>
        Save client settings
      </button>
    </form>
  );
}

/** How far ahead the panel's campaigns must be scheduled; at 0 a campaign can be sent now. */
function CampaignSettings({ panel, save, locked }: { panel: PanelView; save: (change: PanelPatch, done: string) => Promise<Record<string, string>>; locked: ReturnType<typeof lockFor> }) {
  const [lead, setLead] = useState(String(panel.campaign_lead_minutes));
  const [fields, setFields] = useState<Record<string, string>>({});
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setFields(await save({ campaign_lead_minutes: Number(lead) }, "Campaign settings saved."));
  };
  return (
    <form className="card" onSubmit={submit} aria-label="Campaign settings">
      <h2>Campaigns</h2>
      <Field
        label="Lead time, in minutes"
        hint="How far ahead a campaign must be scheduled; 0 lets campaigns be sent now. The API's upload_contact_and_publish keeps its own 90 minutes."
        error={fields.campaign_lead_minutes}
      >
        {(props) => <input {...props} type="number" min={0} max={10080} step={1} required value={lead} onChange={(e) => setLead(e.target.value)} />}
      </Field>
      <button type="submit" {...locked}>
        Save campaign settings
      </button>
    </form>
  );
}

const RULE_CHANNEL_NAMES = { email: "Email", sms: "SMS", push: "Push" } as const;
type RuleChannel = keyof typeof RULE_CHANNEL_NAMES;
interface ChannelRules {
  max: string;
  days: string;
  from: string;
  to: string;
}

/**
 * Frequency caps and quiet hours per channel (one cap per channel here; the API takes more).
 * An empty cap or window is none. Refusals come back named by their place in the lists sent
 * (`message_rules.caps.1.max`), shown under the channel's input they came from.
 */
function MessageRulesSettings({ panel, save, locked }: { panel: PanelView; save: (change: PanelPatch, done: string) => Promise<Record<string, string>>; locked: ReturnType<typeof lockFor> }) {
  const channels = Object.keys(RULE_CHANNEL_NAMES) as RuleChannel[];
  const initial = Object.fromEntries(
    channels.map((channel) => {
      const cap = panel.message_rules.caps.find((c) => c.channel === channel);
      const quiet = panel.message_rules.quiet_hours.find((q) => q.channel === channel);
      return [channel, { max: cap ? String(cap.max) : "", days: cap ? String(cap.days) : "", from: quiet?.from ?? "", to: quiet?.to ?? "" }];
    }),
  ) as Record<RuleChannel, ChannelRules>;
  const [rules, setRules] = useState(initial);
  const [fields, setFields] = useState<Record<string, string>>({});
  const change = (channel: RuleChannel, member: keyof ChannelRules, value: string) => setRules({ ...rules, [channel]: { ...rules[channel], [member]: value } });

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const capped = channels.filter((c) => rules[c].max !== "" || rules[c].days !== "");
    const quiet = channels.filter((c) => rules[c].from !== "" || rules[c].to !== "");
    const errors = await save(
      {
        message_rules: {
          caps: capped.map((channel) => ({ channel, max: Number(rules[channel].max), days: Number(rules[channel].days) })),
          quiet_hours: quiet.map((channel) => ({ channel, from: rules[channel].from, to: rules[channel].to })),
        },
      },
      "Message rules saved.",
    );
    // Back from list places to channels: message_rules.caps.1.max -> sms.max.
    const named: Record<string, string> = {};
    for (const [field, message] of Object.entries(errors)) {
      const match = /^message_rules\.(caps|quiet_hours)\.(\d+)\.?(\w*)$/.exec(field);
      const channel = match ? (match[1] === "caps" ? capped : quiet)[Number(match[2])] : undefined;
      if (match && channel) named[`${channel}.${match[3] || (match[1] === "caps" ? "max" : "from")}`] = message;
      else named.rules = message;
    }
    setFields(named);
  };

  return (
    <form className="card" onSubmit={submit} aria-label="Message rules">
      <h2>Frequency caps and quiet hours</h2>
      <p className="muted">
        For campaigns and journeys alike. A capped message is skipped (or, if its journey step says so, waits); in quiet hours, on the contact's clock (its TIMEZONE
        attribute, else {panel.timezone}), messages wait for the hours' end. Journey steps marked transactional are exempt.
      </p>
      {fields.rules && <p className="error">{fields.rules}</p>}
      {channels.map((channel) => (
        <fieldset key={channel}>
          <legend>{RULE_CHANNEL_NAMES[channel]}</legend>
          <Field label={`${RULE_CHANNEL_NAMES[channel]}: at most this many messages`} hint="Empty: no cap" error={fields[`${channel}.max`]}>
            {(props) => <input {...props} type="number" min={1} max={1000} step={1} value={rules[channel].max} onChange={(e) => change(channel, "max", e.target.value)} />}
          </Field>
          <Field label={`${RULE_CHANNEL_NAMES[channel]}: per this many days`} error={fields[`${channel}.days`] ?? fields[`${channel}.channel`]}>
            {(props) => <input {...props} type="number" min={1} max={90} step={1} value={rules[channel].days} onChange={(e) => change(channel, "days", e.target.value)} />}
          </Field>
          <Field label={`${RULE_CHANNEL_NAMES[channel]}: quiet from`} hint="HH:MM; empty: no quiet hours" error={fields[`${channel}.from`]}>
            {(props) => <input {...props} type="time" value={rules[channel].from} onChange={(e) => change(channel, "from", e.target.value)} />}
          </Field>
          <Field label={`${RULE_CHANNEL_NAMES[channel]}: quiet until`} error={fields[`${channel}.to`]}>
            {(props) => <input {...props} type="time" value={rules[channel].to} onChange={(e) => change(channel, "to", e.target.value)} />}
          </Field>
        </fieldset>
      ))}
      <button type="submit" {...locked}>
        Save message rules
      </button>
    </form>
  );
}

export function Settings({ panel }: ScreenProps) {
  const { data, error, reload } = useLoad(() => admin<PanelView>("GET", panel.id, ""), [panel.id]);
  const [failure, setFailure] = useState<string>();
  const [saved, setSaved] = useState<string>();

  /** Saves a change; answers the per-field errors of a refusal (none when saved). */
  const patch = async (change: PanelPatch, done: string): Promise<Record<string, string>> => {
    setFailure(undefined);
    setSaved(undefined);
    try {
      await admin<PanelView>("PATCH", panel.id, "", change);
      setSaved(done);
      reload();
      return {};
    } catch (problem) {
      const { message, fields } = failureOf(problem);
      // A refusal naming fields is shown under them by the form that sent them, not again on top.
      setFailure(Object.keys(fields).length ? undefined : message);
      return fields;
    }
  };

  return (
    <Screen title="Settings">
      <RoleNote panel={panel} work="settings" what="Changing the panel's settings" />
      <ErrorNote error={error ?? failure} />
      {saved && (
        <p role="status" className="ok">
          {saved}
        </p>
      )}
      {!data ? (
        <Loading />
      ) : (
        <>
          <div className="card">
            <h2>API mode</h2>
            <p>
              API mode is <strong>{data.api_mode ? "on" : "off"}</strong>.{" "}
              {data.api_mode
                ? "Users' API keys may call the API."
                : "While it is off, every API key of this panel is refused; turn it on before handing out keys."}
            </p>
            <button type="button" {...lockFor(panel, "settings")} onClick={() => patch({ api_mode: !data.api_mode }, data.api_mode ? "API mode is off." : "API mode is on.")}>
              {data.api_mode ? "Turn API mode off" : "Turn API mode on"}
            </button>
          </div>
          <div className="card">
            <h2>Sign-in</h2>
            <p>
              Two-factor sign-in is <strong>{data.require_two_factor ? "required" : "optional"}</strong> for this panel's operators.{" "}
              {data.require_two_factor
                ? "Operators without an authenticator are asked to set one up at their next sign-in."
                : "Each operator may turn it on from Your account."}
            </p>
            <button
              type="button"
              {...lockFor(panel, "settings")}
              onClick={() =>
                patch({ require_two_factor: !data.require_two_factor }, data.require_two_factor ? "Two-factor sign-in is optional." : "Two-factor sign-in is required.")
              }
            >
              {data.require_two_factor ? "Make two-factor sign-in optional" : "Require two-factor sign-in"}
            </button>
          </div>
          <div className="card">
            <h2>Panel</h2>
            <dl className="facts">
              <dt>Name</dt>
              <dd>{data.name}</dd>
              <dt>Primary key</dt>
              <dd>{data.primary_key}</dd>
              <dt>Time zone</dt>
              <dd>{data.timezone}</dd>
              <dt>Region</dt>
              <dd>{data.region}</dd>
              <dt>Client id</dt>
              <dd>
                <code>{data.client_id}</code> <CopyButton text={data.client_id} label="Copy client id" />
              </dd>
              <dt>Base URL</dt>
              <dd>
                <code>{location.origin}</code> <CopyButton text={location.origin} label="Copy base URL" />
              </dd>
            </dl>
          </div>
          <ClientSettings key={data.updated_at} panel={data} save={patch} locked={lockFor(panel, "settings")} />
          <CampaignSettings key={`campaigns-${data.updated_at}`} panel={data} save={patch} locked={lockFor(panel, "settings")} />
          <MessageRulesSettings key={`rules-${data.updated_at}`} panel={data} save={patch} locked={lockFor(panel, "settings")} />
          {may(panel, "alerts") && (
            <section aria-labelledby="alerts-heading">
              <h2 id="alerts-heading">Alerts</h2>
              <p className="muted">
                Hear by email, or at a webhook of your own, when one of this panel's webhooks is disabled, a sender domain fails its check, its work ends in dead
                letters, the shard holding its data passes 80% of its size, or the service's cron runs over 5 minutes late. Each is told once, and again only after it
                cleared and came back.
              </p>
              <AlertSubscriptions holder={panel.id} call={(method, path, body) => admin(method, panel.id, `/alerts/subscriptions${path}`, body)} />
            </section>
          )}
          <h2>Sample calls</h2>
          <p className="muted">Replace $API_KEY with a key from Users and API keys, $ACTIVITY_ID with an activity's id, and $CSV_URL with the address of a CSV file of contacts the service can fetch.</p>
          {sampleCalls(data).map((call) => {
            const command = asCurl(location.origin, call);
            return (
              <div key={call.family} className="card">
                <h3>{call.family}</h3>
                <pre>{command}</pre>
                <CopyButton text={command} label={`Copy ${call.family} call`} />
              </div>
            );
          })}
        </>
      )}
    </Screen>
  );
}
