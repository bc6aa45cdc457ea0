import { describe, expect, it } from "vitest";
import { defineActivity } from "../support/activity";
import { call, createPanel, envelope } from "../support/helpers";
import { MAX_BODY_BYTES } from "../../src/lib/http/body";

describe("the apiv2 envelope", () => {
  it("reads the envelope from the query and data from a form body", async () => {
    const panel = await createPanel();
    const query = new URLSearchParams({ type: "contact", activity: "add", apikey: panel.apiKey });
    const response = await call(`/apiv2?${query}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ data: JSON.stringify({ EMAIL: "q@example.com" }) }).toString(),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("application/json");
  });

  it("lets the body win over the query", async () => {
    const panel = await createPanel();
    const query = new URLSearchParams({ type: "contact", activity: "view", apikey: panel.apiKey, data: "{bad" });
    const response = await call(`/apiv2?${query}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ activity: "add", data: JSON.stringify({ EMAIL: "body@example.com" }) }).toString(),
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { contact: unknown }).contact).toEqual({ EMAIL: "body@example.com" });
  });

  it("reads a body without content type the way curl -d sends it", async () => {
    const panel = await createPanel();
    const body = new URLSearchParams({ type: "lists", activity: "add", apikey: panel.apiKey, listname: "Curl" }).toString();
    const response = await call("/apiv2", { method: "POST", body, headers: { "content-type": "" } });
    expect(response.status).toBe(200);
  });

  it("reads a browser's multipart body: its boundary is mixed case (FormData from jQuery's $.ajax or fetch)", async () => {
    const panel = await createPanel();
    // $.ajax({ url, type: "POST", data: new FormData(form), processData: false, contentType: false }) in Chrome.
    const boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW";
    const fields = { type: "contact", activity: "add", apikey: panel.apiKey, data: JSON.stringify({ EMAIL: "form@example.com", NAME: "Ada" }) };
    const body =
      Object.entries(fields).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`).join("") + `--${boundary}--\r\n`;
    const response = await call("/apiv2", { method: "POST", headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, body });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { contact: unknown }).contact).toEqual({ EMAIL: "form@example.com", NAME: "Ada" });
  });

  it(".NET's HttpClient multipart body: part names without quotes, each part with its own content type, the boundary quoted", async () => {
    const panel = await createPanel();
    // var form = new MultipartFormDataContent { { new StringContent("contact"), "type" }, ... }; await client.PostAsync(url, form);
    const boundary = "0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b";
    const fields = { type: "contact", activity: "add", apikey: panel.apiKey, data: JSON.stringify({ EMAIL: "dotnet@example.com", CITY: "Pune" }) };
    const body =
      Object.entries(fields)
        .map(([name, value]) => `--${boundary}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Disposition: form-data; name=${name}\r\n\r\n${value}\r\n`)
        .join("") + `--${boundary}--\r\n`;
    const response = await call("/apiv2", { method: "POST", headers: { "content-type": `multipart/form-data; boundary="${boundary}"` }, body });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { contact: unknown }).contact).toEqual({ EMAIL: "dotnet@example.com", CITY: "Pune" });
  });

  it("404 names an unknown version, type or activity; activity is case sensitive", async () => {
    const panel = await createPanel();
    const version = await call("/apiv3?type=contact&activity=add");
    expect(version.status).toBe(404);
    expect(await version.json()).toMatchObject({ result: "Failed", errors: [{ field: "version" }] });

    const type = await envelope({ type: "contacts", activity: "add", apikey: panel.apiKey });
    expect(type.status).toBe(404);
    expect(type.body).toMatchObject({ result: "Failed", errors: [{ field: "type" }] });

    const activity = await envelope({ type: "contact", activity: "Add", apikey: panel.apiKey, data: { EMAIL: "c@example.com" } });
    expect(activity.status).toBe(404);
    expect(activity.body.errors[0].field).toBe("activity");
    expect(activity.body.message).toContain('"Add"');

    const upperType = await envelope({ type: "Contact", activity: "add", apikey: panel.apiKey });
    expect(upperType.status).toBe(404);
  });

  it("400 when type or activity is missing", async () => {
    const panel = await createPanel();
    expect((await envelope({ activity: "add", apikey: panel.apiKey })).body.errors[0].field).toBe("type");
    expect((await envelope({ type: "contact", apikey: panel.apiKey })).body.errors[0].field).toBe("activity");
  });

  it("refuses a body over the limit with 413", async () => {
    const panel = await createPanel();
    const big = "x".repeat(MAX_BODY_BYTES + 10);
    const query = new URLSearchParams({ type: "contact", activity: "add", apikey: panel.apiKey });
    const response = await call(`/apiv2?${query}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `data=${big}`,
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ result: "Failed", errors: [{ field: "body" }] });
  });

  it("refuses a JSON body that is not an object", async () => {
    const response = await call("/apiv2", { method: "POST", headers: { "content-type": "application/json" }, body: "[1]" });
    expect(response.status).toBe(400);
    const bad = await call("/apiv2", { method: "POST", headers: { "content-type": "application/json" }, body: "{oops" });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ result: "Failed", errors: [{ field: "body" }] });
  });

  it("refuses other methods with 405", async () => {
    const response = await call("/apiv2?type=lists&activity=getall", { method: "DELETE" });
    expect(response.status).toBe(405);
  });

  it("a path with a doubled slash (a base URL ending in / joined to /apiv2) is the API's path, as servers merging slashes answer it", async () => {
    const panel = await createPanel();
    await defineActivity(panel, "viewed");
    // BASE_URL = "https://api.example.com/"; requests.get(BASE_URL + "/apiv2", params=...)
    const lists = await call(`//apiv2?type=lists&activity=getall&apikey=${panel.apiKey}`);
    expect(lists.status).toBe(200);
    expect(await lists.json()).toMatchObject({ result: "Success", lists: [] });
    const upload = await call("//v1/activity/upload", {
      method: "POST",
      headers: { authorization: `Bearer ${panel.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify([{ activity_name: "viewed", identity: "slash@example.com" }]),
    });
    expect(upload.status).toBe(200);
    expect(await upload.json()).toMatchObject({ result: "Success", recorded: 1 });
    const single = await call(`/v1//activity/singleactivity/${panel.clientId}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ activityid: 1, identity: "slash@example.com" }),
    });
    expect(single.status).toBe(200);
    // Still unknown when merged: the envelope's 404, naming the path as merged.
    const unknown = await call("//v1//activity/uploads", { method: "POST" });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ result: "Failed", message: "path: no route POST /v1/activity/uploads" });
  });

  it("unknown paths are 404 JSON", async () => {
    const response = await call("/nope/deeper");
    expect(response.status).toBe(404);
  });

  it.each([
    ["GET", "/apiv2/contacts"],
    ["POST", "/apiv2/activity/nothing/here"],
    ["POST", "/v1/activity/uploads"],
    ["GET", "/v1/anything"],
    ["DELETE", "/apiv2/jobs/job_1/errors.csv"],
  ])("%s %s, unknown under the public API: 404 in the envelope's Failed body", async (method, path) => {
    const response = await call(path, { method });
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toContain("application/json");
    expect(await response.json()).toEqual({
      requestid: expect.stringMatching(/^[0-9a-f]{32}$/),
      result: "Failed",
      message: `path: no route ${method} ${path}`,
      errors: [{ field: "path", message: `unknown path ${path}` }],
    });
  });
});
