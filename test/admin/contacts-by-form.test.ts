import { describe, expect, it } from "vitest";
import { admin, apiFor, createPanel, panelSnapshot } from "../support/helpers";
import { asOperator, operatorWithRole } from "../support/operators";

describe("panel: adding a contact by form", () => {
  it("adds a contact under the API's add rules, joins lists, and names each refusal by its attribute", async () => {
    const panel = await createPanel();
    await admin("PUT", `/panels/${panel.id}/attributes/AGE`, { type: "integer" });
    const list = await admin("POST", `/panels/${panel.id}/lists`, { name: "Newcomers" });
    const marketer = await operatorWithRole(panel.id, "marketer");
    const path = `/panels/${panel.id}/contacts`;

    const added = await asOperator(marketer, "POST", path, { attributes: { email: "Ada@Example.com", AGE: "31" }, lists: [list.body.id] });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body).toMatchObject({ key: "ada@example.com", attributes: { EMAIL: "ada@example.com", AGE: 31 } });
    // The API and the contact page read what the form wrote.
    const viewed = await apiFor(panel)("contact", "view", { data: "ada@example.com" });
    expect(viewed.body.contact).toEqual({ EMAIL: "ada@example.com", AGE: 31 });
    expect((await admin("GET", `${path}/ada@example.com`)).body.lists).toEqual([{ id: list.body.id, name: "Newcomers" }]);

    const before = await panelSnapshot(panel.id);
    const refused = async (body: Record<string, unknown>, status: number, fields: string[]) => {
      const answer = await asOperator(marketer, "POST", path, body);
      expect(answer.status, JSON.stringify(body)).toBe(status);
      expect(answer.body.errors.map((e: any) => e.field)).toEqual(fields);
      return answer.body;
    };
    await refused({ attributes: { EMAIL: "not an address", AGE: "old" } }, 400, ["attributes.AGE", "attributes.EMAIL"].sort());
    await refused({ attributes: { AGE: 3 } }, 400, ["attributes.EMAIL"]);
    await refused({ attributes: { EMAIL: "bo@example.com", SHOE: 44 } }, 400, ["attributes.SHOE"]);
    await refused({ attributes: { EMAIL: "bo@example.com" }, lists: [999_999] }, 404, ["lists"]);
    // An existing contact is not merged into: the form says where to edit it.
    const taken = await refused({ attributes: { Email: "ADA@example.com", AGE: 40 } }, 409, ["attributes.Email"]);
    expect(taken.errors[0].message).toMatch(/exists already/);
    expect(await panelSnapshot(panel.id)).toBe(before);

    const viewer = await operatorWithRole(panel.id, "viewer");
    expect((await asOperator(viewer, "POST", path, { attributes: { EMAIL: "cy@example.com" } })).status).toBe(403);
  });
});
