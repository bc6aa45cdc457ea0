// Workers Static Assets serve the panel; every API prefix must still reach the Worker. The
// vitest pool does not serve assets, so this runs against the service started as `npm start`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

/** Each prefix listed in wrangler.toml's run_worker_first, with a path under it. */
const PREFIXES: [string, string][] = [
  ["/apiv2", "/apiv2"],
  ["/apiv2/*", "/apiv2/jobs/job_unknown/errors.csv"],
  ["/v1/*", "/v1/activity/singleactivity/unknown-client"],
  // CSV batch activity (CONTRACT 10): a multipart post from a CRM must not meet the asset server.
  ["/v1/*", "/v1/activity/batchactivity/unknown-client"],
  ["/admin/*", "/admin/v1/panels"],
  ["/t/*", "/t/u/not-a-token"],
  ["/hooks/*", "/hooks/email/ses/not-the-token"],
  ["/s/*", "/s/AAAAAAAAAAAA"],
  // Signup forms (issue 45): a site's plain <form> POST must reach the Worker.
  ["/f/*", "/f/frm_AAAAAAAAAAAAAAAA"],
  ["/health", "/health"],
  ["/openapi.json", "/openapi.json"],
  ["/auth/*", "/auth/v1/sign-in"],
];

for (const [prefix, path] of PREFIXES) {
  test(`POST ${path} (${prefix}) is answered by the Worker`, async () => {
    const response = await fetch(`${service.origin}${path}`, {
      method: "POST",
      headers: { accept: "text/html,application/json", "sec-fetch-mode": "navigate", "content-type": "application/json" },
      body: "{}",
    });
    const text = await response.text();
    // The asset server refuses a POST with a bare 405; a route that takes no POST (`/s/{code}`) answers the Worker's own, in JSON.
    if (response.status === 405) assert.match(text, /"result":"Failed".*"message":"method: /, `${path}: the asset server refused the method`);
    assert.ok(!text.includes('<div id="root">'), `${path}: answered with the panel's index.html`);
    // Every Worker answer under these prefixes is JSON or the unsubscribe page, never the app shell.
    assert.ok(response.headers.get("content-type"), `${path}: no content type`);
  });
}

test("the per-minute cron tick npm start fires reaches the Worker's scheduled handler, not the panel", async () => {
  // start.ts ticks GET /__scheduled (wrangler dev --test-scheduled) with fetch, which the
  // asset server would answer with index.html unless the path runs the Worker first.
  const response = await fetch(`${service.origin}/__scheduled?cron=${encodeURIComponent("* * * * *")}`, { headers: { "sec-fetch-mode": "navigate" } });
  const text = await response.text();
  assert.equal(response.status, 200);
  assert.ok(!text.includes('<div id="root">'), "answered with the panel's index.html: cron tasks never run under npm start");
  assert.match(text, /Ran scheduled event/);
});

test("a phone opening an SMS short link (GET /s/{code}, as a navigation) reaches the Worker, not the panel", async () => {
  const response = await fetch(`${service.origin}/s/AAAAAAAAAAAA`, { headers: { accept: "text/html", "sec-fetch-mode": "navigate" }, redirect: "manual" });
  const text = await response.text();
  assert.ok(!text.includes('<div id="root">'), "answered with the panel's index.html: SMS links would never redirect");
  assert.equal(response.status, 404);
  assert.equal(text, "This link is not valid.");
});

test("GET /health answers from the Worker", async () => {
  const response = await fetch(`${service.origin}/health`);
  assert.equal(response.status, 200);
  assert.equal(((await response.json()) as { status: string }).status, "ok");
});

test("/ serves the panel, and a deep link falls back to it", async () => {
  for (const path of ["/", "/panels/pnl_x/contacts", "/reset-password"]) {
    const response = await fetch(`${service.origin}${path}`, { headers: { accept: "text/html", "sec-fetch-mode": "navigate" } });
    assert.equal(response.status, 200, path);
    assert.match(response.headers.get("content-type") ?? "", /text\/html/);
    const html = await response.text();
    assert.ok(html.includes('<div id="root">'), `${path}: not the panel's index.html`);
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    assert.ok(script, "index.html names its script");
    const js = await fetch(`${service.origin}${script}`);
    assert.equal(js.status, 200);
    assert.match(js.headers.get("content-type") ?? "", /javascript/);
  }
});

test("a POST to a path outside the API prefixes is answered by the Worker with a JSON 405, not the asset server's empty one", async () => {
  for (const method of ["POST", "PROPFIND"]) {
    const response = await fetch(`${service.origin}/not-an-api-path`, { method, body: method === "POST" ? "{}" : undefined });
    assert.equal(response.status, 405, method);
    assert.equal(response.headers.get("allow"), "GET, HEAD");
    const body = (await response.json()) as { result: string; message: string };
    assert.equal(body.result, "Failed");
    assert.match(body.message, /^method: /);
  }
});

test("mistyped API paths get the JSON Failed body with 404, never the panel's HTML", async () => {
  const cases: [string, string][] = [
    ["GET", "/apiv3?type=contact&activity=add"],
    ["GET", "/APIV2?type=contact&activity=add"],
    ["POST", "/v2/activity/singleactivity/some-client"],
    ["POST", "/V1/activity/singleactivity/some-client"],
    ["GET", "/health/x"],
    ["GET", "/api/contacts"],
  ];
  for (const [method, path] of cases) {
    const response = await fetch(`${service.origin}${path}`, {
      method,
      headers: { accept: "text/html,application/json", "sec-fetch-mode": "navigate", "content-type": "application/json" },
      body: method === "POST" ? "{}" : undefined,
    });
    assert.equal(response.status, 404, `${method} ${path}`);
    const body = (await response.json()) as { result: string; message: string };
    assert.equal(body.result, "Failed", `${method} ${path}`);
  }
});

test("a fetch that asks for JSON under a panel route gets a JSON 404; a navigation there gets the panel", async () => {
  const asJson = await fetch(`${service.origin}/panels/pnl_x/contacts`, { headers: { accept: "application/json" } });
  assert.equal(asJson.status, 404);
  assert.equal(((await asJson.json()) as { result: string }).result, "Failed");
  const head = await fetch(`${service.origin}/panels/pnl_x/contacts`, { method: "HEAD", headers: { accept: "text/html" } });
  assert.equal(head.status, 200);
});
