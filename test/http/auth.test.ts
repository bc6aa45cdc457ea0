import { describe, expect, it } from "vitest";
import { admin, call, createPanel, envelope } from "../support/helpers";
import { NOT_AUTHENTICATED } from "../../src/lib/http/credentials";

async function getAll(apikey: string | undefined) {
  const params: Record<string, string> = { type: "lists", activity: "getall" };
  if (apikey !== undefined) params.apikey = apikey;
  return envelope(params, "query");
}

function expectUnauthenticated(result: { status: number; body: any }) {
  expect(result.status).toBe(401);
  expect(result.body.result).toBe("Failed");
  expect(result.body.message).toBe(NOT_AUTHENTICATED);
}

describe("API key authentication", () => {
  it("accepts the panel's key", async () => {
    const panel = await createPanel();
    expect((await getAll(panel.apiKey)).status).toBe(200);
  });

  it("refuses a missing, empty or wrong key with the same message", async () => {
    const panel = await createPanel();
    expectUnauthenticated(await getAll(undefined));
    expectUnauthenticated(await getAll(""));
    expectUnauthenticated(await getAll(`${panel.apiKey}x`));
    expectUnauthenticated(await getAll("mk_totally-made-up"));
  });

  it("accepts the key as Authorization: Bearer instead of apikey, and refuses a wrong one alike", async () => {
    const panel = await createPanel();
    const viaBearer = (key: string, init: RequestInit = {}) =>
      call("/apiv2?type=lists&activity=getall", { ...init, headers: { authorization: `Bearer ${key}`, ...(init.headers ?? {}) } });
    const ok = await viaBearer(panel.apiKey);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ result: "Success", lists: [] });
    const added = await call("/apiv2", {
      method: "POST",
      headers: { authorization: `Bearer ${panel.apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "lists", activity: "add", listname: "Bearer list" }),
    });
    expect(added.status).toBe(200);
    const wrong = await viaBearer("mk_wrong");
    expectUnauthenticated({ status: wrong.status, body: await wrong.json() });
    // A wrong apikey is not rescued by a good Bearer header: the envelope's own parameter decides.
    const both = await call(`/apiv2?type=lists&activity=getall&apikey=mk_wrong`, { headers: { authorization: `Bearer ${panel.apiKey}` } });
    expect(both.status).toBe(401);
  });

  it("refuses a rotated key and accepts the new one", async () => {
    const panel = await createPanel();
    const rotated = await admin("POST", `/panels/${panel.id}/users/${panel.userId}/api-key`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.api_key).not.toBe(panel.apiKey);
    expectUnauthenticated(await getAll(panel.apiKey));
    expect((await getAll(rotated.body.api_key)).status).toBe(200);
  });

  it("refuses every key of a panel without API mode", async () => {
    const panel = await createPanel();
    await admin("PATCH", `/panels/${panel.id}`, { api_mode: false });
    expectUnauthenticated(await getAll(panel.apiKey));
    await admin("PATCH", `/panels/${panel.id}`, { api_mode: true });
    expect((await getAll(panel.apiKey)).status).toBe(200);
  });

  it("refuses the key of a disabled user", async () => {
    const panel = await createPanel();
    await admin("PATCH", `/panels/${panel.id}/users/${panel.userId}`, { disabled: true });
    expectUnauthenticated(await getAll(panel.apiKey));
  });

  it("authenticates before running the operation: a bad key writes nothing", async () => {
    const panel = await createPanel();
    const result = await envelope({ type: "lists", activity: "add", apikey: "wrong", listname: "X" });
    expectUnauthenticated(result);
    expect((await getAll(panel.apiKey)).body.lists).toEqual([]);
  });
});
