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

  it("names the key and the reason of every problem", () => {
    const { problems } = check({ "i^name": 1, "i^prid": 1.5, "f^price": "3", "x^prid": 1, prid: 1, "s^size": "L" });
    expect(problems).toEqual([
      { field: "activity_params.i^name", message: "parameter name is a string: use the prefix s^" },
      { field: "activity_params.i^prid", message: "must be an integer, not a float" },
      { field: "activity_params.f^price", message: "must be a number, not a string" },
      { field: "activity_params.x^prid", message: expect.stringContaining("type prefix") },
      { field: "activity_params.prid", message: expect.stringContaining("type prefix") },
      { field: "activity_params.s^size", message: 'unknown parameter "size": activity "add_to_cart" defines name, prid, price' },
    ]);
  });
});

describe("prepareActivityEvent", () => {
  const now = Date.UTC(2024, 0, 1);

  it("builds the event: identity normalised, cts in the panel's zone, source lower-cased", () => {
    const prepared = prepareActivityEvent(
      { activityid: 7, identity: " Ada@Example.com", uniqueid: 99, cts: "240131180500", activity_source: "Web", activity_params: { "i^prid": 1 } },
      cart,
      panel,
      now,
    );
    expect(prepared).toEqual({
      ok: true,
      event: {
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
    expect(prepared).toEqual({ ok: false, status: 400, problems: [{ field: "identity", message: expect.stringContaining("either identity") }] });
  });

  it("an undefined activity is 404 on activityid alone", () => {
    expect(prepareActivityEvent({ activityid: 8, identity: "a@example.com", cts: "bad" }, undefined, panel, now)).toMatchObject({
      ok: false,
      status: 404,
      problems: [{ field: "activityid" }],
    });
  });
});
