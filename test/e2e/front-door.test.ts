// The front door (issue 14): a fresh `npm start` prints what a person needs, the README's first
// examples run as printed against it, and PUBLIC_BASE_URL follows the port it serves on.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { after, test } from "node:test";
import { service, serviceForThisFile } from "./suite.ts";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root } from "./service.ts";
import { ACTIVITY_ID, API_KEY, CSV_URL, sampleCalls } from "../../web/src/sample-calls.ts";

// The local secrets as .dev.vars.example has them, with its commented SES_SNS_TOKEN filled in and
// an admin token of this run's: an optional secret (not in wrangler.toml's required list) and a
// required one, both read from the file start.ts is given (DEV_VARS), never the developer's.
const secretsDir = mkdtempSync(join(tmpdir(), "apiv2-dev-vars-"));
const SNS_TOKEN = `sns-${randomBytes(8).toString("hex")}`;
const ADMIN_TOKEN = `admin-${randomBytes(8).toString("hex")}`;
const example = readFileSync(join(root, ".dev.vars.example"), "utf8");
assert.match(example, /^# SES_SNS_TOKEN=$/m);
writeFileSync(join(secretsDir, "dev.vars"), example.replace(/^# SES_SNS_TOKEN=$/m, `SES_SNS_TOKEN=${SNS_TOKEN}`).replace(/^ADMIN_TOKEN=.*$/m, `ADMIN_TOKEN=${ADMIN_TOKEN}`));
after(() => rmSync(secretsDir, { recursive: true, force: true }));

serviceForThisFile({ options: () => ({ env: { DEV_VARS: join(secretsDir, "dev.vars") } }) });

/** The shell variables the printed `export` line sets. */
function exported(): Record<string, string> {
  const line = /^ {2}export (.+)$/m.exec(service.output())?.[1] ?? "";
  return Object.fromEntries(line.split(" ").map((pair) => pair.split("=") as [string, string]));
}

async function admin(method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${service.origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.json();
}

test("prints the address, the owner, the key and client id with an export line, and a curl line; wrangler's output goes to the log it names", () => {
  const output = service.output();
  const before = output.slice(0, output.indexOf("Service ready at")).trim().split("\n").filter((line) => !/^(Created \.dev\.vars|$)/.test(line));
  assert.equal(before.length, 1, `printed before ready: ${before.join(" | ")}`);
  assert.match(before[0]!, /^Starting the service \(region default\); wrangler's output goes to \S+dev\.log$/);
  assert.deepEqual(exported(), { KEY: service.printed["API key"], CLIENT_ID: service.printed["client id"], PANEL: service.printed["demo panel"] });
  assert.match(output, /curl -X POST "http:\/\/127\.0\.0\.1:\d+\/apiv2\?type=contact&activity=add&apikey=\$KEY"/);
  assert.doesNotMatch(output, /\[wrangler|⛅️|Environment Variable/);
});

test("every secret of the local secrets file reaches the Worker, the optional SES ones too: the SNS endpoint answers for its token", async () => {
  assert.equal(service.adminToken, ADMIN_TOKEN);
  const post = (token: string) => fetch(`${service.origin}/hooks/email/ses/${token}`, { method: "POST", headers: { "content-type": "text/plain" }, body: "{}" });
  const wrong = await post("not-the-token");
  assert.equal(wrong.status, 404);
  // Past the token check: the body is read, and refused as no SNS notification.
  const right = await post(SNS_TOKEN);
  assert.equal(right.status, 400, "the endpoint answered as if SES_SNS_TOKEN were not set");
  assert.equal(await right.text(), "not an SNS notification");
});

test("the README's first examples run as printed: a contact into the demo list, activity 1 by client id, and an upload", async () => {
  const { KEY, CLIENT_ID } = exported();
  const added = await fetch(`${service.origin}/apiv2?type=contact&activity=add&apikey=${KEY}`, {
    method: "POST",
    body: new URLSearchParams({ data: '{"EMAIL":"ada@example.com","NAME":"Ada","AGE":36}', listid: "1" }),
  });
  assert.deepEqual(((await added.json()) as any).contact, { EMAIL: "ada@example.com", NAME: "Ada", AGE: 36 });
  const single = await fetch(`${service.origin}/v1/activity/singleactivity/${CLIENT_ID}`, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": "order-77-cart" },
    body: '{"activityid":"1","identity":"ada@example.com","activity_source":"web","activity_params":{"s^name":"Kettle","i^prid":1234,"f^price":29.5}}',
  });
  assert.deepEqual({ ...((await single.json()) as any), requestid: undefined }, { requestid: undefined, result: "Success", guid: "order-77-cart", duplicate: false });
  const upload = await fetch(`${service.origin}/v1/activity/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "x-netcore-asset-id": "web-1" },
    body: '[{"activity_name":"add_to_cart","identity":"ada@example.com","activity_source":"web","activity_params":{"name":"Kettle","prid":"1234","price":29.5}}]',
  });
  assert.equal(((await upload.json()) as any).recorded, 1);
  // One line per request, after the ready message; wrangler prints it just after answering.
  const deadline = Date.now() + 10_000;
  while (!/POST \/v1\/activity\/upload 200 OK/.test(service.output()) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  assert.match(service.output(), /Requests:[\s\S]*\d\d:\d\d:\d\d {2}POST \/apiv2 200 OK/);
  assert.match(service.output(), /\d\d:\d\d:\d\d {2}POST \/v1\/activity\/upload 200 OK/);
});

test("links in sent email point at the port the service runs on (PUBLIC_BASE_URL follows PORT)", async () => {
  const panel = exported().PANEL!;
  const journey = await admin("POST", `/panels/${panel}/journeys`, {
    name: "Thanks",
    trigger: { type: "activity", activity: "add_to_cart" },
    steps: [{ id: "mail", type: "email", subject: "Thanks", html: '<p><a href="https://shop.example.com/">Shop</a></p>', sender_name: "Shop", sender_email: "shop@example.com" }],
  });
  await admin("POST", `/panels/${panel}/journeys/${journey.id}/status`, { status: "running" });
  await fetch(`${service.origin}/v1/activity/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${exported().KEY}`, "content-type": "application/json" },
    body: JSON.stringify([{ activity_name: "add_to_cart", identity: "grace@example.com" }]),
  });
  const deadline = Date.now() + 60_000;
  let raw = "";
  while (!raw) {
    const { messages } = await admin("GET", `/panels/${panel}/outbox?limit=1`);
    if (messages.length) raw = (await admin("GET", `/panels/${panel}/outbox/${messages[0].id}`)).raw;
    else if (Date.now() > deadline) throw new Error("no journey email was sent");
    else await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const links = new Set(raw.match(/https?:\/\/127\.0\.0\.1:\d+/g));
  assert.deepEqual([...links], [service.origin]);
});

test("every sample call the panel's Settings screen shows works as shown on the demo panel", async () => {
  const { KEY, PANEL } = exported();
  const panel = await admin("GET", `/panels/${PANEL}`);
  const csvHost = createServer((_req, res) => res.writeHead(200, { "content-type": "text/csv" }).end("EMAIL,NAME\nsample@example.com,Sample\n"));
  await new Promise<void>((resolve) => csvHost.listen(0, "127.0.0.1", resolve));
  const csvUrl = `http://127.0.0.1:${(csvHost.address() as AddressInfo).port}/contacts.csv`;
  try {
    for (const call of sampleCalls(panel)) {
      const fill = (text: string) => text.replace(API_KEY, KEY!).replace(ACTIVITY_ID, "1").replace(CSV_URL, csvUrl);
      const response = await fetch(`${service.origin}${fill(call.path)}`, {
        method: call.method,
        headers: call.headers,
        body: call.form ? new URLSearchParams(Object.entries(call.form).map(([name, value]): [string, string] => [name, fill(value)])) : call.json !== undefined ? fill(call.json) : undefined,
      });
      const answer = (await response.json()) as Record<string, unknown>;
      assert.equal(response.status, 200, `${call.family}: ${JSON.stringify(answer)}`);
      assert.ok(answer.result === "Success" || answer.success === true, `${call.family}: ${JSON.stringify(answer)}`);
    }
  } finally {
    csvHost.close();
  }
});
