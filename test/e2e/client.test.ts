// The typed client (clients/ts, issue 47): the README's example, which the README shows verbatim
// from clients/ts/examples/readme.ts, runs as the README says against a fresh `npm start`; and the
// document the client was generated from is the one the running service answers as /openapi.json.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";
import { root } from "./service.ts";
import { adminCall, service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

const example = readFileSync(join(root, "clients", "ts", "examples", "readme.ts"), "utf8");

test("the client's README shows its example file verbatim", () => {
  const readme = readFileSync(join(root, "clients", "ts", "README.md"), "utf8");
  assert.ok(readme.includes("```ts\n" + example + "```\n"), "clients/ts/README.md no longer shows clients/ts/examples/readme.ts as it is");
});

test("the README's example runs against npm start: a contact and a list by the envelope, a refusal, the admin API, an activity", async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [join(root, "clients", "ts", "examples", "readme.ts")], {
    cwd: root,
    env: {
      ...process.env,
      BASE_URL: service.origin,
      KEY: service.printed["API key"]!,
      CLIENT_ID: service.printed["client id"]!,
      PANEL: service.printed["demo panel"]!,
      ADMIN_TOKEN: service.adminToken,
    },
  });
  assert.match(stdout, /^contact added, request [0-9a-f]{32}$/m);
  assert.match(stdout, /^refused: 400 .*EMAIL/m);
  assert.match(stdout, /^activity recorded: Success$/m);
  assert.match(stdout, /^ada@example\.com: \{[^}]*NAME: 'Ada'/m);
  // What the example did, as the admin API shows it.
  const panel = service.printed["demo panel"]!;
  const contact = await adminCall("GET", `/panels/${panel}/contacts/ada@example.com`);
  assert.equal(contact.attributes.NAME, "Ada");
  const { lists } = await adminCall("GET", `/panels/${panel}/lists`);
  assert.ok(lists.some((list: { name: string }) => list.name === "Newsletter"), JSON.stringify(lists));
});

test("the committed clients/ts/openapi.json is the document the service answers, but for its address", async () => {
  const served = (await (await fetch(`${service.origin}/openapi.json`)).json()) as { servers: unknown };
  const committed = JSON.parse(readFileSync(join(root, "clients", "ts", "openapi.json"), "utf8")) as { servers: unknown };
  assert.deepEqual(served.servers, [{ url: service.origin }]);
  assert.deepEqual({ ...served, servers: committed.servers }, committed);
});
