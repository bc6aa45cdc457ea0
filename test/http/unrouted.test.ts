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
    for (const path of ["/apiv3", "/APIV2", "/Apiv2/x", "/api/contacts", "/v2/activity/batch/c", "/V1/activity/x", "/health/x", "/ADMIN/v2", "/auth", "/hooks/x"]) {
      expect(destinationOf(at(path, { headers: { accept: "text/html" } })), path).toBe("not_found");
    }
  });

  it("send a browser's navigation to a visitor's link no route takes to the page of a link not valid, a script's fetch to not found", () => {
    for (const path of ["/t/z/1", "/s/", "/F/x/y/z"]) {
      expect(destinationOf(at(path, { headers: { accept: "text/html" } })), path).toBe("invalid_link");
      expect(destinationOf(at(path, { headers: { accept: "*/*" } })), path).toBe("not_found");
      expect(destinationOf(at(path, { method: "POST", headers: { accept: "text/html" } })), path).toBe("not_found");
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

describe("visitors' links no route takes", () => {
  const browser = { accept: "text/html,application/xhtml+xml" };

  it("show a browser the page of a link that is not valid, where a mail client cut the link short or ran it on", async () => {
    for (const path of ["/t/u/abc/", "/t/u/", "/t/p/abc/def", "/t/c/", "/s/", "/s/abc/x", "/f/", "/f/form/confirm/"]) {
      const answer = await call(path, { headers: browser });
      expect(answer.status, path).toBe(404);
      expect(answer.headers.get("content-type"), path).toContain("text/html");
      expect(await answer.text(), path).toContain("This link is not valid");
    }
  });

  it("still answer a script or a mistyped API path with the JSON 404", async () => {
    const script = await call("/t/u/", { headers: { accept: "application/json" } });
    expect(script.status).toBe(404);
    expect(await script.json()).toMatchObject({ result: "Failed", message: "path: no route GET /t/u/" });
    const hook = await call("/hooks/x", { headers: browser });
    expect(await hook.json()).toMatchObject({ result: "Failed" });
  });

  it("refuse a method a link does not take with 405 and the methods it does", async () => {
    const cases: Array<[string, string, string]> = [
      ["/s/abc", "POST", "GET, HEAD"],
      ["/s/abc", "PUT", "GET, HEAD"],
      ["/t/o/abc", "POST", "GET, HEAD"],
      ["/t/c/abc", "DELETE", "GET, HEAD"],
      ["/t/u/abc", "PUT", "GET, HEAD, POST"],
      ["/t/p/abc", "PATCH", "GET, HEAD, POST"],
    ];
    for (const [path, method, allow] of cases) {
      const answer = await call(path, { method, body: method === "DELETE" ? undefined : "x" });
      expect(answer.status, `${method} ${path}`).toBe(405);
      expect(answer.headers.get("allow"), `${method} ${path}`).toBe(allow);
      expect(await answer.json()).toMatchObject({ result: "Failed" });
    }
  });
});
