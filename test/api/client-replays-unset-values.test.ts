import { describe, expect, it } from "vitest";
import { contactEvents, defineActivity, eventCount, storedEvents } from "../support/activity";
import { call, createPanel } from "../support/helpers";

// Client replays, round five: how typed JSON clients write a value they do not have. Jackson
// (Java), Json.NET and System.Text.Json (.NET), Python's json with None and PHP's json_encode with
// null write an unset field as `null`; a list of ids with none chosen is `[]`. And an order id
// reused as an event's guid is a number in JSON.

const json = async (response: Response) => ({ status: response.status, body: (await response.json()) as any });

function postJson(path: string, body: unknown, headers: Record<string, string> = {}) {
  return call(path, { method: "POST", headers: { "content-type": "application/json; charset=UTF-8", ...headers }, body: JSON.stringify(body) }).then(json);
}

async function shopPanel() {
  const panel = await createPanel({ name: "Shop" });
  const checkout = await defineActivity(panel, "checkout", {
    order_id: "string",
    coupon: "string",
    total: "float",
    qty: "integer",
    items: { type: "array", of: { prid: "integer", name: "string", price: "float" } },
  });
  return { panel, checkout };
}

describe("null activity parameters are absent", () => {
  it("a Java client (Jackson, unset fields written as null) records its checkout; the null parameters and item members are not stored", async () => {
    const { panel, checkout } = await shopPanel();
    // new ObjectMapper().writeValueAsString(new CheckoutEvent(...)) with coupon, qty and an item's price unset.
    const posted = await postJson(`/v1/activity/singleactivity/${panel.clientId}`, {
      activityid: checkout,
      identity: "jo@example.com",
      activity_source: null,
      activity_params: { order_id: "SO-1", coupon: null, total: 54.5, qty: null, items: [{ prid: 12, name: "Kettle", price: null }] },
    });
    expect(posted.status).toBe(200);
    expect(posted.body.result).toBe("Success");
    const history = await contactEvents(panel, "jo@example.com");
    expect(history.status).toBe(200);
    expect(history.body.events[0].params).toEqual({ order_id: "SO-1", total: 54.5, items: [{ prid: 12, name: "Kettle" }] });
  });

  it("a .NET batch and a Python upload (None) with null parameters: every event recorded, none rejected", async () => {
    const { panel, checkout } = await shopPanel();
    const batch = await postJson(`/v1/activity/batch/${panel.clientId}`, [
      { activityid: checkout, identity: "a@example.com", activity_params: { order_id: "B-1", items: null } },
      { activityid: checkout, identity: "b@example.com", activity_params: { order_id: null, total: null } },
    ]);
    expect(batch.status).toBe(200);
    expect(batch.body).toMatchObject({ result: "Success", recorded: 2, rejected: 0, errors: [] });
    // requests.post(f"{base}/v1/activity/upload", json=[{..., "activity_params": {"coupon": None, ...}}], headers={"api-key": key})
    const upload = await postJson("/v1/activity/upload", [{ activity_name: "checkout", identity: "c@example.com", activity_params: { coupon: null, qty: "2" } }], { "api-key": panel.apiKey });
    expect(upload.status).toBe(200);
    expect(upload.body).toMatchObject({ result: "Success", recorded: 1, rejected: 0 });
    expect((await storedEvents(panel.id)).map((e) => [e.identity, e.params])).toEqual([
      ["a@example.com", { order_id: "B-1" }],
      ["b@example.com", {}],
      ["c@example.com", { qty: 2 }],
    ]);
  });

  it("null does not make an unknown parameter known: still refused naming it, nothing stored", async () => {
    const { panel, checkout } = await shopPanel();
    const refused = await postJson(`/v1/activity/singleactivity/${panel.clientId}`, { activityid: checkout, identity: "x@example.com", activity_params: { discount: null } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ result: "Failed", errors: [{ field: "activity_params.discount" }] });
    const member = await postJson(`/v1/activity/singleactivity/${panel.clientId}`, { activityid: checkout, identity: "x@example.com", activity_params: { items: [{ prid: 1, colour: null }] } });
    expect(member.status).toBe(400);
    expect(member.body).toMatchObject({ result: "Failed", errors: [{ field: "activity_params.items.0.colour" }] });
    expect(await eventCount(panel.id)).toBe(0);
  });
});

describe("a list of list ids with none chosen", () => {
  it('contact add with "listid": [] (json.dumps([]), an empty List<int>) adds the contact to no list; delete still needs a list', async () => {
    const panel = await createPanel();
    expect((await postJson("/apiv2", { type: "lists", activity: "add", apikey: panel.apiKey, listname: "Newsletter" })).status).toBe(200);
    // requests.post(f"{base}/apiv2", json={"type": "contact", "activity": "add", "apikey": key, "data": rec, "listid": []})
    const added = await postJson("/apiv2", { type: "contact", activity: "add", apikey: panel.apiKey, data: { EMAIL: "none@example.com", NAME: "None" }, listid: [] });
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ result: "Success", contact: { EMAIL: "none@example.com", NAME: "None" } });
    // The same list sent as JSON text in a form body: listid=[]
    const form = await call(`/apiv2?type=contact&activity=add&apikey=${encodeURIComponent(panel.apiKey)}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `data=${encodeURIComponent(JSON.stringify({ EMAIL: "form@example.com" }))}&listid=${encodeURIComponent("[]")}`,
    }).then(json);
    expect(form.status).toBe(200);
    for (const email of ["none@example.com", "form@example.com"]) {
      const view = await call(`/apiv2?type=contact&activity=view&apikey=${encodeURIComponent(panel.apiKey)}&data=${encodeURIComponent(email)}`).then(json);
      expect(view.status).toBe(200);
      expect(view.body.lists).toEqual([]);
    }
    const lists = await call(`/apiv2?type=lists&activity=getall&apikey=${encodeURIComponent(panel.apiKey)}`).then(json);
    expect(lists.body.lists).toMatchObject([{ listname: "Newsletter", count: 0 }]);
    // delete names the lists to leave: none is a mistake, said as such.
    const removed = await postJson("/apiv2", { type: "contact", activity: "delete", apikey: panel.apiKey, data: "none@example.com", listid: [] });
    expect(removed.status).toBe(400);
    expect(removed.body).toMatchObject({ result: "Failed", errors: [{ field: "listid", message: "must name at least one list" }] });
  });
});

describe("a number as an event's guid", () => {
  it("an order id (a JSON number) is the guid as its text: a second post of it is a duplicate", async () => {
    const { panel, checkout } = await shopPanel();
    const event = { activityid: checkout, identity: "g@example.com", guid: 100077, activity_params: { order_id: "100077" } };
    const first = await postJson(`/v1/activity/singleactivity/${panel.clientId}`, event);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ result: "Success", guid: "100077", duplicate: false });
    const again = await postJson(`/v1/activity/singleactivity/${panel.clientId}`, { ...event, guid: "100077" });
    expect(again.body).toMatchObject({ result: "Success", guid: "100077", duplicate: true });
    const batch = await postJson(`/v1/activity/batch/${panel.clientId}`, [event, { ...event, guid: 100078 }]);
    expect(batch.body).toMatchObject({ result: "Success", recorded: 2, duplicates: 1, rejected: 0 });
    expect(await eventCount(panel.id)).toBe(2);
    const bad = await postJson(`/v1/activity/singleactivity/${panel.clientId}`, { ...event, guid: true });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ result: "Failed", errors: [{ field: "guid", message: "must be text" }] });
  });
});
