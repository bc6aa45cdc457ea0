import { describe, expect, it } from "vitest";
import { readsEvent, type SegmentNode } from "../../src/domain/segments";

describe("readsEvent: which recorded events can change a segment's membership", () => {
  const match: SegmentNode = {
    all: [
      { attribute: "CITY", op: "eq", value: "Pune" },
      { not: { activity: "Purchase", op: "performed", within_days: 30 } },
      { any: [{ engagement: "opened", campaign: "any" }, { engagement: "received", campaign: "any" }] },
    ],
  };

  it("an activity a behaviour condition names (any case), or the email event an engagement counts", () => {
    expect(readsEvent(match, { channel: "custom_activity", name: "purchase" })).toBe(true);
    expect(readsEvent(match, { channel: "email", name: "open" })).toBe(true);
  });

  it("not another activity, another email event, or an activity named like an email event", () => {
    expect(readsEvent(match, { channel: "custom_activity", name: "add_to_cart" })).toBe(false);
    expect(readsEvent(match, { channel: "email", name: "click" })).toBe(false);
    expect(readsEvent(match, { channel: "custom_activity", name: "open" })).toBe(false);
    expect(readsEvent({ list: 3, op: "in" }, { channel: "custom_activity", name: "purchase" })).toBe(false);
  });

  it("email reachability reads every email event (a bounce or an unsubscribe suppresses the address)", () => {
    expect(readsEvent({ reachable: "email" }, { channel: "email", name: "bounce" })).toBe(true);
    expect(readsEvent({ reachable: "sms" }, { channel: "email", name: "bounce" })).toBe(false);
  });
});
