import { useState } from "react";
import { admin } from "../api";
import type { PanelPatch, PanelView } from "../types";
import { CopyButton, ErrorNote, failureOf, Loading, Screen, useLoad } from "../ui";
import type { ScreenProps } from ".";

function sampleCalls(origin: string, panel: PanelView): [string, string][] {
  const key = "$API_KEY";
  return [
    [
      "Contacts (envelope)",
      `curl -X POST "${origin}/apiv2?type=contact&activity=add&apikey=${key}" \\\n  --data-urlencode 'data={"${panel.primary_key}":"ada@example.com","NAME":"Ada"}'`,
    ],
    ["Lists (envelope)", `curl "${origin}/apiv2?type=list&activity=create&apikey=${key}&data=%7B%22name%22%3A%22Customers%22%7D"`],
    [
      "Bulk upload (envelope)",
      `curl -X POST "${origin}/apiv2?type=contact&activity=bulkupload&apikey=${key}" \\\n  -F 'data={"listid":1}' -F 'file=@contacts.csv'`,
    ],
    [
      "Single activity",
      `curl -X POST "${origin}/v1/activity/singleactivity/${panel.client_id}" \\\n  -H 'content-type: application/json' \\\n  -d '{"activityid":"$ACTIVITY_ID","identity":"ada@example.com","activity_params":{}}'`,
    ],
    [
      "Broadcast (envelope)",
      `curl -X POST "${origin}/apiv2?type=broadcast&activity=create&apikey=${key}" \\\n  --data-urlencode 'data={"listid":1,"subject":"Hello","fromname":"Shop","fromemail":"news@example.com","html":"<p>Hi</p>"}'`,
    ],
  ];
}

export function Settings({ panel }: ScreenProps) {
  const { data, error, reload } = useLoad(() => admin<PanelView>("GET", panel.id, ""), [panel.id]);
  const [failure, setFailure] = useState<string>();
  const [saved, setSaved] = useState<string>();

  const patch = async (change: PanelPatch, done: string) => {
    setFailure(undefined);
    setSaved(undefined);
    try {
      await admin<PanelView>("PATCH", panel.id, "", change);
      setSaved(done);
      reload();
    } catch (problem) {
      setFailure(failureOf(problem).message);
    }
  };

  return (
    <Screen title="Settings">
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
            <button type="button" onClick={() => patch({ api_mode: !data.api_mode }, data.api_mode ? "API mode is off." : "API mode is on.")}>
              {data.api_mode ? "Turn API mode off" : "Turn API mode on"}
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
          <h2>Sample calls</h2>
          <p className="muted">Replace $API_KEY with a key from Users and API keys.</p>
          {sampleCalls(location.origin, data).map(([family, command]) => (
            <div key={family} className="card">
              <h3>{family}</h3>
              <pre>{command}</pre>
              <CopyButton text={command} label={`Copy ${family} call`} />
            </div>
          ))}
        </>
      )}
    </Screen>
  );
}
