import { beforeEach, describe, expect, it } from "vitest";
import { contactEvents, defineActivity, eventCount, fullSnapshot, pipelineSettled, postBatch, profileEvents } from "../support/activity";
import { contactsOf, createPanel, type TestPanel, panelData } from "../support/helpers";

let panel: TestPanel;
let viewId: string;

beforeEach(async () => {
  panel = await createPanel();
  viewId = await defineActivity(panel, "product_view", { prid: "integer", price: "float" });
});

const view = (identity: string, extra: Record<string, unknown> = {}) => ({
  activityid: viewId,
  identity,
  activity_params: { "i^prid": 1, "f^price": 2.5 },
  ...extra,
});

describe("batch endpoint", () => {
  it("stores every event of a valid batch in one call, as an array or under events", async () => {
    const asArray = await postBatch(panel.clientId, [view("a@example.com"), view("b@example.com"), view("a@example.com")]);
    expect(asArray.status).toBe(200);
    expect(asArray.body).toMatchObject({ result: "Success", recorded: 3, accepted: 3, duplicates: 0, rejected: 0 });
    const asObject = await postBatch(panel.clientId, { events: [{ ...view("c@example.com"), identity: undefined, uniqueid: "anon-1" }] }, { version: "apiv2" });
    expect(asObject.status).toBe(200);
    expect(await eventCount(panel.id)).toBe(4);
    expect((await contactEvents(panel, "a@example.com")).body.events).toHaveLength(2);
    expect((await profileEvents(panel, "anon-1")).body.events).toHaveLength(1);
  });

  it("stores a full batch of long non-Latin text (cut into several recorded batches, each within D1's value limit)", async () => {
    const reviewed = await defineActivity(panel, "review", { text: "string" });
    const text = "評価".repeat(700);
    const events = Array.from({ length: 1000 }, (_, i) => ({ activityid: reviewed, identity: `r${i}@example.com`, activity_params: { "s^text": `${i}:${text}` } }));
    const result = await postBatch(panel.clientId, events);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ accepted: 1000, rejected: 0 });
    expect(await eventCount(panel.id)).toBe(1000);
    const recorded = await panelData.prepare("SELECT COUNT(DISTINCT batch_id) AS n FROM events WHERE panel_id = ?").bind(panel.id).first<{ n: number }>();
    expect(recorded!.n).toBeGreaterThan(1);
    const last = (await contactEvents(panel, "r999@example.com")).body.events[0];
    expect(last.params.text).toBe(`999:${text}`);
  });

  it("stores the valid events of a batch with bad ones and names each bad one by index (200, CONTRACT 10)", async () => {
    const result = await postBatch(panel.clientId, [
      view("ok1@example.com"),
      view("bad@example.com", { activity_params: { "s^prid": "x" } }),
      view("ok2@example.com"),
      { activityid: "999999", identity: "nobody@example.com" },
      "not an event",
      view("not-an-email"),
    ]);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ result: "Success", accepted: 2, rejected: 4 });
    expect(result.body.message).toContain("4 of 6");
    expect(result.body.errors).toEqual([
      { index: 1, field: "activity_params.s^prid", message: expect.any(String) },
      { index: 3, field: "activityid", message: expect.stringContaining("999999") },
      { index: 4, field: "body", message: expect.any(String) },
      { index: 5, field: "identity", message: expect.any(String) },
    ]);
    await pipelineSettled(panel.id);
    const stored = await panelData.prepare("SELECT identity FROM events WHERE panel_id = ? ORDER BY id").bind(panel.id).all<{ identity: string }>();
    expect(stored.results.map((r) => r.identity)).toEqual(["ok1@example.com", "ok2@example.com"]);
    expect((await contactEvents(panel, "bad@example.com")).status).toBe(404);
  });

  it("stores nothing when every event is bad (400)", async () => {
    const before = await fullSnapshot(panel.id);
    const result = await postBatch(panel.clientId, [view("x@example.com", { cts: "999999999999" }), { identity: "y@example.com" }]);
    expect(result.status).toBe(400);
    expect(result.body).toMatchObject({ result: "Failed", accepted: 0, rejected: 2 });
    expect(result.body.errors.map((e: any) => [e.index, e.field])).toEqual([
      [0, "cts"],
      [1, "activityid"],
    ]);
    expect(await fullSnapshot(panel.id)).toBe(before);
  });

  it.each([
    ["an empty array", []],
    ["an object without events", { event: [] }],
    ["more than 1,000 events", Array.from({ length: 1001 }, (_, i) => ({ activityid: "1", identity: `u${i}@example.com` }))],
  ])("refuses %s and stores nothing", async (_label, body) => {
    const result = await postBatch(panel.clientId, body);
    expect(result.status).toBe(400);
    expect(result.body).toMatchObject({ result: "Failed", errors: [{ field: "events" }] });
    expect(await eventCount(panel.id)).toBe(0);
  });

  it("refuses a wrong key and an unknown client id before reading events", async () => {
    expect((await postBatch(panel.clientId, [view("a@example.com")], { headers: { authorization: "Bearer nope" } })).status).toBe(401);
    expect((await postBatch("nobody", [view("a@example.com")])).status).toBe(404);
    expect(await eventCount(panel.id)).toBe(0);
  });

  it("takes 1,000 events in one call", async () => {
    const events = Array.from({ length: 1000 }, (_, i) =>
      i % 3 === 0 ? { activityid: viewId, uniqueid: `visitor-${i % 50}` } : view(`user${i % 200}@example.com`, { uniqueid: `visitor-${i % 50}` }),
    );
    const result = await postBatch(panel.clientId, events);
    expect(result.status).toBe(200);
    expect(result.body.accepted).toBe(1000);
    expect(await eventCount(panel.id)).toBe(1000);
    expect(await contactsOf(panel.id)).toHaveLength(200);
    // Every uniqueid was seen with an identity, so no event is left anonymous.
    const anonymous = await panelData.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ? AND contact_id IS NULL").bind(panel.id).first<{ n: number }>();
    expect(anonymous!.n).toBe(0);
  });

  it("a retried batch with the same Idempotency-Key stores nothing twice; per-event guids dedupe too", async () => {
    const headers = { "idempotency-key": "import-2024-01-31" };
    const batch = [view("a@example.com"), view("b@example.com", { guid: "own-guid" })];
    const first = await postBatch(panel.clientId, batch, { headers });
    const retry = await postBatch(panel.clientId, batch, { headers });
    expect(first.body).toMatchObject({ accepted: 2, duplicates: 0 });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ accepted: 2, duplicates: 2 });
    expect(await eventCount(panel.id)).toBe(2);
    const guids = await panelData.prepare("SELECT guid FROM events WHERE panel_id = ? ORDER BY id").bind(panel.id).all<{ guid: string }>();
    expect(guids.results.map((r) => r.guid)).toEqual(["import-2024-01-31:0", "own-guid"]);

    const repeatedInside = await postBatch(panel.clientId, [view("c@example.com", { guid: "twice" }), view("c@example.com", { guid: "twice" })]);
    expect(repeatedInside.body).toMatchObject({ accepted: 2, duplicates: 1 });
    expect(await eventCount(panel.id)).toBe(3);
  });
});
