import { describe, expect, it } from "vitest";
import { SEGMENT_SCAN_PAGE } from "../../../src/services/journeys/contact-triggers";
import { eventually, pipelineSettled, postUpload } from "../../support/activity";
import { admin, apiFor, call, createPanel, panelData } from "../../support/helpers";
import { act, cartPanel, countersOf, cronAllAt, createWebhook, delivered, messagesOf, puneSegmentJourney, startJourney } from "../../support/journeys";

describe("activity trigger", () => {
  it("an activity older than 24 hours when it arrives is recorded but starts no journey; a recent one does", async () => {
    const panel = await createPanel();
    const { cart } = await cartPanel(panel);
    const journey = await startJourney(panel, { trigger: { type: "activity", activity: "add_to_cart" }, steps: [{ id: "sms", type: "sms", text: "Still thinking?" }] });
    const day = 24 * 3_600_000;
    await act(panel, cart, "old@example.com", { timestamp: Date.now() - day - 60_000 });
    const uploaded = await postUpload(panel.apiKey, [
      { activity_name: "add_to_cart", identity: "late@example.com", timestamp: new Date(Date.now() - 2 * day).toISOString() },
      { activity_name: "add_to_cart", identity: "recent@example.com", timestamp: Math.floor((Date.now() - day + 60_000) / 1000) },
    ]);
    expect(uploaded.body).toMatchObject({ recorded: 2, journeys: "skipped: older than 24 hours", journeys_skipped: [0] });
    await pipelineSettled(panel.id);
    expect(await countersOf(journey)).toMatchObject({ entered: 1 });
    await act(panel, cart, "old@example.com");
    expect(await countersOf(journey)).toMatchObject({ entered: 2 });
  });
});

describe("list trigger", () => {
  it("a contact added to the list enters; one already in it or added elsewhere does not", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const vip = (await api("lists", "add", { listname: "VIP" })).body.listid;
    const other = (await api("lists", "add", { listname: "Other" })).body.listid;
    const hook = await createWebhook(panel);
    const journey = await startJourney(panel, {
      trigger: { type: "list", listid: vip },
      steps: [
        { id: "welcome", type: "sms", text: "Welcome to VIP" },
        { id: "hook", type: "webhook", webhook: hook.id, attributes: ["EMAIL"] },
      ],
    });
    await api("contact", "add", { data: { EMAIL: "in@example.com", MOBILE: "+15550001" }, listid: vip });
    await api("contact", "add", { data: { EMAIL: "out@example.com" }, listid: other });
    await eventually(async () => ((await messagesOf(panel)).length >= 1 ? true : undefined));
    // Adding a member again is no new membership.
    await api("contact", "add", { data: { EMAIL: "in@example.com", CITY: "Pune" }, listid: vip });
    await eventually(async () => ((await countersOf(journey)).completed === 1 ? true : undefined));
    expect((await messagesOf(panel)).map((m) => m.recipient)).toEqual(["+15550001"]);
    const events = await delivered(hook);
    expect(events).toMatchObject([{ channel: "custom_activity", att_params: { EMAIL: "in@example.com" }, event_params: { activity_name: "list", activity_source: "journey", identity: "in@example.com" } }]);
    expect(await countersOf(journey)).toMatchObject({ entered: 1 });
  });
});

