import { describe, expect, it } from "vitest";
import { defineActivity, postActivity } from "../support/activity";
import { broadcastData } from "../support/broadcasts";
import { admin, call, createPanel, panelSnapshot, type TestPanel } from "../support/helpers";
import { createWebhook } from "../support/webhooks";

/** JSON text nesting `levels` objects: {"a":{"a":…1…}}. */
function nested(levels: number): string {
  return `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;
}

const ADMIN_HEADERS = { authorization: "Bearer test-admin-token", "content-type": "application/json" };

async function send(path: string, body: string | URLSearchParams, headers: Record<string, string> = { "content-type": "application/json" }) {
  const response = await call(path, { method: "POST", headers, body });
  const text = await response.text();
  expect(response.headers.get("content-type")).toMatch(/^application\/json/);
  return { status: response.status, body: JSON.parse(text) };
}

describe("deeply nested JSON is refused with a 400 that says so, on every route that reads JSON", () => {
  let panel: TestPanel;
  const depthMessage = /nests deeper than 32 levels/;

  it("the envelope: a JSON body, data as JSON text, and the broadcast's data", async () => {
    panel = await createPanel();
    const before = await panelSnapshot(panel.id);
    const envelopeUrl = `/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`;
    const jsonBody = await send(envelopeUrl, `{"data":${nested(40)}}`);
    expect(jsonBody.status).toBe(400);
    expect(jsonBody.body).toMatchObject({ result: "Failed", errors: [{ field: "body", message: expect.stringMatching(depthMessage) }] });
    const formData = await send(envelopeUrl, new URLSearchParams({ data: nested(10_000) }), { "content-type": "application/x-www-form-urlencoded" });
    expect(formData.status).toBe(400);
    expect(formData.body.errors).toEqual([{ field: "data", message: expect.stringMatching(depthMessage) }]);

    // 4.10 echoes the payload in its failure body: the echo must not overflow either.
    const broadcastUrl = `/apiv2?type=email_broadcast&activity=upload_contact_and_publish&apikey=${panel.apiKey}`;
    const data = await broadcastData({ tags: JSON.parse(nested(20)) });
    const deepText = JSON.stringify(data).replace(/"tags":\{.*\}\}/, `"tags":${nested(10_000)}}`);
    const asText = await send(broadcastUrl, new URLSearchParams({ data: deepText }), { "content-type": "application/x-www-form-urlencoded" });
    expect(asText.status).toBe(400);
    expect(asText.body).toMatchObject({ success: false, CampaignID: "", message: expect.stringMatching(depthMessage) });
    const asBody = await send(broadcastUrl, deepText);
    expect(asBody.status).toBe(400);
    expect(asBody.body).toMatchObject({ success: false, CampaignID: "", message: expect.stringMatching(depthMessage) });
    expect(await panelSnapshot(panel.id)).toBe(before);
  });

  it("single activity, activity batch and channel events", async () => {
    panel = await createPanel();
    await defineActivity(panel, "viewed", { name: "string" });
    const single = await postActivity(panel.clientId, `{"activityid":"1","identity":"a@example.com","activity_params":${nested(33)}}`, { raw: true });
    expect(single.status).toBe(400);
    expect(single.body.errors).toEqual([{ field: "body", message: expect.stringMatching(depthMessage) }]);
    const batch = await send(`/v1/activity/batch/${panel.clientId}`, `[{"activityid":"1","identity":"a@example.com","activity_params":${nested(40)}}]`);
    expect(batch.status).toBe(400);
    expect(batch.body.message).toMatch(depthMessage);
    const channel = await send(`/v1/events/sms/${panel.clientId}`, `{"msgid":"m","event":"delivered","x":${nested(10_000)}}`);
    expect(channel.status).toBe(400);
    expect(channel.body.message).toMatch(depthMessage);
  });

  it("admin bodies: webhook events with deep custom_params", async () => {
    panel = await createPanel();
    const hook = await createWebhook(panel, {}, false);
    const event = `{"channel":"email","event":"open","journey_name":"J","custom_params":${nested(10_000)}}`;
    const response = await send(`/admin/v1${hook.path}/events`, `{"events":[${event}]}`, ADMIN_HEADERS);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ error: expect.stringMatching(depthMessage), errors: [{ field: "body", message: expect.stringMatching(depthMessage) }] });
    const shallow = await admin("POST", `${hook.path}/events`, { events: [{ channel: "email", event: "open", journey_name: "J", custom_params: JSON.parse(nested(29)) }] });
    expect(shallow.status).toBe(202);
  });
});

describe("members named __proto__ are refused with a message naming where", () => {
  it("in an activity definition's params, activity_params (any spelling) and the envelope's data", async () => {
    const panel = await createPanel();
    const defined = await send(`/admin/v1/panels/${panel.id}/activities`, '{"name":"viewed","params":{"__proto__":"string"}}', ADMIN_HEADERS);
    expect(defined.status).toBe(400);
    expect(defined.body.errors).toEqual([{ field: "params.__proto__", message: "__proto__ is not allowed as a member name" }]);
    expect((await admin("GET", `/panels/${panel.id}/activities`)).body.activities).toEqual([]);

    await defineActivity(panel, "viewed", { name: "string" });
    for (const name of ["__proto__", "\\u005f_proto\\u005f_"]) {
      const event = await postActivity(panel.clientId, `{"activityid":"1","identity":"a@example.com","activity_params":{"s^name":"x","${name}":{"s^name":"y"}}}`, { raw: true });
      expect(event.status).toBe(400);
      expect(event.body.errors).toEqual([{ field: "activity_params.__proto__", message: "__proto__ is not allowed as a member name" }]);
    }

    const before = await panelSnapshot(panel.id);
    const added = await send(
      `/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`,
      new URLSearchParams({ data: '{"EMAIL":"p@example.com","__proto__":{"NAME":"x"}}' }),
      { "content-type": "application/x-www-form-urlencoded" },
    );
    expect(added.status).toBe(400);
    expect(added.body.errors).toEqual([{ field: "data.__proto__", message: "__proto__ is not allowed as a member name" }]);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });
});

describe("invalid UTF-8 is refused with a 400 naming the field, whatever carries it", () => {
  const utf8Error = (field: string) => ({ field, message: "is not valid UTF-8" });
  /** Bytes of `before`, then the invalid byte 0xFF, then `after`. */
  const withBadByte = (before: string, after: string) => new Uint8Array([...new TextEncoder().encode(before), 0xff, ...new TextEncoder().encode(after)]);

  it("in the envelope's query, form, JSON and multipart bodies", async () => {
    const panel = await createPanel();
    const before = await panelSnapshot(panel.id);
    const base = `/apiv2?type=lists&activity=add&apikey=${panel.apiKey}`;
    const inQuery = await call(`${base}&listname=Caf%C3%A9%FF`);
    expect(inQuery.status).toBe(400);
    expect(((await inQuery.json()) as any).errors).toEqual([utf8Error("listname")]);

    const form = await call(base, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "desc=fine&listname=Caf%C3%A9%C3" });
    expect(form.status).toBe(400);
    expect(((await form.json()) as any).errors).toEqual([utf8Error("listname")]);

    const rawForm = await call(base, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: withBadByte("listname=Caf", "") });
    expect(rawForm.status).toBe(400);
    expect(((await rawForm.json()) as any).errors).toEqual([utf8Error("listname")]);

    const json = await call(base, { method: "POST", headers: { "content-type": "application/json" }, body: withBadByte('{"desc":"ok","listname":"Caf', '"}') });
    expect(json.status).toBe(400);
    expect(((await json.json()) as any).errors).toEqual([utf8Error("listname")]);

    const boundary = "----b";
    const multipart = withBadByte(`--${boundary}\r\nContent-Disposition: form-data; name="listname"\r\n\r\nCaf`, `\r\n--${boundary}--\r\n`);
    const parts = await call(base, { method: "POST", headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, body: multipart });
    expect(parts.status).toBe(400);
    expect(((await parts.json()) as any).errors).toEqual([utf8Error("listname")]);

    const contact = await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `data=${encodeURIComponent('{"EMAIL":"u@example.com","NAME":"').replace(/%22$/, "")}%22%E2%82%22%7D`,
    });
    expect(contact.status).toBe(400);
    expect(((await contact.json()) as any).errors).toEqual([utf8Error("data")]);
    expect(await panelSnapshot(panel.id)).toBe(before);

    // Valid text, U+FFFD itself included, is taken as it is.
    const fine = await call(`${base}&listname=Caf%C3%A9%20%EF%BF%BD`);
    expect(fine.status).toBe(200);
  });

  it("in admin and activity bodies, naming the member", async () => {
    const panel = await createPanel();
    const named = await call("/admin/v1/panels", { method: "POST", headers: ADMIN_HEADERS, body: withBadByte('{"name":"Shop', '"}') });
    expect(named.status).toBe(400);
    expect(((await named.json()) as any).errors).toEqual([utf8Error("name")]);

    await defineActivity(panel, "viewed", { name: "string" });
    const event = await call(`/v1/activity/singleactivity/${panel.clientId}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: withBadByte('{"activityid":"1","identity":"a@example.com","activity_params":{"s^name":"Kett', 'le"}}'),
    });
    expect(event.status).toBe(400);
    expect(((await event.json()) as any).errors).toEqual([utf8Error("activity_params.s^name")]);
  });
});

