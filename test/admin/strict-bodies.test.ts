import { describe, expect, it } from "vitest";
import { admin, call, createPanel, panelSnapshot } from "../support/helpers";

type Schema = Record<string, any>;

/** Where a body schema lets a client send something unbounded or unknown, as `path: what`. */
function looseSpots(schema: Schema, path: string, out: string[]): string[] {
  for (const alternative of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])]) looseSpots(alternative, path, out);
  if (schema.type === "string" && schema.maxLength === undefined && schema.enum === undefined && schema.const === undefined) {
    out.push(`${path}: string without maxLength`);
  }
  if (schema.type === "array") {
    if (schema.maxItems === undefined) out.push(`${path}: array without maxItems`);
    if (schema.items) looseSpots(schema.items, `${path}[]`, out);
  }
  if (schema.type === "object") {
    for (const [name, member] of Object.entries<Schema>(schema.properties ?? {})) looseSpots(member, `${path}.${name}`, out);
    if (schema.properties && schema.additionalProperties !== false) out.push(`${path}: object that ignores unknown members`);
    if (schema.propertyNames) looseSpots(schema.propertyNames, `${path}{name}`, out);
    if (typeof schema.additionalProperties === "object") looseSpots(schema.additionalProperties, `${path}{}`, out);
  }
  return out;
}

describe("admin bodies are strict and bounded", () => {
  it("every admin route's body schema refuses unknown members and bounds every string and list", async () => {
    const document = (await (await call("/openapi.json")).json()) as Schema;
    const spots: string[] = [];
    for (const [path, methods] of Object.entries<Schema>(document.paths)) {
      if (!path.startsWith("/admin/v1")) continue;
      for (const [method, operation] of Object.entries<Schema>(methods)) {
        const body = operation.requestBody?.content?.["application/json"]?.schema;
        if (body) looseSpots(body, `${method.toUpperCase()} ${path} body`, spots);
      }
    }
    expect(spots).toEqual([]);
  });

  it("refuses unknown members, naming each", async () => {
    const created = await admin("POST", "/panels", { name: "Shop", colour: "blue", timezone: "UTC" });
    expect(created.status).toBe(400);
    expect(created.body.errors).toEqual([{ field: "colour", message: "is not an accepted member" }]);
    const panel = await createPanel();
    const before = await panelSnapshot(panel.id);
    const attribute = await admin("PUT", `/panels/${panel.id}/attributes/SHOE_SIZE`, { type: "integer", required: true });
    expect(attribute.status).toBe(400);
    expect(attribute.body.errors).toEqual([{ field: "required", message: "is not an accepted member" }]);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("bounds a user's email", async () => {
    const panel = await createPanel();
    const user = await admin("POST", `/panels/${panel.id}/users`, { email: `${"a".repeat(10_000)}@example.com` });
    expect(user.status).toBe(400);
    expect(user.body.errors).toEqual([{ field: "email", message: "must be at most 254 characters" }]);
  });
});

describe("every validation failure names the field and the reason", () => {
  it("a journey filter `in` with 5,000 values", async () => {
    const panel = await createPanel();
    const journey = await admin("POST", `/panels/${panel.id}/journeys`, {
      name: "Big in",
      trigger: { type: "activity", activity: "x" },
      filter: [{ attribute: "CITY", op: "in", value: Array.from({ length: 5000 }, (_, i) => `City ${i}`) }],
      steps: [{ id: "m", type: "sms", text: "Hi" }],
    });
    expect(journey.status).toBe(400);
    expect(journey.body.errors).toContainEqual({ field: "filter.0.value", message: "must hold at most 100 items" });
    expect(JSON.stringify(journey.body)).not.toMatch(/Invalid input/);
  });

  it("values of the wrong type say what was expected and what came", async () => {
    const panel = await createPanel();
    const patched = await admin("PATCH", `/panels/${panel.id}`, { api_mode: "yes" });
    expect(patched.status).toBe(400);
    expect(patched.body.errors).toEqual([{ field: "api_mode", message: "must be a boolean, not a string" }]);
  });
});