describe("segment trigger", () => {
  it("enters the contacts matching when it starts, and those who come to match later, once each", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    await api("contact", "add", { data: { EMAIL: "pune@example.com", CITY: "Pune" } });
    await api("contact", "add", { data: { EMAIL: "delhi@example.com", CITY: "Delhi" } });
    const journey = await puneSegmentJourney(panel);
    expect(await countersOf(journey)).toMatchObject({ entered: 1, completed: 1 });
    await api("contact", "update", { data: { EMAIL: "delhi@example.com", CITY: "Pune" } });
    await api("contact", "add", { data: { EMAIL: "new@example.com", CITY: "PUNE" } });
    await api("contact", "update", { data: { EMAIL: "pune@example.com", NAME: "Still Pune" } });
    await eventually(async () => ((await countersOf(journey)).entered === 3 ? true : undefined));
    const recipients = (await messagesOf(panel)).map((m) => m.recipient).sort();
    expect(recipients).toEqual(["delhi@example.com", "new@example.com", "pune@example.com"]);
  });

  it("scans a large panel page by page through the cron", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const total = SEGMENT_SCAN_PAGE + 20;
    const { upsertContact } = await import("../../../src/store/contacts");
    for (let i = 0; i < total; i += 50) {
      await Promise.all(Array.from({ length: Math.min(50, total - i) }, (_, j) => upsertContact(panelData, panel.id, `c${i + j}@example.com`, { EMAIL: `c${i + j}@example.com`, AGE: (i + j) % 2 }, Date.now())));
    }
    await api("contact", "add", { data: { EMAIL: "nobody@example.com" } });
    const journey = await startJourney(panel, { trigger: { type: "segment", filter: [{ attribute: "AGE", op: "eq", value: 1 }] }, steps: [{ id: "hi", type: "apn", text: "Hi" }] });
    const first = (await countersOf(journey)).entered;
    expect(first).toBeLessThan(total / 2);
    await cronAllAt(Date.now());
    expect((await countersOf(journey)).entered).toBe(total / 2);
  });
});

describe("saved segment trigger", () => {
  it("enters the segment's members when it starts and each contact that enters later, once; the segment cannot be deleted meanwhile", async () => {
    const panel = await createPanel();
    const api = apiFor(panel);
    const { buy } = await cartPanel(panel);
    await api("contact", "add", { data: { EMAIL: "pune@example.com", CITY: "Pune" } });
    await api("contact", "add", { data: { EMAIL: "delhi@example.com", CITY: "Delhi" } });
    await api("contact", "add", { data: { EMAIL: "goa@example.com", CITY: "Goa" } });
    const segment = await admin("POST", `/panels/${panel.id}/segments`, {
      name: "Pune or buyers",
      match: { any: [{ attribute: "CITY", op: "eq", value: "Pune" }, { activity: "purchase", op: "performed", within_days: 7 }] },
    });
    expect(segment.status).toBe(201);
    await eventually(async () => ((await admin("GET", `/panels/${panel.id}/segments/${segment.body.id}`)).body.members === 1 ? true : undefined));
    const refused = await admin("POST", `/panels/${panel.id}/journeys`, { name: "x", trigger: { type: "segment", segment: "seg_nope" }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    expect(refused.body.errors).toEqual([{ field: "trigger.segment", message: 'no segment with id "seg_nope" in this panel' }]);
    const journey = await startJourney(panel, { trigger: { type: "segment", segment: segment.body.id }, steps: [{ id: "hi", type: "sms", text: "Hi" }] });
    expect(await countersOf(journey)).toMatchObject({ entered: 1 });

    await api("contact", "update", { data: { EMAIL: "delhi@example.com", CITY: "Pune" } });
    await act(panel, buy, "goa@example.com");
    await eventually(async () => ((await countersOf(journey)).entered === 3 ? true : undefined));
    // Leaving and coming back enters no second time.
    const history = async () => (await admin("GET", `/panels/${panel.id}/segments/${segment.body.id}/history`)).body.days.at(-1);
    await api("contact", "update", { data: { EMAIL: "pune@example.com", CITY: "Goa" } });
    await eventually(async () => ((await history())?.exited === 1 ? true : undefined));
    await api("contact", "update", { data: { EMAIL: "pune@example.com", CITY: "Pune" } });
    await eventually(async () => ((await history())?.entered === 4 ? true : undefined));
    await cronAllAt(Date.now());
    expect(await countersOf(journey)).toMatchObject({ entered: 3 });
    expect((await messagesOf(panel)).map((m) => m.recipient).sort()).toEqual(["delhi@example.com", "goa@example.com", "pune@example.com"]);

    const blocked = await admin("DELETE", `/panels/${panel.id}/segments/${segment.body.id}`);
    expect(blocked.status).toBe(409);
    expect(blocked.body.error).toBe(`The segment "Pune or buyers" is used by journey 'Cart reminder' (running); stop the journeys, and send, cancel or delete the campaigns first`);
    expect((await admin("POST", `${journey.path}/status`, { status: "stopped" })).status).toBe(200);
    const deleted = await call(`/admin/v1/panels/${panel.id}/segments/${segment.body.id}`, { method: "DELETE", headers: { authorization: "Bearer test-admin-token" } });
    expect(deleted.status).toBe(204);
  });
});
