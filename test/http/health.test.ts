import { describe, expect, it } from "vitest";
import { call } from "../support/helpers";

describe("health", () => {
  it("answers 200 with the region", async () => {
    const response = await call("/health");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok", region: "default" });
  });

  it("answers HEAD as GET, as uptime monitors probe it; so do the other read-only pages", async () => {
    for (const path of ["/health", "/health/deep", "/openapi.json"]) {
      const head = await call(path, { method: "HEAD" });
      expect(head.status, path).toBe(200);
      expect(head.headers.get("content-type"), path).toContain("application/json");
      await head.body?.cancel();
    }
    // A path no route has stays a 404; the envelope does not read HEAD as GET.
    expect((await call("/health/nothing", { method: "HEAD" })).status).toBe(404);
    expect((await call("/apiv2?type=lists&activity=getall&apikey=x", { method: "HEAD" })).status).toBe(405);
  });
});
