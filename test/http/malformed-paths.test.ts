import { describe, expect, it } from "vitest";
import { call, createPanel } from "../support/helpers";

// A malformed percent-escape in a path segment must be a clear 4xx, never a 500 (URIError).
describe("malformed escapes in path segments", () => {
  it.each([
    ["GET", "/apiv2/jobs/%E0%A4/errors.csv"],
    ["POST", "/v1/events/sms/%E0%A4%A"],
    ["POST", "/v1/activity/singleactivity/%E0%A4%A"],
    ["GET", "/admin/v1/panels/%E0%A4%A"],
  ])("%s %s", async (method, path) => {
    const panel = await createPanel();
    const response = await call(path.includes("/jobs/") ? `${path}?apikey=${panel.apiKey}` : path, {
      method,
      headers: { authorization: path.startsWith("/admin") ? "Bearer test-admin-token" : `Bearer ${panel.apiKey}`, "content-type": "application/json" },
      body: method === "POST" ? JSON.stringify({ msgid: "x", event: "delivered" }) : undefined,
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
  });
});
