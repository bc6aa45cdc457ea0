import { beforeEach, describe, expect, it } from "vitest";
import { listLists } from "../../src/store/lists";
import { apiFor, contactsOf, createPanel, panelSnapshot, type TestPanel, panelData } from "../support/helpers";

let panel: TestPanel;
let api: ReturnType<typeof apiFor>;

beforeEach(async () => {
  panel = await createPanel();
  api = apiFor(panel);
});

describe("lists add (4.6)", () => {
  it("creates a list and returns its id", async () => {
    const created = await api("lists", "add", { listname: "Customers", desc: "Paying ones" });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ result: "Success", listid: expect.any(Number) });
    const all = await api("lists", "getall");
    expect(all.body.lists).toEqual([
      expect.objectContaining({ id: created.body.listid, listname: "Customers", desc: "Paying ones", count: 0 }),
    ]);
  });

  it("refuses a duplicate name regardless of case (409)", async () => {
    await api("lists", "add", { listname: "Customers" });
    const before = await panelSnapshot(panel.id);
    const duplicate = await api("lists", "add", { listname: " customers " });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.errors[0].field).toBe("listname");
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("lets two panels use the same name", async () => {
    await api("lists", "add", { listname: "Shared" });
    const other = await createPanel();
    expect((await apiFor(other)("lists", "add", { listname: "Shared" })).status).toBe(200);
  });

  it.each([
    ["missing", {}],
    ["empty", { listname: "" }],
    ["blank", { listname: "   " }],
    ["too long", { listname: "x".repeat(256) }],
  ])("refuses a %s name", async (_label, params) => {
    const created = await api("lists", "add", params);
    expect(created.status).toBe(400);
    expect(created.body.errors[0].field).toBe("listname");
    expect(await listLists(panelData, panel.id)).toEqual([]);
  });
});

describe("lists edit (4.7)", () => {
  it("renames a list and changes its description", async () => {
    const id = (await api("lists", "add", { listname: "Old", desc: "d1" })).body.listid;
    const edited = await api("lists", "edit", { id: String(id), listname: "New" });
    expect(edited.status).toBe(200);
    expect(edited.body.list).toMatchObject({ id, listname: "New", desc: "d1", count: 0 });
    const described = await api("lists", "edit", { id: String(id), listname: "New", desc: "d2" });
    expect(described.body.list.desc).toBe("d2");
  });

  it("fails for an unknown id, another panel's id, a taken name or a bad id", async () => {
    const id = (await api("lists", "add", { listname: "One" })).body.listid;
    await api("lists", "add", { listname: "Two" });
    const other = await createPanel();
    // Lists are numbered per panel (CONTRACT 10): the other panel's third list is an id only it has.
    for (const listname of ["Theirs 1", "Theirs 2"]) await apiFor(other)("lists", "add", { listname });
    const foreign = (await apiFor(other)("lists", "add", { listname: "Theirs" })).body.listid;
    expect(foreign).toBe(3);
    const before = await panelSnapshot(panel.id);
    expect((await api("lists", "edit", { id: "999996", listname: "X" })).status).toBe(404);
    expect((await api("lists", "edit", { id: String(foreign), listname: "X" })).status).toBe(404);
    expect((await api("lists", "edit", { id: String(id), listname: "two" })).status).toBe(409);
    expect((await api("lists", "edit", { id: "one", listname: "X" })).status).toBe(400);
    expect((await api("lists", "edit", { listname: "X" })).status).toBe(400);
    expect((await api("lists", "edit", { id: String(id) })).status).toBe(400);
    expect(await panelSnapshot(panel.id)).toBe(before);
    const theirs = await apiFor(other)("lists", "getall");
    expect(theirs.body.lists[2].listname).toBe("Theirs");
  });
});

describe("lists getall (4.8)", () => {
  it("lists with member counts and times, via getall and getalllist", async () => {
    const a = (await api("lists", "add", { listname: "A" })).body.listid;
    const b = (await api("lists", "add", { listname: "B" })).body.listid;
    await api("contact", "add", { data: { EMAIL: "1@example.com" }, listid: String(a) });
    await api("contact", "add", { data: { EMAIL: "2@example.com" }, listid: String(a) });
    await api("contact", "add", { data: { EMAIL: "2@example.com" }, listid: String(b) });
    for (const activity of ["getall", "getalllist"]) {
      const all = await api("lists", activity, {}, "query");
      expect(all.status).toBe(200);
      expect(all.body.lists.map((l: { listname: string; count: number }) => [l.listname, l.count])).toEqual([
        ["A", 2],
        ["B", 1],
      ]);
      expect(all.body.lists[0]).toEqual({
        id: a,
        listname: "A",
        desc: "",
        count: 2,
        created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      });
    }
  });

  it("never shows another panel's lists", async () => {
    const other = await createPanel();
    await apiFor(other)("lists", "add", { listname: "Theirs" });
    expect((await api("lists", "getall")).body.lists).toEqual([]);
  });
});

describe("lists delete (4.9) and emptylist", () => {
  it("deletes the list by name and keeps its contacts", async () => {
    const id = (await api("lists", "add", { listname: "Gone" })).body.listid;
    await api("contact", "add", { data: { EMAIL: "stay@example.com" }, listid: String(id) });
    const deleted = await api("lists", "delete", { listname: "gone" });
    expect(deleted.status).toBe(200);
    expect(deleted.body.result).toBe("Success");
    expect((await api("lists", "getall")).body.lists).toEqual([]);
    const contact = await api("contact", "view", { data: "stay@example.com" });
    expect(contact.status).toBe(200);
    expect(contact.body.lists).toEqual([]);
  });

  it("empties a list and keeps its contacts", async () => {
    const id = (await api("lists", "add", { listname: "Full" })).body.listid;
    for (const n of [1, 2, 3]) await api("contact", "add", { data: { EMAIL: `${n}@example.com` }, listid: String(id) });
    const emptied = await api("lists", "emptylist", { listname: "Full" });
    expect(emptied.status).toBe(200);
    expect(emptied.body.removed).toBe(3);
    expect((await api("lists", "getall")).body.lists[0].count).toBe(0);
    expect(await contactsOf(panel.id)).toHaveLength(3);
  });

  it("an unknown or foreign list name is 404 and changes nothing", async () => {
    const other = await createPanel();
    const foreign = (await apiFor(other)("lists", "add", { listname: "Theirs" })).body.listid;
    await apiFor(other)("contact", "add", { data: { EMAIL: "t@example.com" }, listid: String(foreign) });
    expect((await api("lists", "delete", { listname: "Theirs" })).status).toBe(404);
    expect((await api("lists", "emptylist", { listname: "Theirs" })).status).toBe(404);
    expect((await api("lists", "delete", {})).status).toBe(400);
    expect((await apiFor(other)("lists", "getall")).body.lists[0].count).toBe(1);
  });
});
