import { env } from "cloudflare:workers";
import { panelDb } from "../../src/services/access/shards";
import { searchContactsContaining } from "../../src/store/contacts";
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

describe("panel: contacts search, contains", () => {
  it("finds text anywhere in the key or a text attribute, without ASCII case, and pages on", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    for (const data of [
      { EMAIL: "ada@lovelace.org", NAME: "Ada Lovelace", AGE: 36 },
      { EMAIL: "bob@example.com", NAME: "Bob Loveday" },
      { EMAIL: "cy@example.com", NAME: 'Cy "100%"' },
      { EMAIL: "dee@glove.io", NAME: "Dee" },
    ]) {
      expect((await api("contact", "add", { data })).body.result).toBe("Success");
    }
    const search = (query: string) => admin("GET", `/panels/${panel.id}/contacts?match=contains&${query}`);
    const keys = (answer: { body: any }) => answer.body.contacts.map((c: any) => c.key);
    const byName = await search("attribute=name&q=LOVE");
    expect(byName.status, JSON.stringify(byName.body)).toBe(200);
    expect(keys(byName)).toEqual(["ada@lovelace.org", "bob@example.com"]);
    expect(byName.body.scan).toEqual({ contacts: 4, bounded: false });
    expect(byName.body.next_cursor).toBeNull();
    // The primary key too (emails are stored lower-case), and LIKE's wildcards are plain characters.
    expect(keys(await search("q=LOVE"))).toEqual(["ada@lovelace.org", "dee@glove.io"]);
    expect(keys(await search("attribute=NAME&q=0%25"))).toEqual(["cy@example.com"]);
    expect(keys(await search("attribute=NAME&q=_"))).toEqual([]);
    // The stored JSON is looked at first (decision 0045): text in another attribute or a name is no
    // match, and text JSON escapes (a quote) is still found.
    expect(keys(await search("attribute=NAME&q=example"))).toEqual([]);
    expect(keys(await search("attribute=NAME&q=name"))).toEqual([]);
    expect(keys(await search(`attribute=NAME&q=${encodeURIComponent('y "1')}`))).toEqual(["cy@example.com"]);
    const first = await search("q=e&limit=2");
    expect(keys(first)).toEqual(["ada@lovelace.org", "bob@example.com"]);
    expect(keys(await search(`q=e&limit=2&after=${encodeURIComponent(first.body.next_cursor)}`))).toEqual(["cy@example.com", "dee@glove.io"]);

    const refused = await search("attribute=AGE&q=3");
    expect(refused.status).toBe(400);
    expect(refused.body.errors[0]).toMatchObject({ field: "match", message: expect.stringMatching(/exact value/) });
    expect((await search("attribute=NAME")).body.errors[0].field).toBe("q");
  });

  it("scans at most its bound of contacts in key order and says where it stopped", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    for (const name of ["a", "b", "c", "d", "e"]) await api("contact", "add", { data: { EMAIL: `${name}@example.com`, NAME: name === "e" ? "Needle" : "Hay" } });
    const db = await panelDb(env, panel.id);
    const first = await searchContactsContaining(db, panel.id, "NAME", "needle", undefined, 26, 3);
    expect(first).toEqual({ contacts: [], scanned: 3, lastScanned: "c@example.com" });
    const rest = await searchContactsContaining(db, panel.id, "NAME", "needle", first.lastScanned!, 26, 3);
    expect(rest.scanned).toBe(2);
    expect(rest.contacts.map((c) => c.key)).toEqual(["e@example.com"]);
  });
});
