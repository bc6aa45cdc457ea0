import { describe, expect, it } from "vitest";
import { formatCts } from "../../src/domain/time";
import { defineActivity, eventCount, storedEvents } from "../support/activity";
import { broadcastData } from "../support/broadcasts";
import { admin, call, createPanel, type TestPanel } from "../support/helpers";

// Client replays (CONTRACT 8): the requests public client programs of this API send, byte for
// byte as their code builds them, against a panel configured as their users configure it. Each
// program is one case; every call it makes must succeed unchanged.

const json = async (response: Response) => ({ status: response.status, headers: response.headers, body: (await response.json()) as any });

async function panelFor(options: Parameters<typeof createPanel>[0], settings: Record<string, unknown> = {}): Promise<TestPanel> {
  const panel = await createPanel(options);
  if (Object.keys(settings).length) expect((await admin("PATCH", `/panels/${panel.id}`, settings)).status).toBe(200);
  return panel;
}

async function listIds(panel: TestPanel, names: string[]): Promise<number[]> {
  const ids: number[] = [];
  for (const listname of names) {
    const created = await json(await call(`/apiv2?type=lists&activity=add&apikey=${encodeURIComponent(panel.apiKey)}&listname=${encodeURIComponent(listname)}`, { method: "POST" }));
    ids.push(created.body.listid);
  }
  return ids;
}

async function contactOf(panel: TestPanel, key: string) {
  return json(await call(`/apiv2?type=contact&activity=view&apikey=${encodeURIComponent(panel.apiKey)}&data=${encodeURIComponent(key)}`));
}

