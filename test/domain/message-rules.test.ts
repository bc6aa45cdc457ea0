import { describe, expect, it } from "vitest";
import { capAllowsAt, contactTimeZone, localTimeOnDay, nextLocalTime, quietUntil, readMessageRules, type MessageRules } from "../../src/domain/message-rules";

const DAY = 86_400_000;
const rules = (quiet: MessageRules["quiet_hours"]): MessageRules => ({ caps: [], quiet_hours: quiet });

describe("frequency caps", () => {
  it("allow a message while every cap has room, else from when the oldest counted send leaves the fullest window", () => {
    const now = 100 * DAY;
    const caps = [
      { channel: "email" as const, max: 3, days: 7 },
      { channel: "email" as const, max: 1, days: 1 },
    ];
    expect(capAllowsAt(caps, [], now)).toBeNull();
    expect(capAllowsAt(caps, [now - 2 * DAY, now - 3 * DAY], now)).toBeNull();
    // The daily cap is full: free a day after today's send.
    expect(capAllowsAt(caps, [now - 2 * DAY, now - 1000], now)).toBe(now - 1000 + DAY);
    // The weekly cap is full too and frees later: when the oldest of the three leaves the week.
    expect(capAllowsAt(caps, [now - 6 * DAY, now - 3 * DAY, now - 2 * DAY], now)).toBe(now + DAY);
    // A send exactly a window ago no longer counts.
    expect(capAllowsAt([{ channel: "sms", max: 1, days: 1 }], [now - DAY], now)).toBeNull();
  });
});

describe("quiet hours and local times", () => {
  it("a window over midnight holds from its start to its end on the zone's clock; outside it nothing is held", () => {
    const quiet = rules([{ channel: "sms", from: "21:00", to: "09:00" }]);
    // 2026-11-24 18:00Z is 23:30 in Kolkata: held until 09:00 there (03:30Z the next day).
    expect(quietUntil(quiet, "sms", Date.UTC(2026, 10, 24, 18, 0), "Asia/Kolkata")).toBe(Date.UTC(2026, 10, 25, 3, 30));
    // 02:00Z is 07:30 in Kolkata: held until 09:00 the same day.
    expect(quietUntil(quiet, "sms", Date.UTC(2026, 10, 25, 2, 0), "Asia/Kolkata")).toBe(Date.UTC(2026, 10, 25, 3, 30));
    // 09:00 sharp is out of it; so is another channel.
    expect(quietUntil(quiet, "sms", Date.UTC(2026, 10, 25, 3, 30), "Asia/Kolkata")).toBeNull();
    expect(quietUntil(quiet, "email", Date.UTC(2026, 10, 24, 18, 0), "Asia/Kolkata")).toBeNull();
    // A window within one day (12:00-14:00).
    const lunch = rules([{ channel: "push", from: "12:00", to: "14:00" }]);
    expect(quietUntil(lunch, "push", Date.UTC(2026, 10, 24, 13, 0), "UTC")).toBe(Date.UTC(2026, 10, 24, 14, 0));
    expect(quietUntil(lunch, "push", Date.UTC(2026, 10, 24, 15, 0), "UTC")).toBeNull();
  });

  it("the next 10:00 on a zone's clock, across a daylight-saving change", () => {
    // New York springs forward on 2026-03-08: 10:00 that day is 14:00Z (EDT), the day before 15:00Z (EST).
    expect(nextLocalTime("10:00", Date.UTC(2026, 2, 7, 16, 0), "America/New_York")).toBe(Date.UTC(2026, 2, 8, 14, 0));
    expect(nextLocalTime("10:00", Date.UTC(2026, 2, 7, 12, 0), "America/New_York")).toBe(Date.UTC(2026, 2, 7, 15, 0));
    // 02:30 does not exist that day: read with the offset after the change (06:30Z), as schedules are.
    expect(nextLocalTime("02:30", Date.UTC(2026, 2, 8, 0, 0), "America/New_York")).toBe(Date.UTC(2026, 2, 8, 6, 30));
    // The earliest and latest zones: one date's 10:00 spans 26 hours.
    const day = { year: 2026, month: 11, day: 24 };
    expect(localTimeOnDay("10:00", day, "Pacific/Kiritimati")).toBe(Date.UTC(2026, 10, 23, 20, 0));
    expect(localTimeOnDay("10:00", day, "Etc/GMT+12")).toBe(Date.UTC(2026, 10, 24, 22, 0));
  });

  it("a contact's zone is its TIMEZONE attribute when that names a zone, else the panel's; stored rules that no longer parse are none", () => {
    expect(contactTimeZone({ TIMEZONE: "America/New_York" }, "Asia/Kolkata")).toBe("America/New_York");
    expect(contactTimeZone({ TIMEZONE: "Mars/Olympus" }, "Asia/Kolkata")).toBe("Asia/Kolkata");
    expect(contactTimeZone({}, "UTC")).toBe("UTC");
    expect(readMessageRules("{}")).toEqual({ caps: [], quiet_hours: [] });
    expect(readMessageRules('{"caps":[{"channel":"fax"}]}')).toEqual({ caps: [], quiet_hours: [] });
  });
});
