import { beforeEach, describe, expect, it } from "vitest";
import { insertActivity } from "../../src/store/activities";
import { contactEvents, defineActivity, eventCount, fullSnapshot, pipelineSettled, postActivity, postBatch, profileEvents } from "../support/activity";
import { admin, apiFor, call, contactsOf, createPanel, type TestPanel, panelData } from "../support/helpers";

let panel: TestPanel;
let cartId: string;

const cartParams = { name: "string", prid: "integer", price: "float", prqt: "integer" };

beforeEach(async () => {
  panel = await createPanel({ timezone: "Asia/Kolkata" });
  cartId = await defineActivity(panel, "add_to_cart", cartParams);
});

function cartEvent(extra: Record<string, unknown> = {}) {
  return {
    activityid: cartId,
    identity: "ada@example.com",
    activity_source: "web",
    activity_params: { "s^name": "Kettle", "i^prid": 1234, "f^price": 29.5, "i^prqt": 2 },
    ...extra,
  };
}

describe("single activity: accepted shapes", () => {
  it("stores the event with its time read in the panel's zone and answers Success", async () => {
    const posted = await postActivity(panel.clientId, cartEvent({ cts: "240131180500" }));
    expect(posted.status).toBe(200);
    expect(posted.body).toMatchObject({ result: "Success", duplicate: false });
    expect(posted.body.requestid).toMatch(/^[0-9a-f]{32}$/);
    expect(posted.body.guid).toEqual(expect.any(String));

    const history = await contactEvents(panel, "ada@example.com");
    expect(history.status).toBe(200);
    expect(history.body.events).toEqual([
      expect.objectContaining({
        guid: posted.body.guid,
        channel: "custom_activity",
        name: "add_to_cart",
        activityid: cartId,
        source: "web",
        params: { name: "Kettle", prid: 1234, price: 29.5, prqt: 2 },
        identity: "ada@example.com",
        ts: "240131180500",
        timestamp: "2024-01-31T18:05:00",
        occurred_at: "2024-01-31T12:35:00.000Z",
      }),
    ]);
  });

  it("reads unprefixed params by the definition, numbers sent as decimal text, and a prefix that agrees", async () => {
    const posted = await postActivity(panel.clientId, cartEvent({ activity_params: { name: "Kettle", prid: "1234", "f^price": "29.50", prqt: 2 } }));
    expect(posted.status).toBe(200);
    const [event] = (await contactEvents(panel, "ada@example.com")).body.events;
    expect(event.params).toEqual({ name: "Kettle", prid: 1234, price: 29.5, prqt: 2 });
  });

  it("reads web/app in any case, keeps other sources as sent (CONTRACT 10), and timestamp as epoch seconds or milliseconds", async () => {
    const now = Date.now();
    const sent = [
      { activity_source: "WEB", timestamp: Math.floor(now / 1000) - 60 },
      { activity_source: "CUS", timestamp: String(now - 120_000) },
      { activity_source: "Offline", timestamp: now - 180_000 },
      { activity_source: "pos", timestamp: new Date(now - 240_000).toISOString() },
    ];
    for (const extra of sent) expect((await postActivity(panel.clientId, cartEvent(extra))).status).toBe(200);
    const events = (await contactEvents(panel, "ada@example.com")).body.events;
    expect(events.map((e: any) => [e.source, e.occurred_at])).toEqual([
      ["web", new Date(Math.floor(now / 1000) * 1000 - 60_000).toISOString()],
      ["CUS", new Date(now - 120_000).toISOString()],
      ["Offline", new Date(now - 180_000).toISOString()],
      ["pos", new Date(now - 240_000).toISOString()],
    ]);
  });

  it("records an event older than 24 hours and says it starts no journey; a recent one says nothing", async () => {
    const old = await postActivity(panel.clientId, cartEvent({ cts: "240131180500" }));
    expect(old.status).toBe(200);
    expect(old.body).toMatchObject({ result: "Success", journeys: "skipped: older than 24 hours" });
    const recent = await postActivity(panel.clientId, cartEvent({ timestamp: Date.now() - 23 * 3_600_000 }));
    expect(recent.status).toBe(200);
    expect(recent.body.journeys).toBeUndefined();
    expect(await eventCount(panel.id)).toBe(2);
  });

  it("answers under /apiv2/ exactly as under /v1/", async () => {
    const posted = await postActivity(panel.clientId, cartEvent(), { version: "apiv2" });
    expect(posted.status).toBe(200);
    expect(posted.body.result).toBe("Success");
    expect(await eventCount(panel.id)).toBe(1);
  });

  it("reads the misspelt actvityid as activityid", async () => {
    const { activityid: _dropped, ...rest } = cartEvent();
    const posted = await postActivity(panel.clientId, { ...rest, actvityid: cartId });
    expect(posted.status).toBe(200);
    expect((await contactEvents(panel, "ada@example.com")).body.events[0].name).toBe("add_to_cart");
  });

  it("accepts activityid as a number, params as an array of one object, and a numeric cts", async () => {
    const posted = await postActivity(panel.clientId, {
      ...cartEvent({ cts: 240229235959 }),
      activityid: Number(cartId),
      activity_params: [{ "s^name": "Mug", "i^prqt": 1 }],
    });
    expect(posted.status).toBe(200);
    const [event] = (await contactEvents(panel, "ada@example.com")).body.events;
    expect(event.params).toEqual({ name: "Mug", prqt: 1 });
    expect(event.ts).toBe("240229235959");
  });

  it("accepts no params at all, an empty array, and a string parameter sent as a number", async () => {
    expect((await postActivity(panel.clientId, { activityid: cartId, identity: "a@example.com" })).status).toBe(200);
    expect((await postActivity(panel.clientId, { activityid: cartId, identity: "a@example.com", activity_params: [] })).status).toBe(200);
    const posted = await postActivity(panel.clientId, { activityid: cartId, identity: "a@example.com", activity_params: { "s^name": 42 } });
    expect(posted.status).toBe(200);
    const events = (await contactEvents(panel, "a@example.com")).body.events;
    expect(events.map((e: any) => e.params)).toContainEqual({ name: "42" });
  });

  it("reads an ISO timestamp when cts is absent: without a zone in the panel's zone, with one as given", async () => {
    await postActivity(panel.clientId, cartEvent({ timestamp: "2024-03-01T09:00:00", guid: "local" }));
    await postActivity(panel.clientId, cartEvent({ timestamp: "2024-03-01T09:00:00Z", guid: "utc" }));
    await postActivity(panel.clientId, cartEvent({ cts: "240301100000", timestamp: "2030-01-01T00:00:00", guid: "both" }));
    const events = (await contactEvents(panel, "ada@example.com")).body.events;
    const at = (guid: string) => events.find((e: any) => e.guid === guid).occurred_at;
    expect(at("local")).toBe("2024-03-01T03:30:00.000Z");
    expect(at("utc")).toBe("2024-03-01T09:00:00.000Z");
    expect(at("both")).toBe("2024-03-01T04:30:00.000Z");
  });

  it("defaults the time to now and the source to none", async () => {
    const before = Date.now();
    await postActivity(panel.clientId, { activityid: cartId, identity: "now@example.com" });
    const [event] = (await contactEvents(panel, "now@example.com")).body.events;
    expect(Date.parse(event.occurred_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(event.occurred_at)).toBeLessThanOrEqual(Date.now() + 1000);
    expect(event.source).toBeNull();
  });

  it("creates the contact of an unknown identity, normalised as the contact API does", async () => {
    const posted = await postActivity(panel.clientId, cartEvent({ identity: "  New.Person@Example.COM " }));
    expect(posted.status).toBe(200);
    // The contact is created as the pipeline takes the event in, moments after the answer.
    await pipelineSettled(panel.id);
    const viewed = await apiFor(panel)("contact", "view", { data: "new.person@example.com" });
    expect(viewed.status).toBe(200);
    expect(viewed.body.contact).toEqual({ EMAIL: "new.person@example.com" });
    expect((await contactEvents(panel, "new.person@example.com")).body.events).toHaveLength(1);
  });

  it("records against an existing contact without touching its attributes", async () => {
    await apiFor(panel)("contact", "add", { data: { EMAIL: "known@example.com", NAME: "Known", CITY: "Pune" } });
    await postActivity(panel.clientId, cartEvent({ identity: "KNOWN@example.com" }));
    await pipelineSettled(panel.id);
    const viewed = await apiFor(panel)("contact", "view", { data: "known@example.com" });
    expect(viewed.body.contact).toEqual({ EMAIL: "known@example.com", NAME: "Known", CITY: "Pune" });
    expect((await contactEvents(panel, "known@example.com")).body.events).toHaveLength(1);
  });

  it("uses the panel's primary key: a MOBILE identity sent as a number", async () => {
    const mobilePanel = await createPanel({ primary_key: "MOBILE" });
    const viewId = await defineActivity(mobilePanel, "app_open");
    const posted = await postActivity(mobilePanel.clientId, { activityid: viewId, identity: 919876543210, activity_source: "APP" });
    expect(posted.status).toBe(200);
    // Normalised as the contact API does: digits only, so "+91..." would be another contact.
    expect((await contactEvents(mobilePanel, "+91 98765 43210")).status).toBe(404);
    const events = (await contactEvents(mobilePanel, "98765 43210".replace(/^/, "91"))).body.events;
    expect(events).toEqual([expect.objectContaining({ name: "app_open", source: "app", identity: "919876543210" })]);
  });

  it("records a uniqueid-only event against an anonymous profile, creating no contact", async () => {
    const posted = await postActivity(panel.clientId, cartEvent({ identity: "", uniqueid: "visitor-1" }));
    expect(posted.status).toBe(200);
    const profile = await profileEvents(panel, "visitor-1");
    expect(profile.body.events).toEqual([expect.objectContaining({ uniqueid: "visitor-1", identity: null, pipeline: "done" })]);
    expect(await contactsOf(panel.id)).toEqual([]);
  });

  it("accepts a valid API key of the panel in the Authorization header or the apikey query", async () => {
    const byHeader = await postActivity(panel.clientId, cartEvent(), { headers: { authorization: `Bearer ${panel.apiKey}` } });
    expect(byHeader.status).toBe(200);
    const byQuery = await postActivity(panel.clientId, cartEvent(), { query: `?apikey=${encodeURIComponent(panel.apiKey)}` });
    expect(byQuery.status).toBe(200);
    expect(await eventCount(panel.id)).toBe(2);
  });

  it("accepts an activity defined after the isolate cached the panel's definitions", async () => {
    expect((await postActivity(panel.clientId, cartEvent())).status).toBe(200);
    // Written straight to D1, as another isolate's admin call would: this isolate's cache is not told.
    const later = await insertActivity(panelData, panel.id, "wishlist", { prid: "integer" }, Date.now());
    const posted = await postActivity(panel.clientId, { activityid: String(later!.id), identity: "ada@example.com", activity_params: { "i^prid": 7 } });
    expect(posted.status).toBe(200);
  });
});

describe("single activity: bad input is refused and nothing is stored", () => {
  const cases: Array<[string, (id: string) => unknown, number, string]> = [
    ["a wrong prefix for the parameter's type", (id) => ({ activityid: id, identity: "x@example.com", activity_params: { "s^prid": "12" } }), 400, "activity_params.s^prid"],
    ["text that is not a number for an integer parameter", (id) => ({ activityid: id, identity: "x@example.com", activity_params: { "i^prid": "12 items" } }), 400, "activity_params.i^prid"],
    ["decimal text for an integer parameter", (id) => ({ activityid: id, identity: "x@example.com", activity_params: { prid: "12.5" } }), 400, "activity_params.prid"],
    ["a float for an integer parameter", (id) => ({ activityid: id, identity: "x@example.com", activity_params: { "i^prqt": 1.5 } }), 400, "activity_params.i^prqt"],
    ["text for a float parameter", (id) => ({ activityid: id, identity: "x@example.com", activity_params: { "f^price": "cheap" } }), 400, "activity_params.f^price"],
    ["an unprefixed key the definition does not have", (id) => ({ activityid: id, identity: "x@example.com", activity_params: { colour: "red" } }), 400, "activity_params.colour"],
    ["an unknown parameter", (id) => ({ activityid: id, identity: "x@example.com", activity_params: { "s^colour": "red" } }), 400, "activity_params.s^colour"],
    ["params as an array of two objects", (id) => ({ activityid: id, identity: "x@example.com", activity_params: [{}, {}] }), 400, "activity_params"],
    ["params as text", (id) => ({ activityid: id, identity: "x@example.com", activity_params: "s^name=Kettle" }), 400, "activity_params"],
    ["an unknown activity", () => ({ activityid: "999999", identity: "x@example.com" }), 404, "activityid"],
    ["a non-numeric activityid", () => ({ activityid: "add_to_cart", identity: "x@example.com" }), 400, "activityid"],
    ["no activityid", () => ({ identity: "x@example.com" }), 400, "activityid"],
    ["neither identity nor uniqueid", (id) => ({ activityid: id }), 400, "identity"],
    ["empty identity and uniqueid", (id) => ({ activityid: id, identity: " ", uniqueid: "" }), 400, "identity"],
    ["an identity that is not an email", (id) => ({ activityid: id, identity: "not-an-email" }), 400, "identity"],
    ["an identity that is an object", (id) => ({ activityid: id, identity: { email: "x@example.com" } }), 400, "identity"],
    ["a malformed cts", (id) => ({ activityid: id, identity: "x@example.com", cts: "2401311805" }), 400, "cts"],
    ["an impossible cts (30 February)", (id) => ({ activityid: id, identity: "x@example.com", cts: "240230120000" }), 400, "cts"],
    ["an impossible cts (25 o'clock)", (id) => ({ activityid: id, identity: "x@example.com", cts: 240101250000 }), 400, "cts"],
    ["a malformed timestamp", (id) => ({ activityid: id, identity: "x@example.com", timestamp: "yesterday" }), 400, "timestamp"],
    ["an impossible timestamp", (id) => ({ activityid: id, identity: "x@example.com", timestamp: "2023-02-29T10:00:00" }), 400, "timestamp"],
    ["a source longer than 32 characters", (id) => ({ activityid: id, identity: "x@example.com", activity_source: "s".repeat(33) }), 400, "activity_source"],
    ["a cts more than 24 hours ahead (DDMMYY sent as YYMMDD)", (id) => ({ activityid: id, identity: "x@example.com", cts: "301124101500" }), 400, "cts"],
    ["an epoch timestamp more than 24 hours ahead", (id) => ({ activityid: id, identity: "x@example.com", timestamp: Math.floor(Date.now() / 1000) + 25 * 3600 }), 400, "timestamp"],
    ["a timestamp that is neither ISO nor epoch", (id) => ({ activityid: id, identity: "x@example.com", timestamp: "20240113" }), 400, "timestamp"],
    ["a JSON array body", (id) => [{ activityid: id, identity: "x@example.com" }], 400, "body"],
    ["a JSON string body", () => "hello", 400, "body"],
  ];

  it.each(cases)("%s", async (_label, body, status, field) => {
    const before = await fullSnapshot(panel.id);
    const result = await postActivity(panel.clientId, body(cartId));
    expect(result.status).toBe(status);
    expect(result.body.result).toBe("Failed");
    expect(result.body.message).toContain(field);
    expect(result.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    expect(await fullSnapshot(panel.id)).toBe(before);
  });

  it("names every offending parameter at once", async () => {
    const result = await postActivity(panel.clientId, cartEvent({ activity_params: { "i^prid": "x", "s^colour": "red", "f^price": 1 } }));
    expect(result.status).toBe(400);
    expect(result.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(["activity_params.i^prid", "activity_params.s^colour"]);
  });

  it.each([
    ["non-JSON", "{not json"],
    ["empty", ""],
  ])("a %s body", async (_label, raw) => {
    const before = await fullSnapshot(panel.id);
    const result = await postActivity(panel.clientId, raw, { raw: true });
    expect(result.status).toBe(400);
    expect(result.body).toMatchObject({ result: "Failed", errors: [{ field: "body" }] });
    expect(await fullSnapshot(panel.id)).toBe(before);
  });

  it("an unknown client id, or one with a malformed escape: 404", async () => {
    const result = await postActivity("no-such-client", cartEvent());
    expect(result.status).toBe(404);
    expect(result.body).toMatchObject({ result: "Failed", errors: [{ field: "client_id" }] });
    const malformed = await call("/v1/activity/singleactivity/%E0%A4%A", { method: "POST", body: JSON.stringify(cartEvent()) });
    expect(malformed.status).toBe(404);
  });

  it("a wrong key, another panel's key, or an empty bearer: 401 with the one message, nothing stored", async () => {
    const other = await createPanel();
    const before = await fullSnapshot(panel.id);
    const attempts = [
      { headers: { authorization: "Bearer mk_wrong" } },
      { headers: { authorization: `Bearer ${other.apiKey}` } },
      { headers: { authorization: "Bearer" } },
      { query: "?apikey=mk_wrong" },
      { query: `?apikey=${encodeURIComponent(other.apiKey)}`, headers: { authorization: `Bearer ${panel.apiKey}` } },
    ];
    for (const options of attempts) {
      const result = await postActivity(panel.clientId, cartEvent(), options);
      expect(result.status).toBe(401);
      expect(result.body).toMatchObject({ result: "Failed", message: "The caller could not be authenticated" });
    }
    expect(await fullSnapshot(panel.id)).toBe(before);
  });

  it("a panel without API mode: 401", async () => {
    await admin("PATCH", `/panels/${panel.id}`, { api_mode: false });
    const result = await postActivity(panel.clientId, cartEvent());
    expect(result.status).toBe(401);
    expect(await eventCount(panel.id)).toBe(0);
  });

  it("an unknown version: 404; a GET: 405", async () => {
    const version = await postActivity(panel.clientId, cartEvent(), { version: "v9" });
    expect(version.status).toBe(404);
    expect(version.body.errors[0].field).toBe("version");
    const get = await postActivity(panel.clientId, undefined, { method: "GET" });
    expect(get.status).toBe(405);
    expect(get.body.result).toBe("Failed");
    expect(await eventCount(panel.id)).toBe(0);
  });

  it("an Idempotency-Key that is too long: 400", async () => {
    const result = await postActivity(panel.clientId, cartEvent(), { headers: { "idempotency-key": "k".repeat(300) } });
    expect(result.status).toBe(400);
    expect(result.body.errors[0].field).toBe("Idempotency-Key");
    expect(await eventCount(panel.id)).toBe(0);
  });
});

describe("idempotent retries", () => {
  it("an Idempotency-Key makes a retried post store nothing twice", async () => {
    const headers = { "idempotency-key": "order-77-cart" };
    const first = await postActivity(panel.clientId, cartEvent(), { headers });
    const retry = await postActivity(panel.clientId, cartEvent(), { headers });
    expect(first.body).toMatchObject({ result: "Success", guid: "order-77-cart", duplicate: false });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ result: "Success", guid: "order-77-cart", duplicate: true });
    expect(await eventCount(panel.id)).toBe(1);
  });

  it("so does the event's guid; the same guid in another panel is another event", async () => {
    await postActivity(panel.clientId, cartEvent({ guid: "evt-1" }));
    const retry = await postActivity(panel.clientId, cartEvent({ guid: "evt-1", cts: "240101000000" }));
    expect(retry.body.duplicate).toBe(true);
    expect(await eventCount(panel.id)).toBe(1);

    const other = await createPanel();
    const otherCart = await defineActivity(other, "add_to_cart", cartParams);
    const elsewhere = await postActivity(other.clientId, { ...cartEvent({ guid: "evt-1" }), activityid: otherCart });
    expect(elsewhere.body.duplicate).toBe(false);
    expect(await eventCount(other.id)).toBe(1);
  });
});

describe("anonymous history joins the contact", () => {
  it("a uniqueid seen alone, then with an identity, then alone again: one history", async () => {
    await postActivity(panel.clientId, cartEvent({ identity: undefined, uniqueid: "v-42", cts: "240101100000" }));
    await postActivity(panel.clientId, cartEvent({ identity: undefined, uniqueid: "v-42", cts: "240101100100" }));
    expect((await contactEvents(panel, "ada@example.com")).status).toBe(404);

    await postActivity(panel.clientId, cartEvent({ uniqueid: "v-42", cts: "240101100200" }));
    const joined = (await contactEvents(panel, "ada@example.com")).body.events;
    expect(joined.map((e: any) => e.ts)).toEqual(["240101100200", "240101100100", "240101100000"]);

    await postActivity(panel.clientId, cartEvent({ identity: undefined, uniqueid: "v-42", cts: "240101100300" }));
    const later = (await contactEvents(panel, "ada@example.com")).body.events;
    expect(later.map((e: any) => e.ts)).toEqual(["240101100300", "240101100200", "240101100100", "240101100000"]);
    expect((await profileEvents(panel, "v-42")).body.events).toHaveLength(4);
  });

  it("within one batch: anonymous events before and after the identifying one all join", async () => {
    const anon = (cts: string) => ({ activityid: cartId, uniqueid: "v-batch", cts });
    const result = await postBatch(panel.clientId, [anon("240101100000"), cartEvent({ uniqueid: "v-batch", cts: "240101100100" }), anon("240101100200")]);
    expect(result.status).toBe(200);
    const events = (await contactEvents(panel, "ada@example.com")).body.events;
    expect(events.map((e: any) => e.ts)).toEqual(["240101100200", "240101100100", "240101100000"]);
  });

  it("a uniqueid later seen with another identity: what follows goes to the new contact, the past stays", async () => {
    await postActivity(panel.clientId, cartEvent({ identity: "first@example.com", uniqueid: "shared-device", cts: "240101100000" }));
    await postActivity(panel.clientId, cartEvent({ identity: "second@example.com", uniqueid: "shared-device", cts: "240101100100" }));
    await postActivity(panel.clientId, cartEvent({ identity: undefined, uniqueid: "shared-device", cts: "240101100200" }));
    expect((await contactEvents(panel, "first@example.com")).body.events.map((e: any) => e.ts)).toEqual(["240101100000"]);
    expect((await contactEvents(panel, "second@example.com")).body.events.map((e: any) => e.ts)).toEqual(["240101100200", "240101100100"]);
  });

  it("a uniqueid seen again with a contact it was seen with in an earlier pass, and with a new one: each pair kept once, every event in its history", async () => {
    await postActivity(panel.clientId, cartEvent({ identity: "first@example.com", uniqueid: "tablet", cts: "240101100000" }));
    await pipelineSettled(panel.id);
    const again = await postBatch(panel.clientId, [
      cartEvent({ identity: "first@example.com", uniqueid: "tablet", cts: "240101100100" }),
      cartEvent({ identity: "second@example.com", uniqueid: "tablet", cts: "240101100200" }),
      cartEvent({ identity: "second@example.com", uniqueid: "tablet", cts: "240101100300" }),
    ]);
    expect(again.status).toBe(200);
    await pipelineSettled(panel.id);

    const { results: pairs } = await panelData
      .prepare(
        `SELECT c.pk_value AS contact FROM uniqueid_contacts u JOIN contacts c ON c.id = u.contact_id
         WHERE u.panel_id = ? AND u.uniqueid = 'tablet' ORDER BY contact`,
      )
      .bind(panel.id)
      .all<{ contact: string }>();
    expect(pairs.map((pair) => pair.contact)).toEqual(["first@example.com", "second@example.com"]);
    const history = (await profileEvents(panel, "tablet")).body.events;
    expect(history.map((e: any) => e.ts)).toEqual(["240101100300", "240101100200", "240101100100", "240101100000"]);
  });

  it("a uniqueid's history holds its events of every contact it was seen with and its anonymous ones, paged without gaps or repeats", async () => {
    const at = (minute: number) => `24010110${String(minute).padStart(2, "0")}00`;
    await postActivity(panel.clientId, cartEvent({ identity: undefined, uniqueid: "kiosk", cts: at(0) }));
    await postActivity(panel.clientId, cartEvent({ identity: "first@example.com", uniqueid: "kiosk", cts: at(1) }));
    await postActivity(panel.clientId, cartEvent({ identity: "second@example.com", uniqueid: "kiosk", cts: at(2) }));
    await postActivity(panel.clientId, cartEvent({ identity: "first@example.com", uniqueid: "kiosk", cts: at(3) }));
    await postActivity(panel.clientId, cartEvent({ identity: undefined, uniqueid: "kiosk", cts: at(4) }));
    // Other events of the same contacts, and of another visitor: not in kiosk's history.
    await postActivity(panel.clientId, cartEvent({ identity: "first@example.com", cts: at(5) }));
    await postActivity(panel.clientId, cartEvent({ identity: "second@example.com", uniqueid: "phone", cts: at(6) }));
    await postActivity(panel.clientId, cartEvent({ identity: undefined, uniqueid: "phone", cts: at(7) }));

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await profileEvents(panel, "kiosk", `?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      seen.push(...page.body.events.map((e: any) => `${e.ts} ${e.identity ?? "-"}`));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([
      `${at(4)} -`,
      `${at(3)} first@example.com`,
      `${at(2)} second@example.com`,
      `${at(1)} first@example.com`,
      `${at(0)} -`,
    ]);
    expect((await profileEvents(panel, "phone")).body.events.map((e: any) => e.ts)).toEqual([at(7), at(6)]);
  });

  it("never joins another panel's anonymous events", async () => {
    const other = await createPanel();
    const otherCart = await defineActivity(other, "add_to_cart", cartParams);
    await postActivity(other.clientId, { activityid: otherCart, uniqueid: "shared-id" });
    await postActivity(panel.clientId, cartEvent({ uniqueid: "shared-id" }));
    expect((await contactEvents(panel, "ada@example.com")).body.events).toHaveLength(1);
    expect((await profileEvents(other, "shared-id")).body.events).toHaveLength(1);
    const stillAnonymous = await panelData.prepare("SELECT contact_id FROM events WHERE panel_id = ?").bind(other.id).first<{ contact_id: number | null }>();
    expect(stillAnonymous!.contact_id).toBeNull();
  });
});
