import { describe, expect, it } from "vitest";
import { defineActivity, storedEvents } from "../support/activity";
import { admin, call, createPanel, type TestPanel } from "../support/helpers";
import { importCsv } from "../support/imports";

// Client replays, round two (CONTRACT 10): the contact and key calls of issue 40 as the public
// clients build them, byte for byte, against a panel set up as their users set it up.

const json = async (response: Response) => ({ status: response.status, body: (await response.json()) as any });

async function contactOf(panel: TestPanel, key: string) {
  return json(await call(`/apiv2?type=contact&activity=view&apikey=${encodeURIComponent(panel.apiKey)}&data=${encodeURIComponent(key)}`));
}

async function typedPanel(options: Parameters<typeof createPanel>[0] = {}): Promise<TestPanel> {
  const panel = await createPanel(options);
  for (const [name, type] of [["ZALO_UNFOLLOWED_AT", "date"], ["REGISTRATION_DATE", "date"], ["SCORE", "float"], ["VIP", "boolean"], ["ALT_PHONE", "string"]]) {
    expect((await admin("PUT", `/panels/${panel.id}/attributes/${name}`, { type })).status).toBe(200);
  }
  return panel;
}

describe("client replays, round two (CONTRACT 10)", () => {
  it('a PHP CRM sync: "" for date, integer, float and boolean attributes is no value; text keeps ""', async () => {
    const panel = await typedPanel();
    // $client->post('/apiv2', ['form_params' => ['type' => 'contact', 'activity' => 'addsync', 'apikey' => $key,
    //   'data' => json_encode($row)]]) with every empty profile field sent as ''.
    const row = { EMAIL: "lan@example.com", NAME: "Lan", CITY: "", AGE: "", ZALO_UNFOLLOWED_AT: "", REGISTRATION_DATE: "", SCORE: "", VIP: "" };
    const added = await json(
      await call("/apiv2", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `type=contact&activity=addsync&apikey=${encodeURIComponent(panel.apiKey)}&data=${encodeURIComponent(JSON.stringify(row))}`,
      }),
    );
    expect(added.status).toBe(200);
    expect(added.body.contact).toEqual({ EMAIL: "lan@example.com", NAME: "Lan", CITY: "" });

    // Later the CRM knows the age and date; an add with "" again leaves them as they are.
    const known = { EMAIL: "lan@example.com", AGE: "34.0", REGISTRATION_DATE: "2026-01-15", SCORE: 7.5, VIP: true };
    expect((await json(await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}&data=${encodeURIComponent(JSON.stringify(known))}`))).status).toBe(200);
    const again = await json(await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}&data=${encodeURIComponent(JSON.stringify(row))}`));
    expect(again.status).toBe(200);
    expect(again.body.contact).toEqual({ EMAIL: "lan@example.com", NAME: "Lan", CITY: "", AGE: 34, REGISTRATION_DATE: "2026-01-15", SCORE: 7.5, VIP: true });

    // update with "" clears them.
    const cleared = await json(
      await call("/apiv2", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "contact", activity: "update", apikey: panel.apiKey, data: JSON.stringify({ EMAIL: "lan@example.com", AGE: "", REGISTRATION_DATE: "", VIP: " " }) }),
      }),
    );
    expect(cleared.status).toBe(200);
    expect(cleared.body.contact).toEqual({ EMAIL: "lan@example.com", NAME: "Lan", CITY: "", SCORE: 7.5 });
    expect((await contactOf(panel, "lan@example.com")).body.contact).toEqual({ EMAIL: "lan@example.com", NAME: "Lan", CITY: "", SCORE: 7.5 });
  });

  it("integral decimals are integers, 34.5 is still refused and nothing is written", async () => {
    const panel = await typedPanel();
    // requests.post(f"{base}/apiv2", params={"type": "contact", "activity": "add", "apikey": key}, data={"data": json.dumps(rec)})
    // where rec came from a DataFrame: AGE is a float, MOBILE too.
    const body = (rec: unknown) => `data=${encodeURIComponent(JSON.stringify(rec))}`;
    const post = (rec: unknown) =>
      call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: body(rec) });
    const added = await json(await post({ EMAIL: "df@example.com", AGE: 34.0, MOBILE: "9876500001.0", ALT_PHONE: "+919876500002.0", CITY: "12.0" }));
    expect(added.status).toBe(200);
    expect(added.body.contact).toEqual({ EMAIL: "df@example.com", AGE: 34, MOBILE: "9876500001", ALT_PHONE: "+919876500002", CITY: "12.0" });
    const half = await json(await post({ EMAIL: "half@example.com", AGE: 34.5 }));
    expect(half.status).toBe(400);
    expect(half.body.errors).toEqual([{ field: "data.AGE", message: "must be an integer, not a float" }]);
    expect((await contactOf(panel, "half@example.com")).status).toBe(404);
  });

  it("a pandas CSV (df.to_csv) in a bulk upload: 34.0, 9876500001.0 and empty cells", async () => {
    const panel = await typedPanel({ primary_key: "MOBILE" });
    const csv = "MOBILE,NAME,AGE,SCORE,ALT_PHONE,REGISTRATION_DATE\n9876500001.0,Asha,34.0,1.5,9876500002.0,\n9876500003.0,Ravi,,,,2026-02-01\n9876500004.0,Bad,34.5,,,\n";
    const job = await importCsv(panel, csv);
    expect(job).toMatchObject({ status: "completed", total: 3, created: 2, failed: 1 });
    expect((await contactOf(panel, "9876500001")).body.contact).toEqual({ MOBILE: "9876500001", NAME: "Asha", AGE: 34, SCORE: 1.5, ALT_PHONE: "9876500002" });
    expect((await contactOf(panel, "9876500003")).body.contact).toEqual({ MOBILE: "9876500003", NAME: "Ravi", REGISTRATION_DATE: "2026-02-01" });
    expect((await contactOf(panel, "9876500004")).status).toBe(404);
  });

  it('an activity: "" for a number parameter is absent, "3.0" is 3; a string parameter keeps ""', async () => {
    const panel = await createPanel();
    const cart = await defineActivity(panel, "add_to_cart", { qty: "integer", price: "float", coupon: "string" });
    // fetch(`${base}/v1/activity/singleactivity/${clientId}`, {method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(ev)})
    const posted = await call(`/v1/activity/singleactivity/${panel.clientId}?apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ activityid: cart, identity: "a@example.com", activity_params: { qty: "3.0", price: "", coupon: "" } }),
    });
    expect(posted.status).toBe(200);
    expect((await storedEvents(panel.id))[0]).toMatchObject({ name: "add_to_cart", params: { qty: 3, coupon: "" } });
    expect((await storedEvents(panel.id))[0]!.params).not.toHaveProperty("price");
  });

  it("a parameter named in another case than its definition (Price for price) is stored under the definition's name, through the upload and the CSV batch", async () => {
    const panel = await createPanel();
    await defineActivity(panel, "purchase", { price: "float", order_id: "string" });
    const uploaded = await call(`/v1/activity/upload?apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify([{ activity_name: "purchase", identity: "a@example.com", activity_params: { Price: 12.5, Order_ID: "SO-1" } }]),
    });
    expect(await json(uploaded)).toMatchObject({ status: 200, body: { result: "Success", recorded: 1 } });
    const form = new FormData();
    form.set("data", new File(["activity_name,identity,PRICE,order_id\npurchase,b@example.com,3,SO-2\n"], "events.csv", { type: "text/csv" }));
    const csv = await call(`/v1/activity/batchactivity/${encodeURIComponent(panel.clientId)}?apikey=${panel.apiKey}`, { method: "POST", body: form });
    expect(await json(csv)).toMatchObject({ status: 200, body: { result: "Success", recorded: 1 } });
    const params = (await storedEvents(panel.id)).map((e) => e.params).sort((a, b) => String(a.order_id).localeCompare(String(b.order_id)));
    expect(params).toEqual([{ price: 12.5, order_id: "SO-1" }, { price: 3, order_id: "SO-2" }]);
  });

  it("the key as Authorization without a scheme and as api-key, on /apiv2, /v1/activity and /v1/events", async () => {
    const panel = await createPanel();
    const viewed = await defineActivity(panel, "page_view", { url: "string" });
    // Go: req.Header.Set("Authorization", apiKey)
    const bare = await json(await call("/apiv2?type=lists&activity=getall", { headers: { Authorization: panel.apiKey } }));
    expect(bare.status).toBe(200);
    // The provider's activity docs: --header 'api-key: <key>'
    const upload = await json(
      await call("/v1/activity/upload", {
        method: "POST",
        headers: { "api-key": panel.apiKey, "content-type": "application/json" },
        body: JSON.stringify([{ activity_name: "page_view", identity: "k@example.com", activity_params: { url: "/home" } }]),
      }),
    );
    expect(upload.status).toBe(200);
    expect(upload.body.recorded).toBe(1);
    const single = await call(`/v1/activity/singleactivity/${panel.clientId}`, {
      method: "POST",
      headers: { "api-key": panel.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ activityid: viewed, identity: "k@example.com", activity_params: { url: "/cart" } }),
    });
    expect(single.status).toBe(200);
    const add = await json(
      await call("/apiv2", {
        method: "POST",
        headers: { "api-key": panel.apiKey, "content-type": "application/x-www-form-urlencoded" },
        body: `type=contact&activity=add&data=${encodeURIComponent(JSON.stringify({ EMAIL: "k@example.com" }))}`,
      }),
    );
    expect(add.status).toBe(200);
    // An SMS gateway's delivery report by key alone (no client id in the path): the key names the
    // panel, where this msgid is unknown (404); no key or a wrong one is 401.
    const report = (headers: Record<string, string>) =>
      call("/v1/events/sms", { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ msgid: "msg-unknown", event: "delivered" }) }).then(json);
    expect((await report({})).status).toBe(401);
    for (const headers of [{ "api-key": panel.apiKey }, { Authorization: panel.apiKey }] as Record<string, string>[]) {
      const answer = await report(headers);
      expect(answer.status).toBe(404);
      expect(answer.body.errors).toEqual([{ field: "msgid", message: expect.any(String) }]);
    }
    expect((await report({ "api-key": "mk_wrong" })).status).toBe(401);
    expect((await report({ Authorization: "mk_wrong" })).status).toBe(401);
    expect((await report({ "api-key": panel.apiKey, Authorization: "mk_wrong" })).status).toBe(401);
  });

  it('ids as pandas writes whole numbers ("4.0") name the list and the activity', async () => {
    const panel = await createPanel();
    const key = encodeURIComponent(panel.apiKey);
    const list = await json(await call(`/apiv2?type=lists&activity=add&apikey=${key}&listname=Leads`));
    expect(list.status).toBe(200);
    const data = encodeURIComponent(JSON.stringify({ EMAIL: "pd@example.com" }));
    const added = await json(await call(`/apiv2?type=contact&activity=add&apikey=${key}&data=${data}&listid=${list.body.listid}.0`));
    expect(added.status).toBe(200);
    expect((await contactOf(panel, "pd@example.com")).body.lists).toEqual([{ id: list.body.listid, listname: "Leads" }]);
    expect((await json(await call(`/apiv2?type=contact&activity=add&apikey=${key}&data=${data}&listid=${list.body.listid}.5`))).status).toBe(400);

    const activity = await defineActivity(panel, "page_view", { url: "string" });
    const boundary = "pandas0to0csv";
    const csv = `activityid,identity,url\r\n${activity}.0,pd@example.com,/home\r\n`;
    const posted = await json(
      await call(`/v1/activity/batchactivity/${encodeURIComponent(panel.clientId)}`, {
        method: "POST",
        headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "api-key": panel.apiKey },
        body: `--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="events.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}\r\n--${boundary}--\r\n`,
      }),
    );
    expect(posted.status).toBe(200);
    expect(posted.body).toMatchObject({ result: "Success", recorded: 1, rejected: 0 });
    const single = await json(
      await call(`/v1/activity/singleactivity/${encodeURIComponent(panel.clientId)}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ activityid: `${activity}.00`, identity: "pd@example.com", activity_params: { url: "/cart" } }),
      }),
    );
    expect(single.status).toBe(200);
    expect((await storedEvents(panel.id)).map((e) => e.params)).toEqual([{ url: "/home" }, { url: "/cart" }]);
  });

  it("an optional parameter sent empty (listid=) or as JSON null is not given, as forms and JSON clients send an unset field", async () => {
    const panel = await createPanel();
    const key = encodeURIComponent(panel.apiKey);
    const data = encodeURIComponent(JSON.stringify({ EMAIL: "blank@example.com" }));
    const form = await json(
      await call("/apiv2", { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `type=contact&activity=add&apikey=${key}&data=${data}&listid=` }),
    );
    expect(form.status).toBe(200);
    const nulls = await json(
      await call("/apiv2", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "contact", activity: "add", apikey: panel.apiKey, data: { EMAIL: "null@example.com" }, listid: null }),
      }),
    );
    expect(nulls.status).toBe(200);
    expect((await contactOf(panel, "null@example.com")).body.lists).toEqual([]);
    const list = await json(
      await call("/apiv2", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ type: "lists", activity: "add", apikey: panel.apiKey, listname: "No desc", desc: null }) }),
    );
    expect(list.status).toBe(200);
    const lists = await json(await call(`/apiv2?type=lists&activity=getall&apikey=${key}`));
    expect(lists.body.lists).toMatchObject([{ id: list.body.listid, listname: "No desc", desc: "" }]);
    // A wrong id is still refused: only "nothing" means not given.
    expect((await json(await call(`/apiv2?type=contact&activity=add&apikey=${key}&data=${data}&listid=x`))).status).toBe(400);
    const imported = await importCsv(panel, "EMAIL\ncsv@example.com\n", { listid: "", notifyemail: "", callback: "" });
    expect(imported).toMatchObject({ status: "completed", created: 1 });
  });

  it("a key sent in two places that disagree is refused 401, nothing written", async () => {
    const panel = await createPanel();
    const other = await createPanel();
    await defineActivity(panel, "page_view", { url: "string" });
    const data = encodeURIComponent(JSON.stringify({ EMAIL: "two@example.com" }));
    const attempts: [string, RequestInit][] = [
      [`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}&data=${data}`, { headers: { "api-key": other.apiKey } }],
      [`/apiv2?type=contact&activity=add&data=${data}`, { headers: { Authorization: `Bearer ${panel.apiKey}`, "api-key": "mk_wrong" } }],
      [`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}&data=${data}`, { headers: { Authorization: other.apiKey } }],
    ];
    // The query's `apikey` and the body's are two places too: the body does not win for the key.
    const formBody = (key: string) => ({ method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: `apikey=${encodeURIComponent(key)}&data=${data}` });
    attempts.push(
      [`/apiv2?type=contact&activity=add&apikey=${other.apiKey}`, formBody(panel.apiKey)],
      [`/apiv2?type=contact&activity=add&apikey=mk_not_a_key`, formBody(panel.apiKey)],
      [`/apiv2?type=contact&activity=add&apikey=${other.apiKey}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ apikey: panel.apiKey, data: { EMAIL: "two@example.com" } }) }],
    );
    for (const [path, init] of attempts) {
      const answer = await json(await call(path, init));
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ result: "Failed", message: "The caller could not be authenticated" });
    }
    const upload = await call(`/v1/activity/upload?apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "api-key": other.apiKey, "content-type": "application/json" },
      body: JSON.stringify([{ activity_name: "page_view", identity: "two@example.com" }]),
    });
    expect(upload.status).toBe(401);
    expect((await contactOf(panel, "two@example.com")).status).toBe(404);
    expect(await storedEvents(panel.id)).toEqual([]);
    // The same key twice is one key.
    const same = await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}&data=${data}`, { headers: { "api-key": panel.apiKey, Authorization: `Bearer ${panel.apiKey}` } });
    expect(same.status).toBe(200);
    const sameInBoth = await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, formBody(panel.apiKey));
    expect(sameInBoth.status).toBe(200);
  });
});