describe("client replays", () => {
  it("a Chrome extension: CRM sidebar adds the open profile (form post from its popup) and records a page view from a content script", async () => {
    const EXTENSION = "chrome-extension://kgbmjdnaclhcbhlnomhkgidhjbkfjjmo";
    // Its users allow the extension's origin and the pages its content script runs on.
    const panel = await panelFor({}, { cors_origins: [EXTENSION, "https://www.linkedin.com"] });
    const [leads] = await listIds(panel, ["LinkedIn leads"]);
    const viewed = await defineActivity(panel, "profile_view", { profile_url: "string", source_page: "string" });

    // popup.js: $.post(API + "/apiv2?type=contact&activity=add&apikey=" + key, {data: JSON.stringify(lead), listid})
    const added = await json(
      await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, {
        method: "POST",
        headers: { origin: EXTENSION, "content-type": "application/x-www-form-urlencoded; charset=UTF-8", "x-requested-with": "XMLHttpRequest" },
        body: `data=${encodeURIComponent(JSON.stringify({ EMAIL: "Priya.Shah@Example.com", NAME: "Priya Shah", CITY: "Pune" }))}&listid=${leads}`,
      }),
    );
    expect(added.status).toBe(200);
    expect(added.headers.get("access-control-allow-origin")).toBe(EXTENSION);
    expect(added.body.contact).toEqual({ EMAIL: "priya.shah@example.com", NAME: "Priya Shah", CITY: "Pune" });

    // content.js on linkedin.com: fetch(JSON) needs a preflight, then the post; params unprefixed.
    const path = `/v1/activity/singleactivity/${panel.clientId}`;
    const pre = await call(path, {
      method: "OPTIONS",
      headers: { origin: "https://www.linkedin.com", "access-control-request-method": "POST", "access-control-request-headers": "content-type" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-origin")).toBe("https://www.linkedin.com");
    const posted = await json(
      await call(path, {
        method: "POST",
        headers: { origin: "https://www.linkedin.com", "content-type": "application/json" },
        body: JSON.stringify({
          activityid: viewed,
          identity: "priya.shah@example.com",
          uniqueid: "ext-7f3a",
          activity_source: "WEB",
          timestamp: Date.now(),
          activity_params: { profile_url: "https://www.linkedin.com/in/priya", source_page: "search" },
        }),
      }),
    );
    expect(posted.status).toBe(200);
    expect(posted.headers.get("access-control-allow-origin")).toBe("https://www.linkedin.com");
    expect((await storedEvents(panel.id))[0]).toMatchObject({ name: "profile_view", source: "web", params: { profile_url: "https://www.linkedin.com/in/priya", source_page: "search" } });
  });

  it("a Firefox extension: Activity API v2 upload with a Bearer key, preflighted", async () => {
    const EXTENSION = "moz-extension://5a1e0c2b-8f7d-4c3e-9b1a-2d4f6e8a0c1b";
    const panel = await panelFor({}, { cors_origins: [EXTENSION] });
    await defineActivity(panel, "tab_read", { title: "string", seconds: "integer" });
    const pre = await call("/v1/activity/upload", {
      method: "OPTIONS",
      headers: { origin: EXTENSION, "access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type" },
    });
    expect(pre.status).toBe(204);
    expect(pre.headers.get("access-control-allow-headers")).toBe("authorization,content-type");
    const uploaded = await json(
      await call("/v1/activity/upload", {
        method: "POST",
        headers: { origin: EXTENSION, authorization: `Bearer ${panel.apiKey}`, "content-type": "application/json" },
        body: JSON.stringify([
          { activity_name: "tab_read", uniqueid: "ff-1", timestamp: new Date().toISOString(), activity_source: "web", activity_params: { title: "Docs", seconds: "42" } },
          { activity_name: "tab_read", uniqueid: "ff-1", timestamp: new Date().toISOString(), activity_source: "web", activity_params: { title: "Blog", seconds: 7 } },
        ]),
      }),
    );
    expect(uploaded.status).toBe(200);
    expect(uploaded.body).toMatchObject({ result: "Success", recorded: 2 });
    expect(uploaded.headers.get("access-control-allow-origin")).toBe(EXTENSION);
    expect((await storedEvents(panel.id)).map((e) => e.params)).toEqual([{ title: "Docs", seconds: 42 }, { title: "Blog", seconds: 7 }]);
  });

  it("a Django app: signup view syncs the user (requests form post, model field names, several lists)", async () => {
    // Its users keep the default schema and let the sync drop fields the panel does not know.
    const panel = await panelFor({ timezone: "Asia/Kolkata" }, { unknown_attributes: "ignore" });
    const [newsletter, customers] = await listIds(panel, ["Newsletter", "Customers"]);
    // requests.post(f"{BASE}/apiv2", params={"type": "contact", "activity": "add", "apikey": KEY},
    //               data={"data": json.dumps(payload), "listid": ",".join(map(str, lists))})
    const payload = { EMAIL: "arjun@example.in", FIRST_NAME: "Arjun", LAST_NAME: "Mehta", NAME: "Arjun Mehta", MOBILE: "+91 98200 12345", AGE: "34", DATE_JOINED: "2024-01-13 13:03:01" };
    const response = await json(
      await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": "python-requests/2.31.0" },
        body: new URLSearchParams({ data: JSON.stringify(payload), listid: `${newsletter},${customers}` }).toString(),
      }),
    );
    expect(response.status).toBe(200);
    expect(response.body.contact).toEqual({ EMAIL: "arjun@example.in", NAME: "Arjun Mehta", MOBILE: "+91 98200 12345", AGE: 34 });
    expect(response.body.ignored).toEqual(["FIRST_NAME", "LAST_NAME", "DATE_JOINED"]);
    expect((await contactOf(panel, "arjun@example.in")).body.lists.map((l: any) => l.id)).toEqual([newsletter, customers]);
  });

  it("a Celery task: order events pushed in bulk with epoch times and store sources", async () => {
    const panel = await panelFor({ timezone: "Asia/Kolkata" });
    await defineActivity(panel, "purchase", { order_id: "string", amount: "float", items: "integer" });
    const now = Date.now();
    // session.post(f"{BASE}/v1/activity/upload?apikey={KEY}", json=[{... "timestamp": int(order.created.timestamp()) ...}])
    const events = [
      { activity_name: "purchase", identity: "arjun@example.in", timestamp: Math.floor(now / 1000) - 600, activity_source: "CUS", activity_params: { order_id: "A-1001", amount: "1499.00", items: 2 } },
      { activity_name: "Purchase", identity: "meera@example.in", timestamp: (now - 300_000) / 1000, activity_source: "pos", activity_params: { order_id: "A-1002", amount: 250, items: "1" } },
      { activity_name: "purchase", identity: "arjun@example.in", timestamp: String(now - 60_000), activity_source: "offline", activity_params: { order_id: "A-1003", amount: 99.5, items: 1 } },
    ];
    const response = await json(
      await call(`/v1/activity/upload?apikey=${encodeURIComponent(panel.apiKey)}`, {
        method: "POST",
        headers: { "content-type": "application/json", "idempotency-key": "celery-task-9f1c" },
        body: JSON.stringify(events),
      }),
    );
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ result: "Success", recorded: 3, duplicates: 0 });
    const stored = await storedEvents(panel.id);
    expect(stored.map((e) => [e.source, e.params.amount, e.params.items])).toEqual([
      // Other systems' names are kept as sent (CONTRACT 10).
      ["CUS", 1499, 2],
      ["pos", 250, 1],
      ["offline", 99.5, 1],
    ]);
    // The task retries after a timeout: nothing is stored twice.
    const retried = await json(await call(`/v1/activity/upload?apikey=${encodeURIComponent(panel.apiKey)}`, { method: "POST", headers: { "content-type": "application/json", "idempotency-key": "celery-task-9f1c" }, body: JSON.stringify(events) }));
    expect(retried.body).toMatchObject({ recorded: 3, duplicates: 3 });
    expect(await eventCount(panel.id)).toBe(3);
  });

  it("a PHP script: cron job updates contacts from MySQL rows (numbers as strings) and records an order with date('ymdHis')", async () => {
    // Its users key contacts by mobile number, in India.
    const panel = await panelFor({ primary_key: "MOBILE", timezone: "Asia/Kolkata" });
    await admin("PUT", `/panels/${panel.id}/attributes/WALLET`, { type: "float" });
    const order = await defineActivity(panel, "order_placed", { amount: "float", qty: "integer", sku: "string" });
    const [all] = await listIds(panel, ["All customers"]);
    // $row = mysqli_fetch_assoc(...): every column a string. file_get_contents($url . http_build_query([...]))
    const row = { MOBILE: "9155892115", NAME: "Ravi Kumar", AGE: "41", WALLET: "120.45", CITY: "Lucknow" };
    const query = new URLSearchParams({ type: "contact", activity: "add", apikey: panel.apiKey, data: JSON.stringify(row), listid: String(all) });
    const added = await json(await call(`/apiv2?${query}`));
    expect(added.status).toBe(200);
    expect(added.body.contact).toEqual({ MOBILE: "9155892115", NAME: "Ravi Kumar", AGE: 41, WALLET: 120.45, CITY: "Lucknow" });
    const update = new URLSearchParams({ type: "contact", activity: "update", apikey: panel.apiKey, data: JSON.stringify({ MOBILE: "9155892115", WALLET: "-3" }) });
    expect((await json(await call(`/apiv2?${update}`))).body.contact.WALLET).toBe(-3);
    // curl_setopt($ch, CURLOPT_POSTFIELDS, json_encode([... 'cts' => date('ymdHis') ...]))
    const cts = formatCts(Date.now() - 120_000, "Asia/Kolkata");
    const posted = await json(
      await call(`/v1/activity/singleactivity/${panel.clientId}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ activityid: order, identity: "9155892115", cts, activity_source: "Web", activity_params: [{ "f^amount": "799.00", "i^qty": "2", "s^sku": 4411 }] }),
      }),
    );
    expect(posted.status).toBe(200);
    expect(posted.body.journeys).toBeUndefined();
    expect((await storedEvents(panel.id))[0]).toMatchObject({ identity: "9155892115", params: { amount: 799, qty: 2, sku: "4411" } });
  });

  it("a Next.js plugin: the checkout route handler records add_to_cart through Activity API v2 with its asset id", async () => {
    const panel = await panelFor({ primary_key: "MOBILE", timezone: "Asia/Kolkata" });
    await defineActivity(panel, "add_to_cart", { amount: "float", prid: "string", prqt: "integer", date: "string" });
    // await fetch(`${baseUrl}/v1/activity/upload`, { method: "POST", headers: { Authorization: `Bearer ${apiKey}`,
    //   "Content-Type": "application/json", "X-Netcore-Asset-Id": assetId }, body: JSON.stringify(events) })
    const response = await json(
      await call("/v1/activity/upload", {
        method: "POST",
        headers: { authorization: `Bearer ${panel.apiKey}`, "content-type": "application/json", "x-netcore-asset-id": "ADGMOT35CHFLVDHBJNIG50K96A9IQLP0" },
        body: JSON.stringify([
          {
            asset_id: "ADGMOT35CHFLVDHBJNIG50K96A9IQLP0",
            activity_name: "add_to_cart",
            timestamp: "2024-01-13T20:30:28+05:30",
            identity: "9155892115",
            activity_source: "web",
            activity_params: { amount: 120.45, prid: "ib2931", prqt: 22, date: "2024-01-13 13:03:01" },
          },
          {
            activity_name: "add_to_cart",
            timestamp: new Date().toISOString(),
            identity: "9155892115",
            activity_source: "web",
            activity_params: { amount: 80, prid: "ib2932", prqt: 1, date: "2024-01-14 09:00:00" },
          },
        ]),
      }),
    );
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ result: "Success", recorded: 2, journeys: "skipped: older than 24 hours", journeys_skipped: [0] });
    const stored = await storedEvents(panel.id);
    expect(stored.map((e) => e.asset_id)).toEqual(["ADGMOT35CHFLVDHBJNIG50K96A9IQLP0", "ADGMOT35CHFLVDHBJNIG50K96A9IQLP0"]);
    expect(stored[0]!.occurred_at).toBe(Date.UTC(2024, 0, 13, 15, 0, 28));
  });

  it("a Strapi plugin: lifecycle hooks sync entries as JSON bodies (addsync, lower-case keys, listid arrays) and new fields are created", async () => {
    // Its users let the plugin create fields for the content type's attributes.
    const panel = await panelFor({}, { unknown_attributes: "create" });
    const lists = await listIds(panel, ["Blog subscribers", "Authors"]);
    // axios.post(`${url}/apiv2`, { type: "contact", activity: "addsync", apikey, data: entry, listid: lists })
    const created = await json(
      await call("/apiv2", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body: JSON.stringify({ type: "contact", activity: "addsync", apikey: panel.apiKey, data: { email: "lena@example.org", name: "Lena", company: "Acme", plan: "pro" }, listid: lists }),
      }),
    );
    expect(created.status).toBe(200);
    expect(created.body.contact).toEqual({ EMAIL: "lena@example.org", NAME: "Lena", COMPANY: "Acme", PLAN: "pro" });
    expect(created.body.created).toEqual(["COMPANY", "PLAN"]);
    // afterUpdate: the same shape with the update activity; the fields exist now.
    const updated = await json(
      await call("/apiv2", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ type: "contact", activity: "update", apikey: panel.apiKey, data: { email: "lena@example.org", plan: "team" } }),
      }),
    );
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ contact: { PLAN: "team" } });
    expect(updated.body.created).toBeUndefined();
    expect((await contactOf(panel, "lena@example.org")).body.lists.map((l: any) => l.id)).toEqual(lists);
  });

  it("an Airflow hook: HttpHook with a Bearer header checks lists, then loads a warehouse extract in chunks of 1,000", async () => {
    const panel = await panelFor({ timezone: "UTC" });
    await defineActivity(panel, "page_view", { url: "string", duration: "float", scroll: "integer" });
    // HttpHook(method="GET", http_conn_id=...).run("/apiv2?type=lists&activity=getall", headers={"Authorization": f"Bearer {key}"})
    const lists = await json(await call("/apiv2?type=lists&activity=getall", { headers: { authorization: `Bearer ${panel.apiKey}` } }));
    expect(lists.status).toBe(200);
    expect(lists.body.lists).toEqual([]);
    // A pandas extract: every cell a string; times as epoch milliseconds.
    const base = Date.now() - 3_600_000;
    const rows = Array.from({ length: 1500 }, (_, i) => ({
      activity_name: "page_view",
      identity: `reader${i % 300}@example.com`,
      timestamp: String(base + i * 1000),
      activity_source: "web",
      activity_params: { url: `/post/${i % 40}`, duration: `${(i % 90) + 0.5}`, scroll: `${i % 101}` },
    }));
    for (let start = 0; start < rows.length; start += 1000) {
      const chunk = await json(
        await call("/v1/activity/upload", {
          method: "POST",
          headers: { authorization: `Bearer ${panel.apiKey}`, "content-type": "application/json" },
          body: JSON.stringify(rows.slice(start, start + 1000)),
        }),
      );
      expect(chunk.status).toBe(200);
      expect(chunk.body.recorded).toBe(Math.min(1000, rows.length - start));
    }
    expect(await eventCount(panel.id)).toBe(1500);
  });

  it("a PHP script and a shell script: json_encode posted with curl, which labels it form-urlencoded, is read as the JSON body it is", async () => {
    const panel = await panelFor({});
    // curl_setopt($ch, CURLOPT_POSTFIELDS, json_encode([...])) without CURLOPT_HTTPHEADER: curl sends
    // Content-Type: application/x-www-form-urlencoded, as `curl -d '{...}'` does.
    const curl = (path: string, body: unknown) =>
      call(path, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", "user-agent": "curl/8.5.0" }, body: JSON.stringify(body) }).then(json);
    const list = await curl("/apiv2", { type: "lists", activity: "add", apikey: panel.apiKey, listname: "From cron" });
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ result: "Success", listid: 1 });
    const added = await curl(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, { data: { EMAIL: "Cron@Example.com", NAME: "Cron" }, listid: list.body.listid });
    expect(added.status).toBe(200);
    expect(added.body.contact).toEqual({ EMAIL: "cron@example.com", NAME: "Cron" });
    expect((await contactOf(panel, "cron@example.com")).body.lists).toEqual([{ id: 1, listname: "From cron" }]);
    // 4.10 with the whole body the data object, as its reference's curl sample posts it.
    const data = await broadcastData();
    const published = await curl(`/apiv2?type=email_broadcast&activity=upload_contact_and_publish&apikey=${panel.apiKey}`, data);
    expect(published.status).toBe(200);
    expect(published.body).toMatchObject({ success: true, payload: data });
    // A form body whose first name merely starts with a brace is still a form.
    const form = await call(`/apiv2?type=lists&activity=add&apikey=${panel.apiKey}`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "{x=1&listname=Braces" }).then(json);
    expect(form.status).toBe(200);
    expect((await json(await call(`/apiv2?type=lists&activity=getall&apikey=${panel.apiKey}`))).body.lists.map((l: any) => l.listname)).toContain("Braces");
  });

  it("a TypeScript service: an SDK with Bearer auth and JSON bodies, reading failures from the envelope body", async () => {
    const panel = await panelFor({});
    const sdk = (path: string, body?: unknown) =>
      call(path, {
        method: body === undefined ? "GET" : "POST",
        headers: { authorization: `Bearer ${panel.apiKey}`, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).then(json);
    const list = await sdk("/apiv2", { type: "lists", activity: "add", listname: "Trial users", desc: "from the SDK" });
    expect(list.status).toBe(200);
    const added = await sdk("/apiv2", { type: "contact", activity: "add", data: { EMAIL: "dev@example.com", AGE: 29 }, listid: [list.body.listid] });
    expect(added.status).toBe(200);
    // The SDK turns { result: "Failed", message } into an error; these must be envelope bodies.
    const missing = await sdk("/apiv2", { type: "contact", activity: "add" });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({ result: "Failed", message: "data: is required: a JSON object" });
    const unknown = await sdk("/apiv2/contact/add", { data: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ result: "Failed", requestid: expect.stringMatching(/^[0-9a-f]{32}$/) });
    const typo = await sdk("/apiv2", { type: "contact", activity: "add", data: { EMAIL: "dev2@example.com", FIRST_NAME: "Dev" } });
    expect(typo.status).toBe(400);
    expect(typo.body.message).toContain("did you mean FIRSTNAME?");
  });
});
