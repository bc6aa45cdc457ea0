import { describe, expect, it } from "vitest";
import { MAX_ARRAY_ITEMS, MAX_EVENT_PARAMS_CHARS } from "../../src/domain/activity-param-types";
import { defineActivity, eventCount, fullSnapshot, pipelineSettled, storedEvents } from "../support/activity";
import { admin, apiFor, call, createPanel, type TestPanel } from "../support/helpers";
import { act, createWebhook, delivered, startJourney } from "../support/journeys";

// Client replays, round two (CONTRACT 10), for events: what the provider's own samples and
// shop clients send, byte for byte as their code builds it.

const json = async (response: Response) => ({ status: response.status, body: (await response.json()) as any });

/** A product list as shop plugins define it. */
const ITEMS = { type: "array", of: { prid: "integer", name: "string", price: "float" } };

async function shopPanel(settings: Record<string, unknown> = {}) {
  const panel = await createPanel({ name: "Shop" });
  if (Object.keys(settings).length) expect((await admin("PATCH", `/panels/${panel.id}`, settings)).status).toBe(200);
  const checkout = await defineActivity(panel, "checkout", { order_id: "string", total: "float", items: ITEMS });
  return { panel, checkout };
}

function post(path: string, body: string, headers: Record<string, string> = {}) {
  return call(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body }).then(json);
}

