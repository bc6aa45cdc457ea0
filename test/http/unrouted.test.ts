import { describe, expect, it } from "vitest";
import { destinationOf } from "../../src/http/fallback";
import { call } from "../support/helpers";

const at = (path: string, init?: RequestInit) => new Request(`https://panel.example${path}`, init);

describe("requests no route takes", () => {
  it("send only GET/HEAD navigations outside the API prefixes to the panel", () => {
    expect(destinationOf(at("/", { headers: { accept: "text/html" } }))).toBe("panel");
    expect(destinationOf(at("/panels/pnl_1/contacts", { headers: { "sec-fetch-mode": "navigate" } }))).toBe("panel");
    expect(destinationOf(at("/panels/pnl_1/contacts", { method: "HEAD", headers: { accept: "text/html" } }))).toBe("panel");
    expect(destinationOf(at("/reset-password", { headers: { accept: "text/html,application/json;q=0.9" } }))).toBe("panel");
  });

  it("answer mistyped API paths, whatever their case, as not found", () => {
    for (const path of ["/apiv3", "/APIV2", "/Apiv2/x", "/api/contacts", "/v2/activity/batch/c", "/V1/activity/x", "/health/x", "/ADMIN/v2", "/auth", "/t/z/1", "/hooks/x", "/s/"]) {
      expect(destinationOf(at(path, { headers: { accept: "text/html" } })), path).toBe("not_found");
    }
  });

  it("refuse other methods and JSON fetches outside the API prefixes", () => {
    expect(destinationOf(at("/x", { method: "POST" }))).toBe("method_not_allowed");
    expect(destinationOf(at("/x", { method: "PROPFIND" }))).toBe("method_not_allowed");
    expect(destinationOf(at("/x", { headers: { accept: "application/json" } }))).toBe("not_found");
    expect(destinationOf(at("/x", { headers: { accept: "*/*" } }))).toBe("not_found");
    expect(destinationOf(at("/x"))).toBe("not_found");
  });

  it("answer the envelope's Failed body, with Allow on a 405, and the admin shape under /admin", async () => {
    const mistyped = await call("/v2/activity/singleactivity/c", { method: "POST", body: "{}" });
    expect(mistyped.status).toBe(404);
    expect(await mistyped.json()).toMatchObject({ result: "Failed", message: 'version: unknown API version "v2"; the current version is apiv2' });
    const unknown = await call("/apiv2x/contacts", { method: "POST", body: "{}" });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ result: "Failed", message: "path: no route POST /apiv2x/contacts" });

    const posted = await call("/some/page", { method: "POST", body: "{}" });
    expect(posted.status).toBe(405);
    expect(posted.headers.get("allow")).toBe("GET, HEAD");
    expect(await posted.json()).toMatchObject({ result: "Failed" });

    const admin = await call("/admin/v2/panels");
    expect(admin.status).toBe(404);
    expect(await admin.json()).toMatchObject({ error: "path: no route GET /admin/v2/panels" });
  });
});
