import { beforeEach, describe, expect, it } from "vitest";
import { insertActivity } from "../../src/store/activities";
import { contactEvents, defineActivity, eventCount, fullSnapshot, postUpload, profileEvents, storedEvents } from "../support/activity";
import { createPanel, type TestPanel, panelData } from "../support/helpers";

// Activity API v2 (CONTRACT 8): POST /v1/activity/upload, the key as a Bearer header or the
// apikey query, a JSON array of events naming their activity, answered as the batch endpoint.

let panel: TestPanel;

beforeEach(async () => {
  panel = await createPanel({ primary_key: "MOBILE", timezone: "Asia/Kolkata" });
  await defineActivity(panel, "add_to_cart", { amount: "float", prid: "string", prqt: "integer", date: "string" });
});

const minutesAgo = (minutes: number) => new Date(Date.now() - minutes * 60_000).toISOString();

function cart(extra: Record<string, unknown> = {}) {
  return {
    activity_name: "add_to_cart",
    timestamp: minutesAgo(5),
    identity: "9155892115",
    activity_source: "web",
    activity_params: { amount: 120.45, prid: "ib-7731", prqt: 22, date: "2024-01-13 13:03:01" },
    ...extra,
  };
}

describe("activity upload: accepted", () => {
  it("records the issue's sample as sent, with its asset id header; the 2024 timestamp starts no journey", async () => {
    const result = await postUpload(panel.apiKey, [
      {
        asset_id: "ast-web-1",
        activity_name: "add_to_cart",
        timestamp: "2024-01-13T20:30:28+05:30",
        identity: "9155892115",
        activity_source: "web",
        activity_params: { amount: 120.45, prid: "ib2931", prqt: 22, date: "2024-01-13 13:03:01" },
      },
    ], { headers: { "x-netcore-asset-id": "ast-header" } });
    expect(result.status).toBe(200);
    expect(result.body).toEqual({
      requestid: expect.stringMatching(/^[0-9a-f]{32}$/),
      result: "Success",
      recorded: 1,
      accepted: 1,
      duplicates: 0,
      rejected: 0,
      journeys: "skipped: older than 24 hours",
      journeys_skipped: [0],
      // Always there (CONTRACT 10): empty when every event was stored.
      errors: [],
    });
    expect(await storedEvents(panel.id)).toEqual([
      {
        name: "add_to_cart",
        identity: "9155892115",
        uniqueid: null,
        source: "web",
        params: { amount: 120.45, prid: "ib2931", prqt: 22, date: "2024-01-13 13:03:01" },
        asset_id: "ast-web-1",
        occurred_at: Date.UTC(2024, 0, 13, 15, 0, 28),
      },
    ]);
    const history = await contactEvents(panel, "9155892115");
    expect(history.body.events[0]).toMatchObject({ activityid: "1", asset_id: "ast-web-1", timestamp: "2024-01-13T20:30:28" });
  });

  it("takes the key from the apikey query too, and the header's asset id for events that name none", async () => {
    const result = await postUpload(null, [cart(), cart({ asset_id: "own" })], {
      query: `?apikey=${encodeURIComponent(panel.apiKey)}`,
      headers: { "X-Netcore-Asset-Id": " app-android " },
    });
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ result: "Success", recorded: 2 });
    expect(result.body.journeys).toBeUndefined();
    expect((await storedEvents(panel.id)).map((e) => e.asset_id)).toEqual(["app-android", "own"]);
  });

  it("names activities in any case, reads typed values from text, epoch times and every source clients send", async () => {
    const now = Date.now();
    const result = await postUpload(panel.apiKey, [
      cart({ activity_name: "ADD_TO_CART", activity_params: { amount: "120.45", prqt: "22" }, timestamp: Math.floor(now / 1000) - 60, activity_source: "App" }),
      cart({ activity_params: { "f^amount": 3, "s^prid": 42 }, timestamp: String(now - 60_000), activity_source: "CUS" }),
      cart({ activity_params: [{ prqt: 1 }], activity_source: "store" }),
    ]);
    expect(result.status).toBe(200);
    const stored = await storedEvents(panel.id);
    expect(stored.map((e) => [e.source, e.params])).toEqual([
      ["app", { amount: 120.45, prqt: 22 }],
      ["CUS", { amount: 3, prid: "42" }],
      ["store", { prqt: 1 }],
    ]);
    expect(stored[1]!.occurred_at).toBe(now - 60_000);
  });

  it("reads a date alone (as CRM exports send a day's events) as its midnight in the panel's zone", async () => {
    const result = await postUpload(panel.apiKey, [cart({ timestamp: "2024-01-31" })]);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ result: "Success", recorded: 1, journeys: "skipped: older than 24 hours" });
    const [stored] = await storedEvents(panel.id);
    // The panel is in Asia/Kolkata (UTC+05:30).
    expect(new Date(stored!.occurred_at).toISOString()).toBe("2024-01-30T18:30:00.000Z");
  });

  it("records uniqueid-only events against an anonymous profile", async () => {
    const result = await postUpload(panel.apiKey, [cart({ identity: "", uniqueid: "visitor-9" })]);
    expect(result.status).toBe(200);
    expect((await profileEvents(panel, "visitor-9")).body.events).toHaveLength(1);
  });

  it("accepts an activity defined after the isolate cached the panel's definitions", async () => {
    expect((await postUpload(panel.apiKey, [cart()])).status).toBe(200);
    await insertActivity(panelData, panel.id, "wishlist", { prid: "string" }, Date.now());
    const result = await postUpload(panel.apiKey, [{ activity_name: "wishlist", identity: "9155892115", activity_params: { prid: "x" } }]);
    expect(result.status).toBe(200);
  });

  it("stores nothing twice: Idempotency-Key per event position, or the event's guid", async () => {
    const headers = { "idempotency-key": "sync-2024-01-13" };
    const first = await postUpload(panel.apiKey, [cart(), cart({ guid: "order-9" })], { headers });
    const retry = await postUpload(panel.apiKey, [cart(), cart({ guid: "order-9" })], { headers });
    expect(first.body).toMatchObject({ recorded: 2, duplicates: 0 });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ result: "Success", recorded: 2, duplicates: 2 });
    expect(await eventCount(panel.id)).toBe(2);
  });

  it("1,000 events in one call", async () => {
    const events = Array.from({ length: 1000 }, (_, i) => cart({ identity: String(9_100_000_000 + i) }));
    const result = await postUpload(panel.apiKey, events);
    expect(result.status).toBe(200);
    expect(result.body.recorded).toBe(1000);
    expect(await eventCount(panel.id)).toBe(1000);
  });

  it("answers under /apiv2/ too", async () => {
    expect((await postUpload(panel.apiKey, [cart()], { version: "apiv2" })).status).toBe(200);
  });
});