describe("compressed request bodies (Content-Encoding) are read as what they hold", () => {
  const gzip = async (text: string, format: "gzip" | "deflate" = "gzip") =>
    new Uint8Array(await new Response(new Response(text).body!.pipeThrough(new CompressionStream(format))).arrayBuffer());

  it("an SDK's gzipped upload, envelope call and CSV batch; deflate too", async () => {
    const panel = await createPanel();
    await defineActivity(panel, "viewed", { name: "string" });
    // OkHttp's GzipRequestInterceptor, or requests.post(url, data=gzip.compress(body), headers={"Content-Encoding": "gzip"}).
    const upload = await call("/v1/activity/upload", {
      method: "POST",
      headers: { authorization: `Bearer ${panel.apiKey}`, "content-type": "application/json", "content-encoding": "gzip" },
      body: await gzip(JSON.stringify([{ activity_name: "viewed", identity: "gz@example.com", activity_params: { name: "Kettle" } }])),
    });
    expect(upload.status).toBe(200);
    expect(await upload.json()).toMatchObject({ result: "Success", recorded: 1 });

    const added = await call(`/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", "content-encoding": "deflate" },
      body: await gzip(`data=${encodeURIComponent(JSON.stringify({ EMAIL: "deflate@example.com", NAME: "Ada" }))}`, "deflate"),
    });
    expect(added.status).toBe(200);
    expect(((await added.json()) as any).contact).toEqual({ EMAIL: "deflate@example.com", NAME: "Ada" });

    const boundary = "c0ffee";
    const csv = `--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="e.csv"\r\n\r\nactivity_name,identity,name\r\nviewed,csv@example.com,Pot\r\n--${boundary}--\r\n`;
    const batch = await call(`/v1/activity/batchactivity/${panel.clientId}`, {
      method: "POST",
      headers: { "content-type": `multipart/form-data; boundary=${boundary}`, "content-encoding": "gzip" },
      body: await gzip(csv),
    });
    expect(batch.status).toBe(200);
    expect(await batch.json()).toMatchObject({ result: "Success", recorded: 1 });
  });

  it("bytes that are not what their coding says: 400; a coding it cannot decode: 415; decoded past the limit: 413", async () => {
    const panel = await createPanel();
    const before = await panelSnapshot(panel.id);
    const url = `/apiv2?type=lists&activity=add&apikey=${panel.apiKey}`;
    const notGzip = await call(url, { method: "POST", headers: { "content-type": "application/json", "content-encoding": "gzip" }, body: '{"listname":"Plain"}' });
    expect(notGzip.status).toBe(400);
    expect(((await notGzip.json()) as any).errors).toEqual([{ field: "body", message: "is not valid gzip data, as its Content-Encoding says" }]);
    const brotli = await call(url, { method: "POST", headers: { "content-type": "application/json", "content-encoding": "br" }, body: "\x0b\x02\x80" });
    expect(brotli.status).toBe(415);
    expect(((await brotli.json()) as any).errors).toEqual([{ field: "Content-Encoding", message: "must be gzip or deflate (or none), not br" }]);
    // A few KB that inflate past 1 MiB are refused as the body they are.
    const bomb = await call(url, { method: "POST", headers: { "content-type": "application/json", "content-encoding": "gzip" }, body: await gzip(`{"listname":"${"x".repeat(2 * 1024 * 1024)}"}`) });
    expect(bomb.status).toBe(413);
    expect(await panelSnapshot(panel.id)).toBe(before);
  });
});
