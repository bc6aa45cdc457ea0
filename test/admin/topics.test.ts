import { describe, expect, it } from "vitest";
import { admin, createPanel, type TestPanel } from "../support/helpers";

// A panel's topics (issue 45, item 4): CRUD with field-named refusals.

const topicsOf = (panel: TestPanel) => `/panels/${panel.id}/topics`;

describe("topics: the admin routes", () => {
  it("create, list, read, replace and delete; another panel sees none of them", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    const created = await admin("POST", topicsOf(panel), { name: " Product news ", description: "New features, monthly" });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ id: expect.stringMatching(/^tpc_/), name: "Product news", description: "New features, monthly" });
    const second = await admin("POST", topicsOf(panel), { name: "Events" });
    expect(second.body.description).toBe("");

    expect((await admin("GET", topicsOf(panel))).body.topics.map((t: any) => t.name)).toEqual(["Events", "Product news"]);
    expect((await admin("GET", `${topicsOf(panel)}/${created.body.id}`)).body).toEqual(created.body);

    const replaced = await admin("PUT", `${topicsOf(panel)}/${created.body.id}`, { name: "Releases", description: "What shipped" });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ id: created.body.id, name: "Releases", description: "What shipped" });

    expect((await admin("GET", topicsOf(other))).body.topics).toEqual([]);
    expect((await admin("GET", `${topicsOf(other)}/${created.body.id}`)).status).toBe(404);
    expect((await admin("PUT", `${topicsOf(other)}/${created.body.id}`, { name: "X" })).status).toBe(404);
    expect((await admin("DELETE", `${topicsOf(other)}/${created.body.id}`)).status).toBe(404);

    expect((await admin("DELETE", `${topicsOf(panel)}/${created.body.id}`)).body).toEqual({ deleted: true });
    const gone = await admin("GET", `${topicsOf(panel)}/${created.body.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toBe(`No topic with id "${created.body.id}" in this panel`);
    expect((await admin("GET", topicsOf(panel))).body.topics.map((t: any) => t.name)).toEqual(["Events"]);
  });

  it("refuses a taken name (409, whatever the case), an empty or long name, a long description and unknown fields, naming the field; writes nothing", async () => {
    const panel = await createPanel();
    const first = await admin("POST", topicsOf(panel), { name: "Events" });
    const second = await admin("POST", topicsOf(panel), { name: "News" });

    const taken = await admin("POST", topicsOf(panel), { name: "EVENTS" });
    expect(taken.status).toBe(409);
    expect(taken.body.errors).toEqual([{ field: "name", message: 'the panel already has a topic named "EVENTS"' }]);
    const renamedOnto = await admin("PUT", `${topicsOf(panel)}/${second.body.id}`, { name: "events" });
    expect(renamedOnto.status).toBe(409);

    const cases: Array<[unknown, string, string]> = [
      [{ name: "  " }, "name", "must not be empty"],
      [{}, "name", "must be text"],
      [{ name: "x".repeat(101) }, "name", "must be at most 100 characters"],
      [{ name: "Ok", description: "d".repeat(501) }, "description", "must be at most 500 characters"],
      [{ name: "Ok", colour: "red" }, "colour", ""],
    ];
    for (const [body, field, message] of cases) {
      const answer = await admin("POST", topicsOf(panel), body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      const error = answer.body.errors.find((e: any) => e.field === field);
      expect(error, JSON.stringify(answer.body)).toBeDefined();
      if (message) expect(error.message).toBe(message);
    }
    const list = (await admin("GET", topicsOf(panel))).body.topics;
    expect(list.map((t: any) => [t.id, t.name])).toEqual([
      [first.body.id, "Events"],
      [second.body.id, "News"],
    ]);
  });
});