/** A multipart body as Python requests builds it for `files={"data": ("events.csv", text, "text/csv")}`. */
function multipartCsv(field: string, text: string, boundary = "d6c1f1e0b1a84c6f9a3e2b7c5d4e3f21") {
  const body = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="events.csv"\r\nContent-Type: text/csv\r\n\r\n${text}\r\n--${boundary}--\r\n`;
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}

function postCsv(panel: TestPanel, field: string, text: string, headers: Record<string, string> = {}) {
  const { body, contentType } = multipartCsv(field, text);
  return call(`/v1/activity/batchactivity/${encodeURIComponent(panel.clientId)}`, {
    method: "POST",
    headers: { "content-type": contentType, authorization: `Bearer ${panel.apiKey}`, ...headers },
    body,
  }).then(json);
}

describe("activity_source (CONTRACT 10)", () => {
  it("the provider's sample: activity_source CRM is stored and passed on as sent; an event without one is stored and sent with none", async () => {
    const { panel, checkout } = await shopPanel();
    const hook = await createWebhook(panel);
    await startJourney(panel, { trigger: { type: "activity", activity: "checkout" }, steps: [{ id: "hook", type: "webhook", webhook: hook.id }] });
    const path = `/v1/activity/singleactivity/${panel.clientId}`;
    const crm = await post(path, `{"activityid":"${checkout}","identity":"crm@example.com","activity_source":"CRM","activity_params":{"order_id":"SO-77","total":120.5}}`);
    expect(crm.status).toBe(200);
    await act(panel, checkout, "web@example.com", { activity_params: { order_id: "W-1" } });
    const stored = await storedEvents(panel.id);
    expect(stored.map((e) => [e.identity, e.source])).toEqual([
      ["crm@example.com", "CRM"],
      ["web@example.com", null],
    ]);
    const events = await delivered(hook);
    const byIdentity = Object.fromEntries(events.map((e) => [e.event_params.identity, e.event_params]));
    expect(byIdentity["crm@example.com"].activity_source).toBe("CRM");
    expect(byIdentity["web@example.com"]).not.toHaveProperty("activity_source");
  });

  it("a source longer than 32 characters is refused, naming the field", async () => {
    const { panel, checkout } = await shopPanel();
    const refused = await post(`/v1/activity/singleactivity/${panel.clientId}`, JSON.stringify({ activityid: checkout, identity: "a@example.com", activity_source: "x".repeat(33) }));
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ result: "Failed", errors: [{ field: "activity_source", message: "must be at most 32 characters" }] });
    expect(await eventCount(panel.id)).toBe(0);
  });
});

describe("array parameters (CONTRACT 10)", () => {
  it("a shop plugin's checkout with a product array: stored whole, prefixed or unprefixed members typed", async () => {
    const { panel, checkout } = await shopPanel();
    // $payload = ["activityid" => ..., "activity_params" => ["items" => $lines, ...]]; json_encode($payload)
    const posted = await post(
      `/v1/activity/singleactivity/${panel.clientId}?apikey=${encodeURIComponent(panel.apiKey)}`,
      `{"activityid":${checkout},"identity":"ada@example.com","activity_source":"web","activity_params":{"order_id":"1001","total":"54.50","items":[{"prid":12,"name":"Kettle","price":29.5},{"i^prid":"13","s^name":"Mug","f^price":"12.50"}]}}`,
    );
    expect(posted.status).toBe(200);
    expect((await storedEvents(panel.id))[0]!.params).toEqual({
      order_id: "1001",
      total: 54.5,
      items: [
        { prid: 12, name: "Kettle", price: 29.5 },
        { prid: 13, name: "Mug", price: 12.5 },
      ],
    });
  });

  it("accepted by the batch and upload routes alike", async () => {
    const { panel, checkout } = await shopPanel();
    const batch = await post(`/v1/activity/batch/${panel.clientId}`, JSON.stringify([{ activityid: checkout, identity: "a@example.com", activity_params: { items: [{ prid: 1 }] } }]));
    expect(batch.status).toBe(200);
    const upload = await post(`/v1/activity/upload`, JSON.stringify([{ activity_name: "checkout", identity: "b@example.com", activity_params: { items: [{ prid: 2, name: "Tea" }] } }]), {
      authorization: `Bearer ${panel.apiKey}`,
    });
    expect(upload.status).toBe(200);
    expect((await storedEvents(panel.id)).map((e) => e.params.items)).toEqual([[{ prid: 1 }], [{ prid: 2, name: "Tea" }]]);
  });

  it("refuses what does not fit with the usual Failed body, naming the item and member; nothing is stored", async () => {
    const { panel, checkout } = await shopPanel();
    const before = await fullSnapshot(panel.id);
    const path = `/v1/activity/singleactivity/${panel.clientId}`;
    const cases: Array<[unknown, string, string]> = [
      [{ prid: "twelve" }, "activity_params.items.0.prid", 'must be an integer, not "twelve"'],
      [{ prid: 1, colour: "red" }, "activity_params.items.0.colour", 'unknown member "colour": items define prid, name, price'],
      [{ "f^prid": 1 }, "activity_params.items.0.f^prid", "member prid is an integer: use the prefix i^"],
    ];
    for (const [item, field, message] of cases) {
      const refused = await post(path, JSON.stringify({ activityid: checkout, identity: "a@example.com", activity_params: { items: [item] } }));
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ result: "Failed", errors: [{ field, message }] });
    }
    const tooMany = await post(path, JSON.stringify({ activityid: checkout, identity: "a@example.com", activity_params: { items: Array.from({ length: MAX_ARRAY_ITEMS + 1 }, (_, i) => ({ prid: i })) } }));
    expect(tooMany.body.errors).toEqual([{ field: "activity_params.items", message: `must hold at most ${MAX_ARRAY_ITEMS} items, not ${MAX_ARRAY_ITEMS + 1}` }]);
    const notArray = await post(path, JSON.stringify({ activityid: checkout, identity: "a@example.com", activity_params: { items: { prid: 1 } } }));
    expect(notArray.body.errors).toEqual([{ field: "activity_params.items", message: "must be an array of objects (members prid, name, price), not an object" }]);
    const long = "x".repeat(2000);
    const tooBig = await post(path, JSON.stringify({ activityid: checkout, identity: "a@example.com", activity_params: { items: Array.from({ length: 40 }, () => ({ name: long })) } }));
    expect(tooBig.status).toBe(400);
    expect(tooBig.body.errors).toEqual([{ field: "activity_params", message: `must be at most ${MAX_EVENT_PARAMS_CHARS} characters of JSON per event` }]);
    expect(await fullSnapshot(panel.id)).toBe(before);
  });

  it("unknown members follow the panel's unknown_attributes: ignore drops them, create keeps them as text", async () => {
    const ignoring = await shopPanel({ unknown_attributes: "ignore" });
    const body = (checkout: string) => JSON.stringify({ activityid: checkout, identity: "a@example.com", activity_params: { items: [{ prid: 1, colour: "red", size: 42 }] } });
    expect((await post(`/v1/activity/singleactivity/${ignoring.panel.clientId}`, body(ignoring.checkout))).status).toBe(200);
    expect((await storedEvents(ignoring.panel.id))[0]!.params.items).toEqual([{ prid: 1 }]);
    const creating = await shopPanel({ unknown_attributes: "create" });
    expect((await post(`/v1/activity/singleactivity/${creating.panel.clientId}`, body(creating.checkout))).status).toBe(200);
    expect((await storedEvents(creating.panel.id))[0]!.params.items).toEqual([{ prid: 1, colour: "red", size: "42" }]);
  });

  it("a journey filtered on any item whose prid is 12 sends its webhook with the array whole in payload_params", async () => {
    const { panel, checkout } = await shopPanel();
    const hook = await createWebhook(panel);
    await startJourney(panel, {
      trigger: { type: "activity", activity: "checkout", params: [{ attribute: "items.prid", op: "eq", value: 12 }] },
      steps: [{ id: "hook", type: "webhook", webhook: hook.id }],
    });
    const kettle = [{ prid: 3, name: "Tea", price: 4 }, { prid: 12, name: "Kettle", price: 29.5 }];
    await act(panel, checkout, "ada@example.com", { activity_params: { order_id: "1", items: kettle } });
    await act(panel, checkout, "bo@example.com", { activity_params: { order_id: "2", items: [{ prid: 3 }] } });
    await act(panel, checkout, "cy@example.com", { activity_params: { order_id: "3" } });
    const events = await delivered(hook);
    expect(events.map((e) => e.event_params.identity)).toEqual(["ada@example.com"]);
    expect(events[0].payload_params).toEqual({ items: [{ order_id: "1", items: kettle }] });
  });

  it("a journey filter naming an array without a member, or a member it does not define, is refused", async () => {
    const { panel } = await shopPanel();
    const hook = await createWebhook(panel);
    const refused = await admin("POST", `/panels/${panel.id}/journeys`, {
      name: "x",
      trigger: { type: "activity", activity: "checkout", params: [{ attribute: "items", op: "eq", value: 1 }, { attribute: "items.sku", op: "eq", value: 1 }] },
      steps: [{ id: "hook", type: "webhook", webhook: hook.id }],
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors.map((e: any) => e.field)).toEqual(["trigger.params.0.attribute", "trigger.params.1.attribute"]);
  });

  it("a segment condition on any item where prid is 12 (or a name starting with ket)", async () => {
    const { panel, checkout } = await shopPanel();
    const api = apiFor(panel);
    for (const email of ["ada@example.com", "bo@example.com", "cy@example.com"]) await api("contact", "add", { data: { EMAIL: email } });
    const posted = await post(
      `/v1/activity/batch/${panel.clientId}`,
      JSON.stringify([
        { activityid: checkout, identity: "ada@example.com", activity_params: { items: [{ prid: 3 }, { prid: 12, name: "Kettle" }] } },
        { activityid: checkout, identity: "bo@example.com", activity_params: { items: [{ prid: 3, name: "Tea" }] } },
        { activityid: checkout, identity: "cy@example.com", activity_params: { order_id: "x" } },
      ]),
    );
    expect(posted.body).toMatchObject({ recorded: 3 });
    await pipelineSettled(panel.id);
    const count = async (where: unknown[]) => {
      const counted = await admin("POST", `/panels/${panel.id}/segments/count`, { match: { all: [{ activity: "checkout", op: "performed", where }] } });
      expect(counted.status, JSON.stringify(counted.body)).toBe(200);
      return counted.body.count;
    };
    expect(await count([{ param: "items.prid", op: "eq", value: "12" }])).toBe(1);
    expect(await count([{ param: "ITEMS.prid", op: "eq", value: 3 }])).toBe(2);
    expect(await count([{ param: "items.name", op: "starts_with", value: "ket" }])).toBe(1);
    expect(await count([{ param: "items.prid", op: "gt", value: 100 }])).toBe(0);
  });
});

describe("batch answers (CONTRACT 10)", () => {
  it("a batch with one bad event answers 200 Success with the stored and rejected counts, so a retrying client stores nothing twice", async () => {
    const { panel, checkout } = await shopPanel();
    const body = `[{"activityid":"${checkout}","identity":"a@example.com","activity_params":{"total":1}},{"activityid":"${checkout}","identity":"b@example.com","activity_params":{"total":"lots"}}]`;
    const answered = await post(`/v1/activity/batch/${panel.clientId}`, body, { "idempotency-key": "job-42" });
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ result: "Success", recorded: 1, rejected: 1, errors: [{ index: 1, field: "activity_params.total", message: 'must be a number, not "lots"' }] });
    const retried = await post(`/v1/activity/batch/${panel.clientId}`, body, { "idempotency-key": "job-42" });
    expect(retried.status).toBe(200);
    expect(await eventCount(panel.id)).toBe(1);
  });

  it("every event good: rejected 0 and errors empty; every event bad: 400 Failed", async () => {
    const { panel } = await shopPanel();
    const good = await post(`/v1/activity/upload?apikey=${panel.apiKey}`, '[{"activity_name":"checkout","identity":"a@example.com"}]');
    expect(good.body).toMatchObject({ result: "Success", recorded: 1, rejected: 0, errors: [] });
    const bad = await post(`/v1/activity/upload?apikey=${panel.apiKey}`, '[{"activity_name":"nope","identity":"a@example.com"}]');
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ result: "Failed", recorded: 0, rejected: 1, errors: [{ index: 0, field: "activity_name" }] });
  });
});

describe("CSV batch activity (CONTRACT 10)", () => {
  it("a CRM export posted as multipart field data: each row an event, errors by data row number", async () => {
    const { panel } = await shopPanel();
    const now = Date.now();
    const csv = [
      "activity_name,identity,timestamp,activity_source,order_id,total",
      `checkout,ada@example.com,${Math.floor(now / 1000) - 60},CRM,SO-1,10.5`,
      `checkout,bo@example.com,${Math.floor(now / 1000) - 60},,SO-2,lots`,
      "",
      `Checkout,"cy@example.com",,,"SO-3, rush",`,
      "wishlist,dee@example.com,,,,",
    ].join("\r\n");
    const answered = await postCsv(panel, "data", csv);
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({
      result: "Success",
      recorded: 2,
      rejected: 2,
      errors: [
        { index: 2, field: "activity_params.total", message: 'must be a number, not "lots"' },
        { index: 5, field: "activity_name", message: 'no activity named "wishlist" is defined in this panel' },
      ],
    });
    const stored = await storedEvents(panel.id);
    expect(stored.map((e) => [e.identity, e.source, e.params])).toEqual([
      ["ada@example.com", "CRM", { order_id: "SO-1", total: 10.5 }],
      ["cy@example.com", null, { order_id: "SO-3, rush" }],
    ]);
  });

  it(".NET's HttpClient: MultipartFormDataContent writes the part's name and file name without quotes, the boundary quoted", async () => {
    const { panel } = await shopPanel();
    // using var form = new MultipartFormDataContent(); form.Add(new StringContent(csv), "data", "events.csv");
    const boundary = "7d1f5c2a-3b4e-4f60-8a91-b2c3d4e5f607";
    const csv = "activity_name,identity,order_id\r\ncheckout,ada@example.com,SO-9\r\n";
    const body =
      `--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Disposition: form-data; name=data; filename=events.csv; filename*=utf-8''events.csv\r\n\r\n` +
      `${csv}\r\n--${boundary}--\r\n`;
    const answered = await call(`/v1/activity/batchactivity/${encodeURIComponent(panel.clientId)}`, {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary="${boundary}"`, authorization: `Bearer ${panel.apiKey}` },
      body,
    }).then(json);
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({ result: "Success", recorded: 1, rejected: 0 });
    expect((await storedEvents(panel.id)).map((e) => [e.identity, e.params])).toEqual([["ada@example.com", { order_id: "SO-9" }]]);
  });

  it("field file, activityid columns and uniqueid; an Idempotency-Key makes a repeated upload store nothing twice", async () => {
    const { panel, checkout } = await shopPanel();
    const csv = `\uFEFFactivityid,uniqueid,f^total\n${checkout},visitor-1,3\n${checkout},visitor-2,4\n`;
    const first = await postCsv(panel, "file", csv, { "idempotency-key": "nightly-2024-01-13" });
    expect(first.body).toMatchObject({ result: "Success", recorded: 2, duplicates: 0, rejected: 0, errors: [] });
    const again = await postCsv(panel, "file", csv, { "idempotency-key": "nightly-2024-01-13" });
    expect(again.body).toMatchObject({ result: "Success", duplicates: 2 });
    expect(await eventCount(panel.id)).toBe(2);
  });

  it("a pandas export with a product array: each items cell holds the array's JSON (json.dumps), a bad member names its row and field", async () => {
    const { panel } = await shopPanel();
    // df["items"] = df["items"].apply(json.dumps); csv = df.to_csv(index=False)
    // requests.post(url, headers={"api-key": key}, files={"data": ("events.csv", csv, "text/csv")})
    // pandas quotes a cell holding commas or quotes and doubles its quotes (csv.QUOTE_MINIMAL);
    // a float column's 13.0 comes through json.dumps as 13.0.
    const csv = [
      "activity_name,identity,order_id,items",
      'checkout,ada@example.com,SO-1,"[{""prid"": 12, ""name"": ""Kettle"", ""price"": 29.5}, {""prid"": 13.0, ""name"": ""Mug, blue"", ""price"": 12.5}]"',
      'checkout,bo@example.com,SO-2,"[{""prid"": ""twelve""}]"',
      "checkout,cy@example.com,SO-3,[]",
      "checkout,dee@example.com,SO-4,",
      `checkout,eve@example.com,SO-5,"[{'prid': 12, 'name': 'Kettle'}]"`,
      "checkout,fay@example.com,SO-6,12",
      "",
    ].join("\n");
    const answered = await postCsv(panel, "data", csv, { authorization: "", "api-key": panel.apiKey });
    expect(answered.status).toBe(200);
    expect(answered.body).toMatchObject({
      result: "Success",
      recorded: 3,
      rejected: 3,
      errors: [
        { index: 2, field: "activity_params.items.0.prid", message: expect.stringContaining('"twelve"') },
        {
          index: 5,
          field: "activity_params.items",
          message: `must be the array's JSON, e.g. [{"prid":12}], not text that is not JSON (single quotes are Python's repr of a list, not JSON: write the column with json.dumps)`,
        },
        { index: 6, field: "activity_params.items", message: "must be an array of objects (members prid, name, price), not an integer" },
      ],
    });
    const stored = await storedEvents(panel.id);
    expect(stored.map((e) => [e.identity, e.params])).toEqual([
      [
        "ada@example.com",
        {
          order_id: "SO-1",
          items: [
            { prid: 12, name: "Kettle", price: 29.5 },
            { prid: 13, name: "Mug, blue", price: 12.5 },
          ],
        },
      ],
      ["cy@example.com", { order_id: "SO-3", items: [] }],
      ["dee@example.com", { order_id: "SO-4" }],
    ]);
  });

  it("a CSV whose only row has a bad array member is Failed, naming the row and the member, nothing stored", async () => {
    const { panel } = await shopPanel();
    const before = await fullSnapshot(panel.id);
    const csv = 'activity_name,identity,items\r\ncheckout,ada@example.com,"[{""prid"": 12}, {""prid"": 13, ""price"": ""cheap""}]"\r\n';
    const answered = await postCsv(panel, "data", csv);
    expect(answered.status).toBe(400);
    expect(answered.body).toMatchObject({
      result: "Failed",
      recorded: 0,
      rejected: 1,
      message: expect.stringContaining("event 1: activity_params.items.1.price: "),
      errors: [{ index: 1, field: "activity_params.items.1.price", message: expect.stringContaining('"cheap"') }],
    });
    expect(await fullSnapshot(panel.id)).toBe(before);
  });

  it("reads files as spreadsheets save them: blank lines before the header and rows of empty cells skipped (their places kept in index); a Windows-1252 row refused saying why; a column named twice refused", async () => {
    const { panel } = await shopPanel();
    const csv = "\r\nactivity_name,identity,order_id\r\ncheckout,a@example.com,SO-1\r\n,,\r\ncheckout,b@example.com,Caf";
    const boundary = "latin1boundary";
    const bytes = Uint8Array.from(
      [...`--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="events.csv"\r\nContent-Type: text/csv\r\n\r\n${csv}`].map((c) => c.charCodeAt(0)).concat([0xe9], [...`\r\ncheckout,c@example.com,SO-3\r\n\r\n--${boundary}--\r\n`].map((c) => c.charCodeAt(0))),
    );
    const answer = await call(`/v1/activity/batchactivity/${encodeURIComponent(panel.clientId)}`, {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, authorization: `Bearer ${panel.apiKey}` },
      body: bytes,
    }).then(json);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ result: "Success", recorded: 2, rejected: 1, errors: [{ index: 3, message: expect.stringContaining("holds bytes that are not UTF-8") }] });
    expect((await storedEvents(panel.id)).map((e) => e.params.order_id)).toEqual(["SO-1", "SO-3"]);
    const semicolons = await postCsv(panel, "data", "activity_name;identity\ncheckout;a@example.com\n");
    expect(semicolons.status).toBe(400);
    expect(semicolons.body.errors[0].message).toMatch(/^the header row is one column, "activity_name;identity": the file looks separated by semicolons/);
    // Excel's "Unicode Text" (UTF-16LE): every ASCII character followed by a NUL byte.
    const utf16 = await postCsv(panel, "data", [..."activity_name\tidentity\r\ncheckout\ta@example.com\r\n"].map((c) => `${c}\0`).join(""));
    expect(utf16.status).toBe(400);
    expect(utf16.body.errors[0].message).toMatch(/^the header row holds NUL characters: the file looks saved as UTF-16/);
    const twice = await postCsv(panel, "data", "activity_name,identity,identity\ncheckout,a@example.com,b@example.com\n");
    expect(twice.status).toBe(400);
    expect(twice.body.errors[0]).toEqual({ field: "data", message: "header column 3 (identity) appears more than once" });
  });

  it("refuses, with nothing stored: no file field, a header without the activity or contact column, every row bad, more than 10,000 rows, a bad key", async () => {
    const { panel } = await shopPanel();
    const before = await fullSnapshot(panel.id);
    const noField = await postCsv(panel, "upload", "activity_name,identity\ncheckout,a@example.com\n");
    expect(noField.status).toBe(400);
    expect(noField.body.errors[0].field).toBe("data");
    const noActivity = await postCsv(panel, "data", "identity,total\na@example.com,1\n");
    expect(noActivity.body.errors[0]).toEqual({ field: "data", message: "the header must name the activity column: activity_name or activityid" });
    const allBad = await postCsv(panel, "data", "activity_name,identity\nnope,a@example.com\n");
    expect(allBad.status).toBe(400);
    expect(allBad.body).toMatchObject({ result: "Failed", errors: [{ index: 1, field: "activity_name" }] });
    const rows = Array.from({ length: 10_001 }, (_, i) => `checkout,u${i}@example.com`).join("\n");
    const tooMany = await postCsv(panel, "data", `activity_name,identity\n${rows}\n`);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.errors[0]).toEqual({ field: "data", message: "must hold at most 10000 rows after the header" });
    const notMultipart = await post(`/v1/activity/batchactivity/${panel.clientId}`, "activity_name,identity\n");
    expect(notMultipart.status).toBe(400);
    const badKey = await postCsv(panel, "data", "activity_name,identity\ncheckout,a@example.com\n", { authorization: "Bearer not-a-key" });
    expect(badKey.status).toBe(401);
    expect(await fullSnapshot(panel.id)).toBe(before);
  });
});
