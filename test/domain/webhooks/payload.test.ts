import { describe, expect, it } from "vitest";
import { buildEventObject, describeEventObject, sampleEvents, type WebhookEvent } from "../../../src/domain/webhooks/payload";

// 2026-11-22 10:15:30 in Asia/Kolkata.
const at = Date.UTC(2026, 10, 22, 4, 45, 30);
const v2 = { version: "2.0" as const, webhookName: "Hook", timeZone: "Asia/Kolkata" };
const v1 = { ...v2, version: "1.0" as const };

describe("buildEventObject", () => {
  const apnDelivered: WebhookEvent & { guid: string } = {
    channel: "apn",
    event: "delivered",
    msgid: "msg-9",
    journeyName: "Welcome",
    occurredAt: at,
    guid: "g-1",
    customParams: { Action: "welcomed" },
    attributes: { EMAIL: "a@x.io" },
    userAttributes: { TIER: "gold" },
    details: { foreignkey: "a@x.io", token: ["tok"], token_id: null },
  };

  it("writes 2.0 with msgid, udt_params and timestamp", () => {
    expect(JSON.stringify(buildEventObject(apnDelivered, v2))).toBe(
      JSON.stringify({
        channel: "apn",
        event: "delivered",
        webhook_name: "Hook",
        msgid: "msg-9",
        journey_name: "Welcome",
        custom_params: { Action: "welcomed" },
        att_params: { EMAIL: "a@x.io" },
        udt_params: { TIER: "gold" },
        event_params: { foreignkey: "a@x.io", token: ["tok"], token_id: null, timestamp: "2026-11-22T10:15:30", ts: 261122101530, guid: "g-1" },
      }),
    );
  });

  it("writes 1.0 with view, without msgid, udt_params and timestamp", () => {
    expect(buildEventObject(apnDelivered, v1)).toEqual({
      channel: "apn",
      event: "view",
      webhook_name: "Hook",
      journey_name: "Welcome",
      custom_params: { Action: "welcomed" },
      att_params: { EMAIL: "a@x.io" },
      event_params: { foreignkey: "a@x.io", token: ["tok"], token_id: null, ts: 261122101530, guid: "g-1" },
    });
  });

  it("keeps delivered for sms in 1.0 and adds linkid to 1.0 clicks only", () => {
    expect(buildEventObject({ ...apnDelivered, channel: "sms" }, v1).event).toBe("delivered");
    const click = { ...apnDelivered, channel: "email" as const, event: "click" as const, linkId: 7 };
    expect((buildEventObject(click, v1).event_params as Record<string, unknown>).linkid).toBe(7);
    expect((buildEventObject({ ...click, linkId: undefined }, v1).event_params as Record<string, unknown>).linkid).toBe(-1);
    expect(buildEventObject(click, v2).event_params).not.toHaveProperty("linkid");
  });

  it("writes custom_activity with msgid -1, no event, empty custom_params and the payload", () => {
    const custom: WebhookEvent & { guid: string } = {
      channel: "custom_activity",
      journeyName: "Cart",
      occurredAt: at,
      guid: "g-2",
      details: { activity_name: "add_to_cart", activity_id: 12, activity_source: "web", identity: "a@x.io", foreignkey: "a@x.io" },
      payload: { items: [{ name_s: "Shirt" }] },
    };
    expect(buildEventObject(custom, v2)).toEqual({
      channel: "custom_activity",
      webhook_name: "Hook",
      msgid: "-1",
      journey_name: "Cart",
      custom_params: {},
      att_params: {},
      udt_params: {},
      event_params: { activity_name: "add_to_cart", activity_id: 12, activity_source: "web", identity: "a@x.io", foreignkey: "a@x.io", timestamp: "2026-11-22T10:15:30", ts: 261122101530, guid: "g-2" },
      payload_params: { items: [{ name_s: "Shirt" }] },
    });
    expect(buildEventObject(custom, v1)).not.toHaveProperty("msgid");
  });
});

describe("describeEventObject", () => {
  it("reads ts in the panel's zone, keeps guid and linkid, drops what the service writes", () => {
    const described = describeEventObject(
      { channel: "sms", event: "click", msgid: "s", journey_name: "J", event_params: { ts: 261122101530, timestamp: "ignored", guid: "g", linkid: 3, mobile: "91" } },
      "Asia/Kolkata",
      at,
    );
    expect(described).toEqual({
      ok: true,
      event: expect.objectContaining({ occurredAt: at, guid: "g", linkId: 3, details: { mobile: "91" } }),
    });
  });

  it("names the offending member", () => {
    expect(describeEventObject({ channel: "email", event: "delivered", journey_name: "J" }, "UTC", 0)).toMatchObject({ ok: false, field: "event" });
    expect(describeEventObject({ channel: "email", event: "open", journey_name: "J", event_params: { linkid: "x" } }, "UTC", 0)).toMatchObject({ ok: false, field: "event_params.linkid" });
    expect(describeEventObject({ channel: "email", event: "open", journey_name: "J", event_params: { ts: 261340000000 } }, "UTC", 0)).toMatchObject({ ok: false, field: "event_params.ts" });
    // An event object a day and more ahead of now is a misread date, not an event.
    expect(describeEventObject({ channel: "email", event: "open", journey_name: "J", event_params: { ts: 261124101530 } }, "UTC", Date.UTC(2026, 10, 22))).toMatchObject({
      ok: false,
      field: "event_params.ts",
      message: expect.stringContaining("more than 24 hours ahead"),
    });
  });
});

describe("the test action's sample", () => {
  it("sends its custom activity as a live journey event is sent: a numeric activity_id, the params under their own names and types", () => {
    const sample = sampleEvents(at, "EMAIL").find((e) => e.channel === "custom_activity")!;
    const object = buildEventObject(sample, v2) as { event_params: Record<string, unknown>; payload_params: { items: Record<string, unknown>[] } };
    expect(object.event_params.activity_id).toBe(1);
    expect(object.payload_params).toEqual({ items: [{ name: "Blue shirt", prid: "SKU-1", price: 499, prqt: 1 }] });
  });
});
