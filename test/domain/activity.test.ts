import { describe, expect, it } from "vitest";
import { checkActivityParams, prepareActivityEvent, type ActivityDefinition } from "../../src/domain/activity";
import type { FieldProblem } from "../../src/domain/problems";

const cart: ActivityDefinition = { id: 7, name: "add_to_cart", params: { name: "string", prid: "integer", price: "float" }, createdAt: 0 };
const panel = { primaryKey: "EMAIL", primaryKeyType: "string" as const, timezone: "Asia/Kolkata" };

function check(raw: Parameters<typeof checkActivityParams>[1]) {
  const problems: FieldProblem[] = [];
  const values = checkActivityParams(cart, raw, problems);
  return { values, problems };
}

describe("activity params", () => {
  it("reads typed keys into bare names", () => {
    expect(check({ "s^name": "Kettle", "i^prid": 12, "f^price": 3 })).toEqual({ values: { name: "Kettle", prid: 12, price: 3 }, problems: [] });
    expect(check([{ "S^name": "Upper-case prefix" }]).values).toEqual({ name: "Upper-case prefix" });
    expect(check(undefined)).toEqual({ values: {}, problems: [] });
  });

  it("reads unprefixed keys by the definition's type, numbers given as decimal text included", () => {
    expect(check({ name: "Kettle", prid: "22", price: "12.50" })).toEqual({ values: { name: "Kettle", prid: 22, price: 12.5 }, problems: [] });
    expect(check({ name: 1234, "f^price": "-3" })).toEqual({ values: { name: "1234", price: -3 }, problems: [] });
  });

  it("reads a defined name in another case as the definition spells it (as attributes and filters match names)", () => {
    expect(check({ Name: "Kettle", PRID: 12, "f^Price": "3" })).toEqual({ values: { name: "Kettle", prid: 12, price: 3 }, problems: [] });
    expect(check({ price: 1, PRICE: 2 }).problems).toEqual([{ field: "activity_params.PRICE", message: "parameter price is given more than once" }]);
    // Two parameters that differ only in case: another case names neither.
    const both: ActivityDefinition = { ...cart, params: { size: "string", Size: "integer" } };
    const problems: FieldProblem[] = [];
    expect(checkActivityParams(both, { size: "L", Size: 2, SIZE: "x" }, problems)).toEqual({ size: "L", Size: 2 });
    expect(problems).toEqual([{ field: "activity_params.SIZE", message: 'unknown parameter "SIZE": activity "add_to_cart" defines size, Size' }]);
    // An array parameter's item members are read by the same rule.
    const order: ActivityDefinition = { ...cart, params: { items: { type: "array", of: { prid: "integer", name: "string" } } } };
    const itemProblems: FieldProblem[] = [];
    expect(checkActivityParams(order, { Items: [{ PRID: "12", Name: "Kettle" }] }, itemProblems)).toEqual({ items: [{ prid: 12, name: "Kettle" }] });
    expect(itemProblems).toEqual([]);
  });

  it("names the key and the reason of every problem", () => {
    const { problems } = check({ "i^name": 1, "i^prid": 1.5, "f^price": "3 rupees", "x^prid": 1, prid: 1, "s^size": "L", size: 2 });
    expect(problems).toEqual([
      { field: "activity_params.i^name", message: "parameter name is a string: use the prefix s^" },
      { field: "activity_params.i^prid", message: "must be an integer, not a float" },
      { field: "activity_params.f^price", message: 'must be a number, not "3 rupees"' },
      { field: "activity_params.x^prid", message: expect.stringContaining('unknown parameter "x^prid"') },
      { field: "activity_params.prid", message: "parameter prid is given more than once" },
      { field: "activity_params.s^size", message: 'unknown parameter "size": activity "add_to_cart" defines name, prid, price' },
      { field: "activity_params.size", message: 'unknown parameter "size": activity "add_to_cart" defines name, prid, price' },
    ]);
    expect(check({ prid: "12.5" }).problems).toEqual([{ field: "activity_params.prid", message: 'must be an integer, not "12.5"' }]);
    // CONTRACT 10: "" for a number parameter is absent, and an integral decimal is an integer.
    expect(check({ prid: "", price: " " })).toEqual({ values: {}, problems: [] });
    expect(check({ prid: "34.0", name: "" })).toEqual({ values: { prid: 34, name: "" }, problems: [] });
  });
});

