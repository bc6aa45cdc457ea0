import { describe, expect, it } from "vitest";
import { admin, createPanel } from "../support/helpers";

describe("admin: activity definitions", () => {
  it("defines an activity with typed params and reads it back, alone and in the list", async () => {
    const panel = await createPanel();
    const created = await admin("POST", `/panels/${panel.id}/activities`, {
      name: "add_to_cart",
      params: { name: "string", prid: "integer", price: "float", prqt: "integer" },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      activityid: expect.stringMatching(/^\d+$/),
      name: "add_to_cart",
      params: { name: "string", prid: "integer", price: "float", prqt: "integer" },
    });
    const read = await admin("GET", `/panels/${panel.id}/activities/${created.body.activityid}`);
    expect(read.body).toEqual(created.body);
    const noParams = await admin("POST", `/panels/${panel.id}/activities`, { name: "page_view" });
    expect(noParams.body.params).toEqual({});
    const list = await admin("GET", `/panels/${panel.id}/activities`);
    expect(list.body.activities.map((a: any) => a.name)).toEqual(["add_to_cart", "page_view"]);
  });

  it("numbers activities within each panel from 1", async () => {
    const first = await createPanel();
    const second = await createPanel();
    const ids = async (panelId: string, names: string[]) => {
      const created: string[] = [];
      for (const name of names) created.push((await admin("POST", `/panels/${panelId}/activities`, { name })).body.activityid);
      return created;
    };
    expect(await ids(first.id, ["view", "cart"])).toEqual(["1", "2"]);
    expect(await ids(second.id, ["view"])).toEqual(["1"]);
    // A refused name takes no number.
    expect((await admin("POST", `/panels/${first.id}/activities`, { name: "VIEW" })).status).toBe(409);
    expect(await ids(first.id, ["buy"])).toEqual(["3"]);
    expect((await admin("GET", `/panels/${second.id}/activities/1`)).body.name).toBe("view");
    expect((await admin("GET", `/panels/${second.id}/activities/2`)).status).toBe(404);
  });

  it("refuses a name the panel already has, whatever its case (409), but another panel may use it", async () => {
    const panel = await createPanel();
    await admin("POST", `/panels/${panel.id}/activities`, { name: "Checkout" });
    const again = await admin("POST", `/panels/${panel.id}/activities`, { name: " checkout " });
    expect(again.status).toBe(409);
    expect(again.body.errors).toEqual([{ field: "name", message: expect.any(String) }]);
    const other = await createPanel();
    expect((await admin("POST", `/panels/${other.id}/activities`, { name: "Checkout" })).status).toBe(201);
  });

  it.each([
    ["no name", { params: {} }, "name"],
    ["an empty name", { name: "  " }, "name"],
    ["an unknown param type", { name: "x", params: { size: "date" } }, "params.size"],
    ["a bad param name", { name: "x", params: { "s^name": "string" } }, "params.s^name"],
    ["params as a list", { name: "x", params: ["name"] }, "params"],
  ])("refuses %s (400) and defines nothing", async (_label, body, field) => {
    const panel = await createPanel();
    const result = await admin("POST", `/panels/${panel.id}/activities`, body);
    expect(result.status).toBe(400);
    expect(result.body.errors.map((e: any) => e.field)).toContain(field);
    expect((await admin("GET", `/panels/${panel.id}/activities`)).body.activities).toEqual([]);
  });

  // An array definition's problems are named at the member (or part) at fault, not as a vague
  // "must be one of …" on the whole parameter.
  it.each([
    ["a bad member name", { items: { type: "array", of: { "9x": "integer" } } }, "params.items.of.9x", /letter or _/],
    ["a member name too long", { items: { type: "array", of: { ["m".repeat(65)]: "integer" } } }, `params.items.of.${"m".repeat(65)}`, /at most 64 characters/],
    ["an unknown member type", { items: { type: "array", of: { prid: "bool" } } }, "params.items.of.prid", /^must be one of string, integer, float$/],
    ["an array member", { items: { type: "array", of: { tags: { type: "array", of: { t: "string" } } } } }, "params.items.of.tags", /^must be one of string, integer, float$/],
    ["no members", { items: { type: "array", of: {} } }, "params.items.of", /1 to 20 members/],
    ["another kind of definition", { items: { type: "list", of: { prid: "integer" } } }, "params.items.type", /"array"/],
    ["a definition without members", { items: { type: "array" } }, "params.items.of", /required/],
    ["an extra part", { items: { type: "array", of: { prid: "integer" }, max: 5 } }, "params.items.max", /not an accepted member/],
    ["a number for a type", { size: 3 }, "params.size", /string, integer, float/],
  ])("refuses an array definition with %s (400), naming it, and defines nothing", async (_label, params, field, message) => {
    const panel = await createPanel();
    const result = await admin("POST", `/panels/${panel.id}/activities`, { name: "cart", params: { total: "float", ...params } });
    expect(result.status).toBe(400);
    expect(result.body.errors).toEqual([{ field, message: expect.stringMatching(message) }]);
    expect((await admin("GET", `/panels/${panel.id}/activities`)).body.activities).toEqual([]);
  });

  it("another panel's activity, an unknown id and an unknown panel are 404", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const theirs = await admin("POST", `/panels/${other.id}/activities`, { name: "theirs" });
    expect((await admin("GET", `/panels/${panel.id}/activities/${theirs.body.activityid}`)).status).toBe(404);
    expect((await admin("GET", `/panels/${panel.id}/activities/abc`)).status).toBe(404);
    expect((await admin("POST", "/panels/pnl_nope/activities", { name: "x" })).status).toBe(404);
  });
});
