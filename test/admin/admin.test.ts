import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ADMIN_ROUTES } from "../../src/admin";
import { admin, call, createPanel } from "../support/helpers";

describe("admin authentication", () => {
  it("requires the bearer token", async () => {
    const missing = await call("/admin/v1/panels");
    expect(missing.status).toBe(401);
    // CONTRACT 4: `{"error","errors"}` on every failure, `errors` empty when no field is at fault.
    expect(await missing.json()).toEqual({ error: expect.any(String), errors: [] });
    const wrong = await call("/admin/v1/panels", { headers: { authorization: "Bearer nope" } });
    expect(wrong.status).toBe(401);
  });
});

describe("panels", () => {
  it("creates a panel with the defaults and the default attributes", async () => {
    const created = await admin("POST", "/panels", { name: "Shop" });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      id: expect.any(String),
      name: "Shop",
      primary_key: "EMAIL",
      timezone: "UTC",
      region: "default",
      api_mode: false,
      client_id: expect.any(String),
    });
    const attributes = await admin("GET", `/panels/${created.body.id}/attributes`);
    expect(attributes.body.attributes).toEqual([
      { name: "AGE", type: "integer" },
      { name: "CITY", type: "string" },
      { name: "COUNTRY", type: "string" },
      { name: "EMAIL", type: "string" },
      { name: "FIRSTNAME", type: "string" },
      { name: "LASTNAME", type: "string" },
      { name: "MOBILE", type: "string" },
      { name: "NAME", type: "string" },
      { name: "STATE", type: "string" },
    ]);
  });

  it("reads and patches a panel", async () => {
    const created = await admin("POST", "/panels", { name: "P", timezone: "Asia/Kolkata", primary_key: "mobile" });
    expect(created.body).toMatchObject({ timezone: "Asia/Kolkata", primary_key: "MOBILE" });
    const patched = await admin("PATCH", `/panels/${created.body.id}`, { api_mode: true, name: "Q" });
    expect(patched.body).toMatchObject({ api_mode: true, name: "Q", timezone: "Asia/Kolkata" });
    expect((await admin("GET", `/panels/${created.body.id}`)).body).toMatchObject({ name: "Q", api_mode: true });
  });

  it.each([
    ["no name", {}, "name"],
    ["an empty name", { name: "" }, "name"],
    ["an unknown time zone", { name: "P", timezone: "Mars/Olympus" }, "timezone"],
    ["a bad primary key name", { name: "P", primary_key: "1abc" }, "primary_key"],
  ])("refuses %s", async (_label, body, field) => {
    const before = (await admin("GET", "/panels")).body.panels.length;
    const created = await admin("POST", "/panels", body);
    expect(created.status).toBe(400);
    expect(created.body.errors[0].field).toBe(field);
    expect((await admin("GET", "/panels")).body.panels.length).toBe(before);
  });

  it("refuses unknown patch members and non-JSON bodies", async () => {
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { primary_key: "MOBILE" })).status).toBe(400);
    const raw = await call(`/admin/v1/panels/${panel.id}`, {
      method: "PATCH",
      headers: { authorization: "Bearer test-admin-token", "content-type": "application/json" },
      body: "{nope",
    });
    expect(raw.status).toBe(400);
  });

  it("404 for an unknown panel or route", async () => {
    expect((await admin("GET", "/panels/pnl_nope")).status).toBe(404);
    expect((await admin("GET", "/panels/pnl_nope/attributes")).status).toBe(404);
    expect((await admin("GET", "/nothing-here")).status).toBe(404);
  });

  it("every route of a panel answers an unknown panel with the same 404, once its input is valid", async () => {
    const panelRoutes = ADMIN_ROUTES.filter((route) => route.path.startsWith("/panels/:panel") && !route.body);
    expect(panelRoutes.length).toBeGreaterThan(20);
    for (const route of panelRoutes) {
      const path = route.path.replace(":panel", "pnl_nope").replace(/:\w+/g, "x");
      const answer = await admin(route.method, path);
      expect([route.method, path, answer.status, answer.body]).toEqual([route.method, path, 404, { error: 'No panel with id "pnl_nope"', errors: [] }]);
    }
    const invalid = await admin("POST", "/panels/pnl_nope/users", { email: "nope" });
    expect([invalid.status, invalid.body.errors[0].field]).toEqual([400, "email"]);
    expect(await admin("POST", "/panels/pnl_nope/users", { email: "a@example.com" })).toEqual({ status: 404, body: { error: 'No panel with id "pnl_nope"', errors: [] } });
    expect(await admin("PATCH", "/panels/pnl_nope", { name: "Q" })).toEqual({ status: 404, body: { error: 'No panel with id "pnl_nope"', errors: [] } });
  });
});

describe("users and keys", () => {
  it("shows the key only when created or rotated, stored as a hash", async () => {
    const panel = await createPanel();
    const user = await admin("GET", `/panels/${panel.id}/users/${panel.userId}`);
    expect(user.status).toBe(200);
    expect(JSON.stringify(user.body)).not.toContain(panel.apiKey);
    const users = await admin("GET", `/panels/${panel.id}/users`);
    expect(JSON.stringify(users.body)).not.toContain(panel.apiKey);
    const stored = await env.DB.prepare("SELECT api_key_hash FROM users WHERE id = ?").bind(panel.userId).first<{ api_key_hash: string }>();
    expect(stored!.api_key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored!.api_key_hash).not.toContain(panel.apiKey);
  });

  it("refuses a duplicate or invalid email", async () => {
    const panel = await createPanel();
    const first = await admin("POST", `/panels/${panel.id}/users`, { email: "x@example.com" });
    expect(first.status).toBe(201);
    expect((await admin("POST", `/panels/${panel.id}/users`, { email: "X@example.com" })).status).toBe(409);
    expect((await admin("POST", `/panels/${panel.id}/users`, { email: "nope" })).status).toBe(400);
  });

  it("cannot rotate another panel's user", async () => {
    const mine = await createPanel();
    const theirs = await createPanel();
    expect((await admin("POST", `/panels/${mine.id}/users/${theirs.userId}/api-key`)).status).toBe(404);
  });
});

describe("attributes", () => {
  it("adds an attribute upper-cased; repeating is harmless; retyping is refused", async () => {
    const panel = await createPanel();
    expect((await admin("PUT", `/panels/${panel.id}/attributes/loyalty_points`, { type: "integer" })).body).toEqual({
      name: "LOYALTY_POINTS",
      type: "integer",
    });
    expect((await admin("PUT", `/panels/${panel.id}/attributes/LOYALTY_POINTS`, { type: "integer" })).status).toBe(200);
    expect((await admin("PUT", `/panels/${panel.id}/attributes/LOYALTY_POINTS`, { type: "string" })).status).toBe(409);
  });

  it("refuses a bad name or type", async () => {
    const panel = await createPanel();
    expect((await admin("PUT", `/panels/${panel.id}/attributes/9lives`, { type: "string" })).status).toBe(400);
    expect((await admin("PUT", `/panels/${panel.id}/attributes/bad%20name`, { type: "string" })).status).toBe(400);
    expect((await admin("PUT", `/panels/${panel.id}/attributes/%`, { type: "string" })).status).toBe(400);
    const badType = await admin("PUT", `/panels/${panel.id}/attributes/OK`, { type: "decimal" });
    expect(badType.status).toBe(400);
    expect(badType.body.errors[0].field).toBe("type");
  });
});
