import { describe, expect, it } from "vitest";
import { defineActivity } from "../support/activity";
import { admin, createPanel, panelSnapshot } from "../support/helpers";
import { createWebhook } from "../support/webhooks";

async function setup() {
  const panel = await createPanel();
  await defineActivity(panel, "add_to_cart");
  const hook = await createWebhook(panel, {}, false);
  const base = `/panels/${panel.id}/journeys`;
  const valid = {
    name: "Cart reminder",
    trigger: { type: "activity", activity: "add_to_cart" },
    filter: [{ attribute: "city", op: "eq", value: "Pune" }],
    steps: [
      { id: "mail", type: "email", subject: "You left something", html: "<p>Hi {{NAME}}</p>", sender_name: "Shop", sender_email: "shop@example.com" },
      { id: "wait", type: "wait_for_event", after: "mail", events: ["open", "click"], within: "2d" },
      { id: "hook", type: "webhook", after: "wait", on: "event", webhook: hook.id, attributes: ["EMAIL", "CITY"], params: { Action: "reminded" } },
    ],
  };
  return { panel, hook, base, valid };
}

describe("admin journeys", () => {
  it("creates a draft, reads it with counters, lists it", async () => {
    const { base, valid } = await setup();
    const created = await admin("POST", base, valid);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: expect.any(String), name: "Cart reminder", status: "draft", filter: [{ attribute: "CITY", op: "eq", value: "Pune" }] });
    const read = await admin("GET", `${base}/${created.body.id}`);
    expect(read.body).toMatchObject({ status: "draft", counters: { entered: 0, active: 0, completed: 0, exited: 0, steps: {} } });
    expect((await admin("GET", base)).body.journeys).toMatchObject([{ id: created.body.id, status: "draft", counters: { entered: 0, active: 0, completed: 0, exited: 0 } }]);
  });

  it("names the field and the reason of each mistake, and writes nothing", async () => {
    const { panel, base, valid } = await setup();
    const before = await panelSnapshot(panel.id);
    const cases: Array<[unknown, string, RegExp]> = [
      [{ ...valid, steps: [{ ...valid.steps[0], id: "x" }, { ...valid.steps[1], after: "mail" }] }, "steps.1.after", /names no step/],
      [{ ...valid, steps: [valid.steps[0], { ...valid.steps[1], within: "2 days" }] }, "steps.1.within", /duration/],
      [{ ...valid, steps: [valid.steps[0], { ...valid.steps[1], events: ["delivered"] }] }, "steps.1.events.0", /not an event of email/],
      [{ ...valid, steps: [valid.steps[0], valid.steps[1], { ...valid.steps[2], on: undefined }] }, "steps.2.on", /required/],
      [{ ...valid, steps: [valid.steps[0], valid.steps[1], { ...valid.steps[2], webhook: "whk_nope" }] }, "steps.2.webhook", /no webhook/],
      [{ ...valid, steps: [valid.steps[0], valid.steps[0]] }, "steps.1.id", /unique/],
      [{ ...valid, trigger: { type: "activity", activity: "nope" } }, "trigger.activity", /no activity/],
      [{ ...valid, trigger: { type: "list", listid: 999999 } }, "trigger.listid", /no list/],
      // The one list-id rule (a positive integer below 2^53) and the one email rule, as the API applies them.
      [{ ...valid, trigger: { type: "list", listid: 3_000_000_000 } }, "trigger.listid", /no list/],
      [{ ...valid, trigger: { type: "list", listid: 2 ** 53 } }, "trigger.listid", /positive integer/],
      [{ ...valid, trigger: { type: "list", listid: "1e3" } }, "trigger.listid", /positive integer/],
      [{ ...valid, steps: [{ ...valid.steps[0], sender_email: "shop\\desk@example.com" }, valid.steps[1], valid.steps[2]] }, "steps.0.sender_email", /email address/],
      [{ ...valid, trigger: { type: "weather" } }, "trigger.type", /activity, list, segment/],
      [{ ...valid, steps: [{ id: "w", type: "wait_for_event", events: ["open"], within: "1h" }] }, "steps.0.events", /must follow an email/],
      [{ ...valid, filter: [{ attribute: "CITY", op: "eq" }] }, "filter.0.value", /required/],
      [{ ...valid, steps: [{ id: "a", type: "delay", for: "1h", after: "b" }, { id: "b", type: "delay", for: "1h", after: "a" }] }, "steps", /loop/],
      [{ ...valid, steps: [{ id: "c", type: "condition", filter: [{ attribute: "AGE", op: "gt", value: 1 }], then: "nope" }] }, "steps.0.then", /names no step/],
      [{ ...valid, steps: [{ id: "s", type: "sms", text: "hi", on: "event" }] }, "steps.0.on", /only for a step that follows a wait/],
    ];
    for (const [body, field, message] of cases) {
      const answer = await admin("POST", base, body);
      expect(answer.status, field).toBe(400);
      const error = answer.body.errors.find((e: any) => e.field === field);
      expect(error, `${field} in ${JSON.stringify(answer.body.errors)}`).toBeDefined();
      expect(error.message).toMatch(message);
    }
    expect(await panelSnapshot(panel.id)).toBe(before);
    expect((await admin("GET", base)).body.journeys).toEqual([]);
  });

  it("edits a draft in place, gives a running journey a new version, refuses a stopped one; moves status only along allowed transitions", async () => {
    const { base, valid } = await setup();
    const { id } = (await admin("POST", base, valid)).body;
    const renamed = await admin("PUT", `${base}/${id}`, { ...valid, name: "Renamed" });
    expect(renamed.body).toMatchObject({ name: "Renamed", status: "draft", version: 1 });
    expect((await admin("POST", `${base}/${id}/status`, { status: "paused" })).status).toBe(409);
    expect((await admin("POST", `${base}/${id}/status`, { status: "running" })).body.status).toBe("running");
    expect((await admin("PUT", `${base}/${id}`, valid)).body).toMatchObject({ status: "running", version: 2 });
    expect((await admin("POST", `${base}/${id}/status`, { status: "paused" })).body.status).toBe("paused");
    expect((await admin("POST", `${base}/${id}/status`, { status: "draft" })).status).toBe(400);
    expect((await admin("POST", `${base}/${id}/status`, { status: "stopped" })).body.status).toBe("stopped");
    expect((await admin("POST", `${base}/${id}/status`, { status: "paused" })).status).toBe(409);
    expect((await admin("PUT", `${base}/${id}`, valid)).status).toBe(409);
  });

  it("keeps panels apart", async () => {
    const { base, valid } = await setup();
    const { id } = (await admin("POST", base, valid)).body;
    const other = await createPanel();
    expect((await admin("GET", `/panels/${other.id}/journeys/${id}`)).status).toBe(404);
    expect((await admin("POST", `/panels/${other.id}/journeys/${id}/status`, { status: "running" })).status).toBe(404);
  });
});

describe("journeys in /openapi.json", () => {
  it("documents the journey routes and the channel events route", async () => {
    const { call } = await import("../support/helpers");
    const doc = (await (await call("/openapi.json")).json()) as any;
    expect(doc.paths["/admin/v1/panels/{panel}/journeys"].post.requestBody.content["application/json"].schema.properties.steps).toBeDefined();
    expect(doc.paths["/admin/v1/panels/{panel}/journeys/{journey}/status"].post).toBeDefined();
    expect(doc.paths["/v1/events/{channel}/{client_id}"].post.requestBody.content["application/json"].schema.properties.msgid).toBeDefined();
  });
});
