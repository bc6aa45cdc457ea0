// Security headers of the panel as a browser gets it (issue 44): its pages pass through the
// Worker, its hashed files are answered by the asset server with the `_headers` file the build
// writes. The vitest pool serves no assets, so this runs against the service `npm start` starts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { service, serviceForThisFile } from "./suite.ts";

serviceForThisFile();

const NAVIGATION = { accept: "text/html", "sec-fetch-mode": "navigate" };

function directives(csp: string | null): Map<string, string> {
  assert.ok(csp, "no Content-Security-Policy");
  return new Map(csp.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name!, values.join(" ")]));
}

function assertNotFramedOrSniffed(response: Response, what: string): Map<string, string> {
  assert.equal(response.headers.get("x-content-type-options"), "nosniff", what);
  assert.equal(response.headers.get("x-frame-options"), "DENY", what);
  const csp = directives(response.headers.get("content-security-policy"));
  assert.equal(csp.get("frame-ancestors"), "'none'", what);
  return csp;
}

test("the panel's pages: a CSP that runs only the panel's own script files, never framed, nosniff, a referrer policy", async () => {
  for (const path of ["/", "/panels/pnl_x/contacts", "/reset-password", "/assets/no-such-file"]) {
    const response = await fetch(`${service.origin}${path}`, { headers: NAVIGATION });
    assert.equal(response.status, 200, path);
    const html = await response.text();
    assert.ok(html.includes('<div id="root">'), `${path}: not the panel`);
    const csp = assertNotFramedOrSniffed(response, path);
    assert.equal(csp.get("script-src"), "'self'", `${path}: script-src`);
    assert.equal(csp.get("object-src"), "'none'", path);
    assert.equal(response.headers.get("referrer-policy"), "strict-origin-when-cross-origin", path);
    // The policy holds because the page has no inline script: each <script> names its file.
    for (const tag of html.match(/<script\b[^>]*>[\s\S]*?<\/script>/gi) ?? []) {
      assert.match(tag, /\ssrc="\/assets\/[^"]+"[^>]*><\/script>$/, `${path}: inline script ${tag}`);
    }
  }
});

test("the panel's hashed files are cached for a year as immutable, and never sniffed", async () => {
  const html = await (await fetch(`${service.origin}/`, { headers: NAVIGATION })).text();
  const files = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]!);
  assert.ok(files.some((f) => f.endsWith(".js")) && files.some((f) => f.endsWith(".css")), `index.html names its files: ${files}`);
  for (const file of files) {
    const response = await fetch(`${service.origin}${file}`);
    await response.arrayBuffer();
    assert.equal(response.status, 200, file);
    assert.equal(response.headers.get("cache-control"), "public, max-age=31536000, immutable", file);
    assert.equal(response.headers.get("x-content-type-options"), "nosniff", file);
  }
  // index.html itself is revalidated: a new build's file names reach the browser at once.
  const index = await fetch(`${service.origin}/`, { headers: NAVIGATION });
  await index.arrayBuffer();
  assert.doesNotMatch(index.headers.get("cache-control") ?? "", /immutable/);
});

test("the JSON APIs and the pages of email links are never framed or sniffed either", async () => {
  for (const path of ["/health", "/admin/v1/panels", "/apiv2?type=lists&activity=getall", "/openapi.json"]) {
    const response = await fetch(`${service.origin}${path}`);
    await response.arrayBuffer();
    assert.equal(assertNotFramedOrSniffed(response, path).get("default-src"), "'none'", path);
  }
  const link = await fetch(`${service.origin}/t/u/not-a-token`, { headers: NAVIGATION });
  assert.match(link.headers.get("content-type") ?? "", /text\/html/);
  await link.arrayBuffer();
  const csp = assertNotFramedOrSniffed(link, "/t/u");
  assert.equal(csp.get("default-src"), "'none'");
  assert.equal(link.headers.get("referrer-policy"), "no-referrer");
});
