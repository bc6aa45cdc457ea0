import { beforeEach, describe, expect, it } from "vitest";
import { getContactByKey } from "../../src/store/contacts";
import { admin, apiFor, call, contactsOf, countRows, createPanel, envelope, panelSnapshot, type Style, type TestPanel, panelData } from "../support/helpers";

let panel: TestPanel;
let api: ReturnType<typeof apiFor>;

beforeEach(async () => {
  panel = await createPanel();
  api = apiFor(panel);
});

async function newList(name: string): Promise<number> {
  const created = await api("lists", "add", { listname: name });
  expect(created.status).toBe(200);
  return created.body.listid;
}

describe("contact add (4.1)", () => {
  it.each<Style>(["mixed", "form", "query", "json", "multipart"])("stores a contact sent %s", async (style) => {
    const data = { NAME: "Ada", EMAIL: "Ada@Example.com ", AGE: 36, CITY: "Pune" };
    const added = await api("contact", "add", { data }, style);
    expect(added.status).toBe(200);
    expect(added.body.result).toBe("Success");
    expect(added.body.requestid).toMatch(/^[0-9a-f]{32}$/);
    expect(added.body.contact).toEqual({ NAME: "Ada", EMAIL: "ada@example.com", AGE: 36, CITY: "Pune" });

    const viewed = await api("contact", "view", { data: "ada@example.com" });
    expect(viewed.body.contact.EMAIL).toBe("ada@example.com");
  });

  it("merges into an existing contact (upsert)", async () => {
    await api("contact", "add", { data: { EMAIL: "b@example.com", NAME: "Bo", CITY: "Goa" } });
    const merged = await api("contact", "add", { data: { email: "B@EXAMPLE.COM", CITY: "Delhi" } });
    expect(merged.status).toBe(200);
    expect(merged.body.contact).toEqual({ EMAIL: "b@example.com", NAME: "Bo", CITY: "Delhi" });
    expect(await contactsOf(panel.id)).toHaveLength(1);
  });

  it("accepts the addsync alias", async () => {
    const added = await api("contact", "addsync", { data: { EMAIL: "sync@example.com" } });
    expect(added.status).toBe(200);
    expect(added.body.contact).toEqual({ EMAIL: "sync@example.com" });
  });

  it("removes an attribute given as null", async () => {
    await api("contact", "add", { data: { EMAIL: "n@example.com", CITY: "Goa" } });
    const updated = await api("contact", "add", { data: { EMAIL: "n@example.com", CITY: null } });
    expect(updated.body.contact).toEqual({ EMAIL: "n@example.com" });
  });

  it("adds the contact to a list given by listid", async () => {
    const listId = await newList("Newsletter");
    const added = await api("contact", "add", { data: { EMAIL: "l@example.com" }, listid: String(listId) });
    expect(added.status).toBe(200);
    const viewed = await api("contact", "view", { data: "l@example.com" });
    expect(viewed.body.lists).toEqual([{ id: listId, listname: "Newsletter" }]);
  });

  it("stores numbers sent as decimal text as numbers", async () => {
    await admin("PUT", `/panels/${panel.id}/attributes/SCORE`, { type: "float" });
    const added = await api("contact", "add", { data: { EMAIL: "n@example.com", AGE: "22", SCORE: "-12.50" } }, "json");
    expect(added.status).toBe(200);
    expect(added.body.contact).toEqual({ EMAIL: "n@example.com", AGE: 22, SCORE: -12.5 });
  });

  it.each<[string, (ids: number[]) => unknown, Style]>([
    ["comma separated", (ids) => ids.join(","), "mixed"],
    ["a JSON array in a JSON body", (ids) => ids, "json"],
    ["a JSON array of strings in a JSON body", (ids) => ids.map(String), "json"],
    ["a JSON array as form text", (ids) => JSON.stringify(ids), "form"],
  ])("adds the contact to every list of a listid given %s", async (_label, listid, style) => {
    const ids = [await newList("A"), await newList("B")];
    const added = await api("contact", "add", { data: { EMAIL: "many@example.com" }, listid: listid(ids) }, style);
    expect(added.status).toBe(200);
    const viewed = await api("contact", "view", { data: "many@example.com" });
    expect(viewed.body.lists.map((l: { id: number }) => l.id)).toEqual(ids);
  });

  it.each<[string, (ids: number[], data: string) => RequestInit & { query?: string }]>([
    ["PHP's http_build_query form (listid[0]=…&listid[1]=…) in a form body", (ids, data) => ({
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `data=${encodeURIComponent(data)}&${ids.map((id, i) => `listid%5B${i}%5D=${id}`).join("&")}`,
    })],
    ["listid[]=… repeated in the query string", (ids, data) => ({ method: "POST", query: `&data=${encodeURIComponent(data)}&${ids.map((id) => `listid[]=${id}`).join("&")}` })],
    ["listid repeated in a form body (Python requests' data={'listid': [4, 7]})", (ids, data) => ({
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `data=${encodeURIComponent(data)}&${ids.map((id) => `listid=${id}`).join("&")}`,
    })],
    ["listid repeated in the query string", (ids, data) => ({ method: "GET", query: `&data=${encodeURIComponent(data)}&${ids.map((id) => `listid=${id}`).join("&")}` })],
    ["listid[] fields of a multipart body", (ids, data) => {
      const form = new FormData();
      form.append("data", data);
      for (const id of ids) form.append("listid[]", String(id));
      return { method: "POST", body: form };
    }],
  ])("adds the contact to every list of %s", async (_label, request) => {
    const ids = [await newList("A"), await newList("B")];
    const { query = "", ...init } = request(ids, JSON.stringify({ EMAIL: "php@example.com" }));
    const added = await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}${query}`, init);
    expect(added.status).toBe(200);
    const viewed = await api("contact", "view", { data: "php@example.com" });
    expect(viewed.body.lists.map((l: { id: number }) => l.id)).toEqual(ids);
  });

  it.each<[string, string, string]>([
    ["PHP's http_build_query of a nested array (data[EMAIL]=…) in a form body", "data%5BEMAIL%5D=bracket%40example.com&data%5BNAME%5D=Bra&data%5BAGE%5D=31", "application/x-www-form-urlencoded"],
    ["jQuery's $.post of a nested object (data[EMAIL]=…), unescaped brackets", "data[EMAIL]=bracket%40example.com&data[NAME]=Bra&data[AGE]=31", "application/x-www-form-urlencoded"],
    // $.ajax({ contentType: "application/json", data: { data: {…} } }) encodes the object as a form all the same.
    ["jQuery's $.ajax form of an object labelled application/json", "data[EMAIL]=bracket%40example.com&data[NAME]=Bra&data[AGE]=31", "application/json; charset=utf-8"],
  ])("reads data given as %s as the object it encodes", async (_label, body, contentType) => {
    const added = await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, { method: "POST", headers: { "content-type": contentType }, body });
    const answer = await added.json<{ contact: unknown }>();
    expect(added.status, JSON.stringify(answer)).toBe(200);
    expect(answer.contact).toEqual({ EMAIL: "bracket@example.com", NAME: "Bra", AGE: 31 });
  });

  it("a parameter repeated with the same value is that value; with two values it is refused, naming it, and nothing is written", async () => {
    const data = encodeURIComponent(JSON.stringify({ EMAIL: "twice@example.com" }));
    const same = await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}&apikey=${panel.apiKey}&data=${data}`, { method: "GET" });
    expect(same.status, await same.text()).toBe(200);
    const before = await panelSnapshot(panel.id);
    const other = JSON.stringify({ EMAIL: "other@example.com" });
    const twoData = await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}&data=${data}&data=${encodeURIComponent(other)}`, { method: "GET" });
    expect(twoData.status).toBe(400);
    expect((await twoData.json<{ message: string }>()).message).toContain("data");
    const twoTypes = await call(`/apiv2?type=contact&type=lists&activity=add&apikey=${panel.apiKey}&data=${data}`, { method: "GET" });
    expect([400, 404]).toContain(twoTypes.status);
    expect((await twoTypes.json<{ message: string }>()).message).toContain("type");
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("with several lists, one that does not exist writes nothing", async () => {
    const a = await newList("A");
    const before = await panelSnapshot(panel.id);
    const result = await api("contact", "add", { data: { EMAIL: "many@example.com" }, listid: `${a},999996` });
    expect(result.status).toBe(404);
    expect(result.body.message).toContain("999996");
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("works with a MOBILE primary key, normalised", async () => {
    const mobilePanel = await createPanel({ primary_key: "MOBILE" });
    const mobileApi = apiFor(mobilePanel);
    const added = await mobileApi("contact", "add", { data: { MOBILE: "+91 98765-43210", NAME: "Ravi" } });
    expect(added.status).toBe(200);
    expect(added.body.contact.MOBILE).toBe("+919876543210");
    const viewed = await mobileApi("contact", "view", { data: "+91 (98765) 43210" });
    expect(viewed.body.contact.NAME).toBe("Ravi");
    const bad = await mobileApi("contact", "add", { data: { MOBILE: "call me" } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors[0].field).toBe("data.MOBILE");
  });

  it("refuses an address with a non-ASCII local part, saying why; a non-ASCII domain is taken", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const refused = await api("contact", "add", { data: { EMAIL: "Chloé@example.com" } });
    expect(refused.status).toBe(400);
    expect(refused.body.errors).toContainEqual({
      field: "data.EMAIL",
      message: 'has a non-ASCII local part ("chloé"): that needs SMTPUTF8, which the email provider does not support',
    });
    expect(await countRows("SELECT COUNT(*) AS n FROM contacts WHERE panel_id = ?", panel.id)).toBe(0);
    expect((await api("contact", "add", { data: { EMAIL: "ada@bücher.example" } })).status).toBe(200);

    // The same for an EMAIL that is not the panel's primary key, on add and update.
    const mobile = apiFor(await createPanel({ primary_key: "MOBILE" }));
    const secondary = await mobile("contact", "add", { data: { MOBILE: "+15550001", email: "Chloé@example.com" } });
    expect(secondary.status).toBe(400);
    expect(secondary.body.errors).toEqual([{ field: "data.email", message: 'has a non-ASCII local part ("chloé"): that needs SMTPUTF8, which the email provider does not support' }]);
    expect((await mobile("contact", "add", { data: { MOBILE: "+15550001", EMAIL: "chloe@example.com" } })).status).toBe(200);
    expect((await mobile("contact", "update", { data: { MOBILE: "+15550001", EMAIL: "chloé@example.com" } })).status).toBe(400);
    expect((await mobile("contact", "view", { data: "+15550001" })).body.contact.EMAIL).toBe("chloe@example.com");
  });

  it("works with a custom primary-key attribute", async () => {
    const crmPanel = await createPanel({ primary_key: "customer_id" });
    const crmApi = apiFor(crmPanel);
    const added = await crmApi("contact", "add", { data: { CUSTOMER_ID: " C-1001 ", EMAIL: "c@example.com" } });
    expect(added.status).toBe(200);
    expect(added.body.contact.CUSTOMER_ID).toBe("C-1001");
    const missing = await crmApi("contact", "add", { data: { EMAIL: "c@example.com" } });
    expect(missing.status).toBe(400);
    expect(missing.body.errors).toContainEqual({ field: "data.CUSTOMER_ID", message: expect.stringContaining("required") });
  });

  describe("refuses bad input and writes nothing", () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ["non-JSON data", { data: "{not json" }, "data"],
      ["a JSON array", { data: "[1,2]" }, "data"],
      ["a JSON string", { data: '"x@example.com"' }, "data"],
      ["an empty object", { data: "{}" }, "data"],
      ["missing data", {}, "data"],
      ["a missing primary key", { data: { NAME: "No key" } }, "data.EMAIL"],
      ["an empty primary key", { data: { EMAIL: "  " } }, "data.EMAIL"],
      ["an invalid email", { data: { EMAIL: "not-an-email" } }, "data.EMAIL"],
      ["an unknown attribute", { data: { EMAIL: "u@example.com", SHOE_SIZE: 9 } }, "data.SHOE_SIZE"],
      ["text that is not a number for an integer", { data: { EMAIL: "t@example.com", AGE: "36 years" } }, "data.AGE"],
      ["decimal text for an integer", { data: { EMAIL: "t@example.com", AGE: "36.5" } }, "data.AGE"],
      ["a float for an integer", { data: { EMAIL: "t@example.com", AGE: 36.5 } }, "data.AGE"],
      ["an object value", { data: { EMAIL: "t@example.com", CITY: { name: "Pune" } } }, "data.CITY"],
      ["a boolean for a string", { data: { EMAIL: "t@example.com", CITY: true } }, "data.CITY"],
      ["a non-numeric listid", { data: { EMAIL: "t@example.com" }, listid: "abc" }, "listid"],
      ["a listid beyond 2^53 (ids are exact integers; shards reach past int32)", { data: { EMAIL: "t@example.com" }, listid: "9007199254740992" }, "listid"],
      ["a negative listid", { data: { EMAIL: "t@example.com" }, listid: "-1" }, "listid"],
      ["a bad id among several", { data: { EMAIL: "t@example.com" }, listid: "1,x" }, "listid"],
      ["a JSON array of lists that is not JSON", { data: { EMAIL: "t@example.com" }, listid: "[1,2" }, "listid"],
    ];
    it.each(cases)("%s", async (_label, params, field) => {
      const before = await panelSnapshot(panel.id);
      const result = await api("contact", "add", params);
      expect(result.status).toBe(400);
      expect(result.body.result).toBe("Failed");
      expect(result.body.message).toContain(field);
      expect(result.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect(await panelSnapshot(panel.id)).toBe(before);
    });

    it("names every offending attribute at once", async () => {
      const result = await api("contact", "add", { data: { EMAIL: "m@example.com", AGE: "x", FOO: 1, CITY: [] } });
      expect(result.status).toBe(400);
      expect(result.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(["data.AGE", "data.CITY", "data.FOO"]);
    });

    it("without data, says that data is required", async () => {
      const result = await api("contact", "add", { listid: "1" });
      expect(result.status).toBe(400);
      expect(result.body.message).toBe("data: is required: a JSON object");
      const view = await api("contact", "view", {});
      expect(view.body.message).toBe("data: is required: the contact's primary-key value");
    });

    it("a listid that does not exist: 404, contact not created", async () => {
      const result = await api("contact", "add", { data: { EMAIL: "nolist@example.com" }, listid: "999999" });
      expect(result.status).toBe(404);
      expect(result.body.errors[0].field).toBe("listid");
      expect(await contactsOf(panel.id)).toHaveLength(0);
    });
  });

  it("another panel's listid behaves as one that does not exist", async () => {
    const other = await createPanel();
    // Lists are numbered per panel (CONTRACT 10): an id above this panel's is one only the other has.
    for (let i = 0; i < 5; i++) await apiFor(other)("lists", "add", { listname: `Theirs ${i}` });
    const foreignList = (await apiFor(other)("lists", "add", { listname: "Theirs" })).body.listid;
    const result = await api("contact", "add", { data: { EMAIL: "x@example.com" }, listid: String(foreignList) });
    const missing = await api("contact", "add", { data: { EMAIL: "x@example.com" }, listid: "999998" });
    expect(result.status).toBe(404);
    expect(result.body.message.replace(String(foreignList), "N")).toBe(missing.body.message.replace("999998", "N"));
    expect(await countRows("SELECT COUNT(*) AS n FROM list_members WHERE list_id = ? AND panel_id = ?", foreignList, other.id)).toBe(0);
  });

  it("accepts an attribute the operator adds to the schema", async () => {
    const refused = await api("contact", "add", { data: { EMAIL: "s@example.com", PLAN: "gold" } });
    expect(refused.status).toBe(400);
    await admin("PUT", `/panels/${panel.id}/attributes/plan`, { type: "string" });
    const accepted = await api("contact", "add", { data: { EMAIL: "s@example.com", plan: "gold" } });
    expect(accepted.status).toBe(200);
    expect(accepted.body.contact).toEqual({ EMAIL: "s@example.com", PLAN: "gold" });
  });

  it("checks float, date and boolean attributes", async () => {
    await admin("PUT", `/panels/${panel.id}/attributes/SCORE`, { type: "float" });
    await admin("PUT", `/panels/${panel.id}/attributes/BORN`, { type: "date" });
    await admin("PUT", `/panels/${panel.id}/attributes/VIP`, { type: "boolean" });
    const ok = await api("contact", "add", { data: { EMAIL: "f@example.com", SCORE: 4.5, BORN: "1990-02-28", VIP: true } });
    expect(ok.status).toBe(200);
    expect(ok.body.contact).toMatchObject({ SCORE: 4.5, BORN: "1990-02-28", VIP: true });
    const bad = await api("contact", "add", { data: { EMAIL: "f@example.com", SCORE: "4.5 points", BORN: "1990-02-30", VIP: "yes" } });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(["data.BORN", "data.SCORE", "data.VIP"]);
  });
});

describe("contact view (4.2)", () => {
  it("accepts the key as JSON holding it", async () => {
    await api("contact", "add", { data: { EMAIL: "v@example.com", NAME: "Vee" } });
    const viewed = await api("contact", "view", { data: { EMAIL: "V@example.com" } });
    expect(viewed.status).toBe(200);
    expect(viewed.body).toMatchObject({ result: "Success", contact: { NAME: "Vee" }, lists: [] });
  });

  it("an unknown contact is 404", async () => {
    const viewed = await api("contact", "view", { data: "nobody@example.com" });
    expect(viewed.status).toBe(404);
    expect(viewed.body.result).toBe("Failed");
  });

  it("another panel's contact behaves as one that does not exist", async () => {
    const other = await createPanel();
    await apiFor(other)("contact", "add", { data: { EMAIL: "theirs@example.com" } });
    const viewed = await api("contact", "view", { data: "theirs@example.com" });
    expect(viewed.status).toBe(404);
  });

  it("an invalid key is 400 naming data", async () => {
    const viewed = await api("contact", "view", { data: "not an email" });
    expect(viewed.status).toBe(400);
    expect(viewed.body.errors[0].field).toBe("data");
  });
});

describe("contact update (4.3)", () => {
  it("changes attributes of an existing contact", async () => {
    await api("contact", "add", { data: { EMAIL: "u@example.com", NAME: "Old", CITY: "Goa" } });
    const updated = await api("contact", "update", { data: { EMAIL: "u@example.com", NAME: "New" } });
    expect(updated.status).toBe(200);
    expect(updated.body.contact).toEqual({ EMAIL: "u@example.com", NAME: "New", CITY: "Goa" });
  });

  it("fails with 404 for a contact that does not exist, creating nothing", async () => {
    const updated = await api("contact", "update", { data: { EMAIL: "ghost@example.com", NAME: "Boo" } });
    expect(updated.status).toBe(404);
    expect(await contactsOf(panel.id)).toHaveLength(0);
  });

  it("does not reach another panel's contact", async () => {
    const other = await createPanel();
    await apiFor(other)("contact", "add", { data: { EMAIL: "shared@example.com", NAME: "Theirs" } });
    const updated = await api("contact", "update", { data: { EMAIL: "shared@example.com", NAME: "Mine" } });
    expect(updated.status).toBe(404);
    const theirs = await apiFor(other)("contact", "view", { data: "shared@example.com" });
    expect(theirs.body.contact.NAME).toBe("Theirs");
  });

  it("refuses a wrongly typed attribute and changes nothing", async () => {
    await api("contact", "add", { data: { EMAIL: "w@example.com", AGE: 30 } });
    const before = await panelSnapshot(panel.id);
    const updated = await api("contact", "update", { data: { EMAIL: "w@example.com", AGE: "thirty-one" } });
    expect(updated.status).toBe(400);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });
});

describe("contact delete: remove from lists (4.4)", () => {
  it("removes from one or several lists and keeps the contact", async () => {
    const a = await newList("A");
    const b = await newList("B");
    const c = await newList("C");
    for (const id of [a, b, c]) await api("contact", "add", { data: { EMAIL: "d@example.com" }, listid: String(id) });
    const removed = await api("contact", "delete", { data: "d@example.com", listid: `${a},${b}` }, "query");
    expect(removed.status).toBe(200);
    expect(removed.body.removed_from).toEqual([a, b]);
    const viewed = await api("contact", "view", { data: "d@example.com" });
    expect(viewed.body.lists).toEqual([{ id: c, listname: "C" }]);
  });

  it("reports only the lists the contact was in", async () => {
    const a = await newList("A");
    const b = await newList("B");
    await api("contact", "add", { data: { EMAIL: "d@example.com" }, listid: String(a) });
    const removed = await api("contact", "delete", { data: "d@example.com", listid: `${a},${b}` });
    expect(removed.body.removed_from).toEqual([a]);
  });

  it("fails for an unknown list, a foreign list or an unknown contact, changing nothing", async () => {
    const a = await newList("A");
    await api("contact", "add", { data: { EMAIL: "d@example.com" }, listid: String(a) });
    const other = await createPanel();
    // Lists are numbered per panel (CONTRACT 10): an id above this panel's is one only the other has.
    for (let i = 0; i < 5; i++) await apiFor(other)("lists", "add", { listname: `X ${i}` });
    const foreign = (await apiFor(other)("lists", "add", { listname: "X" })).body.listid;
    const before = await panelSnapshot(panel.id);
    expect((await api("contact", "delete", { data: "d@example.com", listid: `${a},999997` })).status).toBe(404);
    expect((await api("contact", "delete", { data: "d@example.com", listid: `${a},${foreign}` })).status).toBe(404);
    expect((await api("contact", "delete", { data: "nobody@example.com", listid: String(a) })).status).toBe(404);
    expect((await api("contact", "delete", { data: "d@example.com", listid: "1,x" })).status).toBe(400);
    expect((await api("contact", "delete", { data: "d@example.com" })).status).toBe(400);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });
});

describe("contact delete with many list ids", () => {
  it("checks up to 100 list ids in one call and refuses more with a 400 naming the cap", async () => {
    const a = await newList("A");
    await api("contact", "add", { data: { EMAIL: "many@example.com" }, listid: String(a) });
    const before = await panelSnapshot(panel.id);
    const hundred = [a, ...Array.from({ length: 99 }, (_, i) => 900_000 + i)].join(",");
    const missing = await api("contact", "delete", { data: "many@example.com", listid: hundred });
    expect(missing.status).toBe(404);
    expect(missing.body.message).toMatch(/^listid: no list with id 900000, 900001/);
    const tooMany = await api("contact", "delete", { data: "many@example.com", listid: `${hundred},999999` });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.errors).toEqual([{ field: "listid", message: "must name at most 100 list ids, not 101" }]);
    expect(await panelSnapshot(panel.id)).toBe(before);
    const removed = await api("contact", "delete", { data: "many@example.com", listid: [a, ...Array.from({ length: 99 }, () => a)].join(",") });
    expect(removed.body.removed_from).toEqual([a]);
  });
});

describe("a contact stored through one request shape reads back through another", () => {
  it("JSON body with data as a string", async () => {
    const added = await envelope({ type: "contact", activity: "add", apikey: panel.apiKey, data: JSON.stringify({ EMAIL: "js@example.com" }) }, "json");
    expect(added.status).toBe(200);
    expect(await getContactByKey(panelData, panel.id, "js@example.com")).toMatchObject({ attributes: { EMAIL: "js@example.com" } });
  });
});

describe("the contact writes' refusals, word for word (CONTRACT 4.1, 4.3, 4.4)", () => {
  const failed = (message: string, errors: Array<{ field: string; message: string }>) => ({ result: "Failed", message, errors, requestid: expect.stringMatching(/^[0-9a-f]{32}$/) });

  it("add: refused attributes and a missing list", async () => {
    const invalid = await api("contact", "add", { data: { EMAIL: "r@example.com", AGE: "x", SHOE: 9 } });
    expect(invalid).toEqual({ status: 400, body: failed('data.AGE: must be an integer, not "x" (and 1 more)', [
        { field: "data.AGE", message: 'must be an integer, not "x"' },
        { field: "data.SHOE", message: `unknown attribute "SHOE": it is not in the panel's attribute schema` },
      ]) });
    const a = await newList("A");
    const noList = await api("contact", "add", { data: { EMAIL: "r@example.com" }, listid: `${a},999998,999999` });
    expect(noList).toEqual({ status: 404, body: failed("listid: no list with id 999998, 999999 in this panel", [{ field: "listid", message: "no list with id 999998, 999999" }]) });
  });

  it("update: a missing contact and refused attributes", async () => {
    const missing = await api("contact", "update", { data: { email: "Ghost@Example.com", NAME: "Boo" } });
    expect(missing).toEqual({ status: 404, body: failed('No contact with EMAIL "ghost@example.com"; use activity=add to create it', [{ field: "data.EMAIL", message: "no such contact" }]) });
    await api("contact", "add", { data: { EMAIL: "w@example.com" } });
    const invalid = await api("contact", "update", { data: { EMAIL: "w@example.com", AGE: "thirty" } });
    expect(invalid).toEqual({ status: 400, body: failed('data.AGE: must be an integer, not "thirty"', [{ field: "data.AGE", message: 'must be an integer, not "thirty"' }]) });
  });

  it("delete: a missing contact and a missing list", async () => {
    const a = await newList("A");
    const missing = await api("contact", "delete", { data: "Nobody@Example.com", listid: String(a) });
    expect(missing).toEqual({ status: 404, body: failed('No contact with EMAIL "nobody@example.com"', [{ field: "data", message: "no such contact" }]) });
    const noList = await api("contact", "delete", { data: "nobody@example.com", listid: `${a},999999` });
    expect(noList).toEqual({ status: 404, body: failed("listid: no list with id 999999 in this panel", [{ field: "listid", message: "no list with id 999999" }]) });
  });
});
