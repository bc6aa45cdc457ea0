import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { defineActivity } from "../support/activity";
import { admin, call, createPanel, type TestPanel } from "../support/helpers";

// CORS on the public API from each panel's cors_origins (CONTRACT 8); never on the admin API.

const SHOP = "https://shop.example.com";
const OTHER = "https://evil.example.net";

let panel: TestPanel;

beforeEach(async () => {
  panel = await createPanel();
  await defineActivity(panel, "page_view", { url: "string" });
});

const allowOrigins = (p: TestPanel, cors_origins: string[]) => admin("PATCH", `/panels/${p.id}`, { cors_origins });

function preflight(path: string, origin: string, requestHeaders = "content-type") {
  return call(path, { method: "OPTIONS", headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": requestHeaders } });
}

describe("CORS", () => {
  it("none by default: the panel shows an empty list, and a browser call gets no CORS header", async () => {
    expect((await admin("GET", `/panels/${panel.id}`)).body.cors_origins).toEqual([]);
    const response = await call(`/apiv2?type=lists&activity=getall&apikey=${encodeURIComponent(panel.apiKey)}`, { headers: { origin: SHOP } });
    expect(response.status).toBe(200);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    expect((await preflight(`/apiv2?apikey=${encodeURIComponent(panel.apiKey)}`, SHOP)).status).toBe(403);
  });

  it("an allowed origin: the preflight answers 204 with the methods and headers, and calls carry Allow-Origin", async () => {
    const patched = await allowOrigins(panel, ["https://Shop.Example.com/"]);
    expect(patched.body.cors_origins).toEqual([SHOP]);
    const pre = await preflight(`/apiv2?type=contact&activity=add&apikey=${encodeURIComponent(panel.apiKey)}`, SHOP, "content-type, x-requested-with");
    expect(pre.status).toBe(204);
    expect(Object.fromEntries([...pre.headers].filter(([name]) => name.startsWith("access-control-")))).toEqual({
      "access-control-allow-origin": SHOP,
      "access-control-allow-methods": "GET, POST, OPTIONS",
      "access-control-allow-headers": "content-type, x-requested-with",
      "access-control-max-age": "600",
    });
    const get = await call(`/apiv2?type=lists&activity=getall&apikey=${encodeURIComponent(panel.apiKey)}`, { headers: { origin: SHOP } });
    expect(get.headers.get("access-control-allow-origin")).toBe(SHOP);
    expect(get.headers.get("vary")).toBe("Origin");
    // The key in a form body, as a page's fetch() may send it.
    const form = await call("/apiv2", {
      method: "POST",
      headers: { origin: SHOP, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ type: "lists", activity: "add", apikey: panel.apiKey, listname: "From the browser" }).toString(),
    });
    expect(form.status).toBe(200);
    expect(form.headers.get("access-control-allow-origin")).toBe(SHOP);
    // A failed call is readable too, so the page can show why.
    const failed = await call(`/apiv2?type=contact&activity=add&apikey=${encodeURIComponent(panel.apiKey)}`, { headers: { origin: SHOP } });
    expect(failed.status).toBe(400);
    expect(failed.headers.get("access-control-allow-origin")).toBe(SHOP);
  });

  it("another origin gets no Allow-Origin, and its preflight is refused", async () => {
    await allowOrigins(panel, [SHOP]);
    const pre = await preflight(`/v1/activity/singleactivity/${panel.clientId}`, OTHER);
    expect(pre.status).toBe(403);
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    const posted = await call(`/v1/activity/singleactivity/${panel.clientId}`, {
      method: "POST",
      headers: { origin: OTHER, "content-type": "application/json" },
      body: JSON.stringify({ activityid: 1, uniqueid: "v1" }),
    });
    expect(posted.status).toBe(200);
    expect(posted.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("* allows any origin, answered as *", async () => {
    await allowOrigins(panel, ["*"]);
    const pre = await preflight(`/v1/activity/singleactivity/${panel.clientId}`, OTHER);
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("*");
    expect(pre.headers.get("access-control-allow-methods")).toBe("POST, OPTIONS");
    const posted = await call(`/v1/activity/singleactivity/${panel.clientId}`, {
      method: "POST",
      headers: { origin: OTHER, "content-type": "application/json" },
      body: JSON.stringify({ activityid: 1, uniqueid: "v1" }),
    });
    expect(posted.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("the upload endpoint with a Bearer key: the preflight asks whether any panel allows the origin, the call answers for its own", async () => {
    await allowOrigins(panel, [SHOP]);
    // Panels of earlier cases in this file that allow any origin would allow every preflight here.
    await env.DB.prepare("UPDATE panels SET cors_origins = '[]' WHERE id <> ?").bind(panel.id).run();
    const other = await createPanel();
    const pre = await preflight("/v1/activity/upload", SHOP, "authorization, content-type");
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-headers")).toBe("authorization, content-type");
    expect((await preflight("/v1/activity/upload", "https://nobody-allows.example.org")).status).toBe(403);
    const upload = (key: string) =>
      call("/v1/activity/upload", {
        method: "POST",
        headers: { origin: SHOP, authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify([{ activity_name: "page_view", uniqueid: "v1" }]),
      });
    expect((await upload(panel.apiKey)).headers.get("access-control-allow-origin")).toBe(SHOP);
    expect((await upload(other.apiKey)).headers.get("access-control-allow-origin")).toBeNull();
  });

  it("a call whose key names no panel (wrong, rotated) answers its 401 readably to an origin its preflight allowed", async () => {
    await allowOrigins(panel, [SHOP]);
    const wrong = `${panel.apiKey}x`;
    expect((await preflight(`/apiv2?type=lists&activity=getall&apikey=${encodeURIComponent(wrong)}`, SHOP)).status).toBe(204);
    const refused = await call(`/apiv2?type=lists&activity=getall&apikey=${encodeURIComponent(wrong)}`, { headers: { origin: SHOP } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe(SHOP);
    expect(await refused.json()).toMatchObject({ result: "Failed", message: "The caller could not be authenticated" });
    const upload = await call("/v1/activity/upload", {
      method: "POST",
      headers: { origin: SHOP, authorization: "Bearer mk_rotated", "content-type": "application/json" },
      body: JSON.stringify([{ activity_name: "page_view", uniqueid: "v1" }]),
    });
    expect(upload.status).toBe(401);
    expect(upload.headers.get("access-control-allow-origin")).toBe(SHOP);
    // A key of a panel that does not list the origin still gets none.
    const other = await createPanel();
    const theirs = await call(`/apiv2?type=lists&activity=getall&apikey=${encodeURIComponent(other.apiKey)}`, { headers: { origin: SHOP } });
    expect(theirs.status).toBe(200);
    expect(theirs.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("channel events by client id follow the panel's list", async () => {
    await allowOrigins(panel, [SHOP]);
    const pre = await preflight(`/v1/events/bpn/${panel.clientId}`, SHOP);
    expect(pre.status).toBe(204);
    const reported = await call(`/v1/events/bpn/${panel.clientId}`, {
      method: "POST",
      headers: { origin: SHOP, "content-type": "application/json" },
      body: JSON.stringify({ msgid: "none", event: "click" }),
    });
    expect(reported.status).toBe(404);
    expect(reported.headers.get("access-control-allow-origin")).toBe(SHOP);
  });

  it("the CSV batch by client id follows its own panel's list, with or without a key", async () => {
    await allowOrigins(panel, [SHOP]);
    const other = await createPanel();
    await allowOrigins(other, [OTHER]);
    const path = `/v1/activity/batchactivity/${panel.clientId}`;
    expect((await preflight(path, SHOP)).status).toBe(204);
    // Another panel allowing the origin does not open this panel's path to it.
    const foreign = await preflight(path, OTHER);
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
    const form = new FormData();
    form.set("data", new Blob(["activity_name,identity,url\npage_view,v1@example.com,/home\n"], { type: "text/csv" }), "events.csv");
    const posted = await call(path, { method: "POST", headers: { origin: SHOP }, body: form });
    expect(posted.status).toBe(200);
    expect((await posted.json()) as Record<string, unknown>).toMatchObject({ result: "Success", recorded: 1 });
    expect(posted.headers.get("access-control-allow-origin")).toBe(SHOP);
  });

  it("the admin API never sends CORS headers, whatever a panel allows", async () => {
    await allowOrigins(panel, ["*"]);
    const pre = await call("/admin/v1/panels", { method: "OPTIONS", headers: { origin: SHOP, "access-control-request-method": "GET" } });
    expect(pre.headers.get("access-control-allow-origin")).toBeNull();
    const read = await call(`/admin/v1/panels/${panel.id}`, { headers: { origin: SHOP, authorization: "Bearer test-admin-token" } });
    expect(read.status).toBe(200);
    expect([...read.headers.keys()].filter((name) => name.startsWith("access-control-"))).toEqual([]);
  });

  it("refuses a list that holds something other than origins, changing nothing", async () => {
    const bad = await allowOrigins(panel, ["https://shop.example.com/cart"]);
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe("cors_origins.0");
    expect((await admin("GET", `/panels/${panel.id}`)).body.cors_origins).toEqual([]);
  });
});
