import { describe, expect, it } from "vitest";
import { call } from "../support/helpers";

describe("health", () => {
  it("answers 200 with the region", async () => {
    const response = await call("/health");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok", region: "default" });
  });
});