describe("activity upload: refused", () => {
  it("stores the valid events and names each bad one by index (200, CONTRACT 10)", async () => {
    const result = await postUpload(panel.apiKey, [
      cart(),
      cart({ activity_name: "wishlist" }),
      cart({ activity_params: { prqt: "22 pieces" } }),
      cart({ timestamp: Math.floor(Date.now() / 1000) + 2 * 86400 }),
      cart({ activity_name: undefined, activityid: 1 }),
      cart({ identity: "12" }),
    ]);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ result: "Success", recorded: 1, accepted: 1, rejected: 5 });
    expect(result.body.errors).toEqual([
      { index: 1, field: "activity_name", message: 'no activity named "wishlist" is defined in this panel' },
      { index: 2, field: "activity_params.prqt", message: 'must be an integer, not "22 pieces"' },
      { index: 3, field: "timestamp", message: expect.stringContaining("more than 24 hours ahead") },
      { index: 4, field: "activity_name", message: expect.stringContaining("is required") },
      { index: 5, field: "identity", message: expect.any(String) },
    ]);
    expect(await eventCount(panel.id)).toBe(1);
  });

  it("stores nothing when every event is bad (400)", async () => {
    const before = await fullSnapshot(panel.id);
    const result = await postUpload(panel.apiKey, [cart({ activity_name: "nope" }), cart({ identity: null })]);
    expect(result.status).toBe(400);
    expect(result.body).toMatchObject({ result: "Failed", recorded: 0, rejected: 2 });
    expect(result.body.message).toContain("nothing was stored");
    expect(await fullSnapshot(panel.id)).toBe(before);
  });

  it.each([
    ["no key", null, {}],
    ["a wrong key", "mk_wrong", {}],
    ["an empty bearer", "", {}],
  ] as const)("%s: 401 with the one message, nothing stored", async (_label, key, options) => {
    const before = await fullSnapshot(panel.id);
    const result = await postUpload(key, [cart()], options);
    expect(result.status).toBe(401);
    expect(result.body).toMatchObject({ result: "Failed", message: "The caller could not be authenticated" });
    expect(await fullSnapshot(panel.id)).toBe(before);
  });

  it("another panel's key records in that panel only, where the activity is unknown", async () => {
    const other = await createPanel();
    const result = await postUpload(other.apiKey, [cart()]);
    expect(result.status).toBe(400);
    expect(result.body.errors[0]).toMatchObject({ index: 0, field: "activity_name" });
    expect(await eventCount(panel.id)).toBe(0);
  });

  it.each([
    ["an object instead of an array", { events: [] }, "events"],
    ["an empty array", [], "events"],
    ["1,001 events", Array.from({ length: 1001 }, () => ({ activity_name: "add_to_cart", identity: "1" })), "events"],
    ["a JSON string", "add_to_cart", "events"],
  ])("%s: 400, nothing stored", async (_label, body, field) => {
    const before = await fullSnapshot(panel.id);
    const result = await postUpload(panel.apiKey, body);
    expect(result.status).toBe(400);
    expect(result.body).toMatchObject({ result: "Failed", errors: [{ field }] });
    expect(await fullSnapshot(panel.id)).toBe(before);
  });

  it("a body that is not JSON: 400; a GET: 405", async () => {
    expect((await postUpload(panel.apiKey, "[{", { raw: true })).status).toBe(400);
    const get = await postUpload(panel.apiKey, undefined, { method: "GET" });
    expect(get.status).toBe(405);
    expect(await eventCount(panel.id)).toBe(0);
  });
});
