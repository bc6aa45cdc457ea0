// The calls the Settings screen offers to copy, as requests first and curl lines second, so the
// end-to-end test can send exactly what an operator copies.
export interface SampleCall {
  family: string;
  method: "GET" | "POST";
  /** Path and query; `$API_KEY`, `$ACTIVITY_ID` and `$CSV_URL` are for the reader to replace. */
  path: string;
  form?: Record<string, string>;
  json?: string;
  headers?: Record<string, string>;
}

export const API_KEY = "$API_KEY";
export const ACTIVITY_ID = "$ACTIVITY_ID";
export const CSV_URL = "$CSV_URL";

/** A value of the panel's primary key that the API accepts. */
function sampleKeyValue(primaryKey: string): string {
  if (primaryKey === "EMAIL") return "ada@example.com";
  if (primaryKey === "MOBILE") return "+919876543210";
  return "C-1001";
}

export function sampleCalls(panel: { primary_key: string; client_id: string }): SampleCall[] {
  const identity = sampleKeyValue(panel.primary_key);
  const envelope = (type: string, activity: string) => `/apiv2?type=${type}&activity=${activity}&apikey=${API_KEY}`;
  return [
    {
      family: "Contacts (envelope)",
      method: "POST",
      path: envelope("contact", "add"),
      form: { data: JSON.stringify({ [panel.primary_key]: identity, NAME: "Ada" }) },
    },
    { family: "Lists (envelope)", method: "POST", path: envelope("lists", "add"), form: { listname: "Customers", desc: "Made from Settings" } },
    {
      family: "Bulk upload (envelope)",
      method: "POST",
      path: envelope("contact", "bulkupload"),
      form: { path: CSV_URL },
    },
    {
      family: "Single activity",
      method: "POST",
      path: `/v1/activity/singleactivity/${panel.client_id}`,
      headers: { "content-type": "application/json" },
      json: JSON.stringify({ activityid: ACTIVITY_ID, identity, activity_params: {} }),
    },
    {
      family: "Email broadcast (envelope)",
      method: "POST",
      path: envelope("email_broadcast", "upload_contact_and_publish"),
      headers: { "content-type": "application/json" },
      json: JSON.stringify({
        contacts_upload_source: CSV_URL,
        list_name: "March",
        campaign_name: "March news",
        subject_line: "Hello {{NAME|there}}",
        sender_name: "Shop",
        sender_email_id: "news@shop.example.com",
        schedule_date: "2030-03-01 10:00:00",
        source_code: btoa("<h1>Hello {{NAME|there}}</h1>"),
        notify_me: "ops@example.com",
      }),
    },
  ];
}

const quoted = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

/** The call as a curl command line for a POSIX shell. */
export function asCurl(origin: string, call: SampleCall): string {
  const parts = [`curl${call.method === "POST" ? " -X POST" : ""} "${origin}${call.path}"`];
  for (const [name, value] of Object.entries(call.headers ?? {})) parts.push(`-H ${quoted(`${name}: ${value}`)}`);
  for (const [name, value] of Object.entries(call.form ?? {})) parts.push(`--data-urlencode ${quoted(`${name}=${value}`)}`);
  if (call.json !== undefined) parts.push(`-d ${quoted(call.json)}`);
  return parts.join(" \\\n  ");
}
