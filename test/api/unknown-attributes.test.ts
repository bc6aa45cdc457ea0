import { beforeEach, describe, expect, it } from "vitest";
import { admin, apiFor, createPanel, panelSnapshot, type TestPanel } from "../support/helpers";

// The panel setting unknown_attributes (CONTRACT 8): what contact add and update do with
// attributes the panel's schema does not have (clients send FIRST_NAME, LAST_NAME, CUSTOMERNAME).

let panel: TestPanel;
let api: ReturnType<typeof apiFor>;

beforeEach(async () => {
  panel = await createPanel();
  api = apiFor(panel);
});

const setMode = (mode: string) => admin("PATCH", `/panels/${panel.id}`, { unknown_attributes: mode });

describe("unknown_attributes", () => {
  it("is reject by default and shown on the panel; PATCH changes it; anything else is refused", async () => {
    expect((await admin("GET", `/panels/${panel.id}`)).body.unknown_attributes).toBe("reject");
    const patched = await setMode("ignore");
    expect(patched.status).toBe(200);
    expect(patched.body.unknown_attributes).toBe("ignore");
    const bad = await setMode("drop");
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0]).toMatchObject({ field: "unknown_attributes", message: "must be one of reject, ignore, create" });
  });

  it("reject: the call fails naming each unknown attribute and the nearest known one; nothing is written", async () => {
    const before = await panelSnapshot(panel.id);
    const result = await api("contact", "add", { data: { EMAIL: "ada@example.com", FIRST_NAME: "Ada", last_name: "Lovelace", CUSTOMERNAME: "Ada L", SHOE: 38 } });
    expect(result.status).toBe(400);
    expect(result.body.errors).toEqual([
      { field: "data.FIRST_NAME", message: 'unknown attribute "FIRST_NAME": it is not in the panel\'s attribute schema; did you mean FIRSTNAME?' },
      { field: "data.last_name", message: 'unknown attribute "last_name": it is not in the panel\'s attribute schema; did you mean LASTNAME?' },
      { field: "data.CUSTOMERNAME", message: 'unknown attribute "CUSTOMERNAME": it is not in the panel\'s attribute schema; did you mean NAME?' },
      { field: "data.SHOE", message: 'unknown attribute "SHOE": it is not in the panel\'s attribute schema' },
    ]);
    expect(result.body.message).toContain("did you mean FIRSTNAME?");
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("ignore: the known attributes are stored and the answer lists the others as sent", async () => {
    await setMode("ignore");
    const added = await api("contact", "add", { data: { EMAIL: "ada@example.com", NAME: "Ada", FIRST_NAME: "Ada", CUSTOMERNAME: "Ada L" } });
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ result: "Success", contact: { EMAIL: "ada@example.com", NAME: "Ada" }, ignored: ["FIRST_NAME", "CUSTOMERNAME"] });
    expect(added.body.contact).not.toHaveProperty("FIRST_NAME");
    const updated = await api("contact", "update", { data: { EMAIL: "ada@example.com", LAST_NAME: "L", CITY: "Pune" } });
    expect(updated.body).toMatchObject({ contact: { CITY: "Pune" }, ignored: ["LAST_NAME"] });
    expect((await admin("GET", `/panels/${panel.id}/attributes`)).body.attributes.map((a: any) => a.name)).not.toContain("LAST_NAME");
    // Known attributes are still checked.
    const bad = await api("contact", "add", { data: { EMAIL: "b@example.com", AGE: "old", FIRST_NAME: "B" } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([{ field: "data.AGE", message: 'must be an integer, not "old"' }]);
  });

  it("create: unknown attributes become string attributes on first use, in the same write", async () => {
    await setMode("create");
    const added = await api("contact", "add", { data: { EMAIL: "ada@example.com", first_name: "Ada", CUSTOMER_ID: 1001 } });
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ contact: { EMAIL: "ada@example.com", FIRST_NAME: "Ada", CUSTOMER_ID: "1001" }, created: ["FIRST_NAME", "CUSTOMER_ID"] });
    const attributes = (await admin("GET", `/panels/${panel.id}/attributes`)).body.attributes;
    expect(attributes).toEqual(expect.arrayContaining([{ name: "FIRST_NAME", type: "string" }, { name: "CUSTOMER_ID", type: "string" }]));
    // Known from now on: the next call creates nothing and the value is checked as a string.
    const again = await api("contact", "add", { data: { EMAIL: "b@example.com", FIRST_NAME: "Bo" } });
    expect(again.body.created).toBeUndefined();
    expect((await api("contact", "add", { data: { EMAIL: "c@example.com", FIRST_NAME: { x: 1 } } })).status).toBe(400);
  });

  it("create: a failed call creates no attribute; a name that cannot be one is refused with the nearest", async () => {
    await setMode("create");
    const before = await panelSnapshot(panel.id);
    const badValue = await api("contact", "add", { data: { EMAIL: "ada@example.com", NICKNAME: "Ada", AGE: "x" } });
    expect(badValue.status).toBe(400);
    const badName = await api("contact", "add", { data: { EMAIL: "ada@example.com", "first name": "Ada" } });
    expect(badName.status).toBe(400);
    expect(badName.body.errors).toEqual([
      { field: "data.first name", message: 'unknown attribute "first name": an attribute name is a letter, then up to 63 letters, digits or _; did you mean FIRSTNAME?' },
    ]);
    const update = await api("contact", "update", { data: { EMAIL: "nobody@example.com", NICKNAME: "N" } });
    expect(update.status).toBe(404);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });
});