describe("prepareActivityEvent", () => {
  const now = Date.UTC(2024, 1, 1);

  it("builds the event: identity normalised, cts in the panel's zone, source lower-cased", () => {
    const prepared = prepareActivityEvent(
      { activityid: 7, identity: " Ada@Example.com", uniqueid: 99, cts: "240131180500", activity_source: "Web", activity_params: { "i^prid": 1 } },
      cart,
      panel,
      now,
    );
    expect(prepared).toEqual({
      ok: true,
      value: {
        channel: "custom_activity",
        name: "add_to_cart",
        activityId: 7,
        identity: "ada@example.com",
        uniqueid: "99",
        source: "web",
        occurredAt: Date.UTC(2024, 0, 31, 12, 35),
        params: { prid: 1 },
      },
    });
  });

  it("treats null and empty text as absent, and needs identity or uniqueid", () => {
    const prepared = prepareActivityEvent({ activityid: 7, identity: null, uniqueid: "", cts: "", timestamp: null }, cart, panel, now);
    expect(prepared).toEqual({ ok: false, problem: { kind: "invalid", fields: [{ field: "identity", message: expect.stringContaining("either identity") }] } });
  });

  it("reads every source clients send (CONTRACT 10): web and app in any case, any other text (custom included) exactly as sent", () => {
    const source = (activity_source: string) => {
      const prepared = prepareActivityEvent({ activityid: 7, identity: "a@example.com", activity_source }, cart, panel, now);
      return prepared.ok ? prepared.value.source : prepared.problem.fields[0]!.message;
    };
    expect(["web", "WEB", " App ", "custom", "Custom", "CUSTOM", "CUS", "offline", "Store", "POS", " CRM "].map(source)).toEqual(["web", "web", "app", "custom", "Custom", "CUSTOM", "CUS", "offline", "Store", "POS", " CRM "]);
    expect(source("x".repeat(32))).toBe("x".repeat(32));
    expect(source("x".repeat(33))).toBe("must be at most 32 characters");
  });

  it("reads timestamp as ISO or epoch seconds or milliseconds, and refuses a time more than 24 hours ahead", () => {
    const at = (input: { cts?: string; timestamp?: string | number }) => {
      const prepared = prepareActivityEvent({ activityid: 7, identity: "a@example.com", ...input }, cart, panel, now);
      return prepared.ok ? new Date(prepared.value.occurredAt).toISOString() : `${prepared.problem.fields[0]!.field}: ${prepared.problem.fields[0]!.message}`;
    };
    expect(at({ timestamp: "2024-01-13T20:30:28+05:30" })).toBe("2024-01-13T15:00:28.000Z");
    expect(at({ timestamp: 1705158028 })).toBe("2024-01-13T15:00:28.000Z");
    expect(at({ timestamp: "1705158028123" })).toBe("2024-01-13T15:00:28.123Z");
    expect(at({ timestamp: now / 1000 + 23 * 3600 })).toBe(new Date(now + 23 * 3_600_000).toISOString());
    expect(at({ timestamp: now / 1000 + 25 * 3600 })).toMatch(/^timestamp: is more than 24 hours ahead of now/);
    // DDMMYYhhmmss sent as cts: 13 January 2030, refused instead of stored in the future.
    expect(at({ cts: "300124180500" })).toBe("cts: is more than 24 hours ahead of now: it reads as 2030-01-24T12:35:00.000Z; an event time says when something happened");
    expect(at({ timestamp: "20240113" })).toMatch(/^timestamp: must be an ISO 8601 date-time or epoch seconds or milliseconds/);
  });

  it("keeps asset_id, trimmed", () => {
    const prepared = prepareActivityEvent({ activity_name: "ADD_TO_CART", identity: "a@example.com", asset_id: " web-1 " }, cart, panel, now);
    expect(prepared).toMatchObject({ ok: true, value: { assetId: "web-1", activityId: 7 } });
  });

  it("an undefined activity is 404 on the field that named it", () => {
    expect(prepareActivityEvent({ activity_name: "wishlist", identity: "a@example.com" }, undefined, panel, now)).toEqual({
      ok: false,
      problem: { kind: "not_found", fields: [{ field: "activity_name", message: 'no activity named "wishlist" is defined in this panel' }] },
    });
  });

  it("an undefined activity is 404 on activityid alone", () => {
    expect(prepareActivityEvent({ activityid: 8, identity: "a@example.com", cts: "bad" }, undefined, panel, now)).toMatchObject({
      ok: false,
      problem: { kind: "not_found", fields: [{ field: "activityid" }] },
    });
  });
});
