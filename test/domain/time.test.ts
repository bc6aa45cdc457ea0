import { describe, expect, it } from "vitest";
import { formatCts, formatLocalIso, instantOf, isValidTimeZone, parseCts, parseIsoTimestamp, parseLocalDateTime, resolveEventTime } from "../../src/domain/time";

/** An ISO timestamp read in Asia/Kolkata, as the instant's ISO text or the refusal. */
function iso(text: string): string {
  const result = parseIsoTimestamp(text, "Asia/Kolkata");
  return result.ok ? new Date(result.value).toISOString() : result.reason;
}

describe("time formats", () => {
  it("parses cts and refuses impossible dates", () => {
    expect(parseCts("240229103000")).toEqual({ ok: true, value: { year: 2024, month: 2, day: 29, hour: 10, minute: 30, second: 0 } });
    expect(parseCts(240229103000).ok).toBe(true);
    expect(parseCts("230229103000").ok).toBe(false);
    expect(parseCts("241301000000").ok).toBe(false);
    expect(parseCts("240101246000").ok).toBe(false);
    expect(parseCts("2401011030").ok).toBe(false);
    // Twelve characters that are not twelve digits.
    for (const text of ["24010110300a", "2401011030.5", "+24010110300", "2401 1103000", "２40101103000"]) {
      expect(parseCts(text)).toEqual({ ok: false, reason: `must be YYMMDDhhmmss (12 digits), not "${text}"` });
    }
  });

  it("parses a schedule date", () => {
    expect(parseLocalDateTime("2026-12-01 09:30:00").ok).toBe(true);
    expect(parseLocalDateTime("2026-12-01T09:30:00").ok).toBe(false);
    expect(parseLocalDateTime("2026-02-30 09:30:00").ok).toBe(false);
  });

  it("knows a zone however often it is asked, and never a name that is not one", () => {
    for (let i = 0; i < 3; i++) {
      expect(isValidTimeZone("Asia/Kolkata")).toBe(true);
      expect(isValidTimeZone("Mars/Olympus")).toBe(false);
      expect(isValidTimeZone("")).toBe(false);
    }
    // Asked first, then read: the formatter kept for it gives the zone's clock.
    expect(isValidTimeZone("America/New_York")).toBe(true);
    expect(formatCts(Date.UTC(2024, 0, 15, 12, 0, 0), "America/New_York")).toBe("240115070000");
  });

  it("converts wall clock in a zone to an instant and back", () => {
    const instant = instantOf({ year: 2026, month: 12, day: 1, hour: 9, minute: 30, second: 0 }, "Asia/Kolkata");
    expect(new Date(instant).toISOString()).toBe("2026-12-01T04:00:00.000Z");
    expect(formatLocalIso(instant, "Asia/Kolkata")).toBe("2026-12-01T09:30:00");
    expect(formatCts(instant, "Asia/Kolkata")).toBe("261201093000");
    expect(formatCts(instant, "UTC")).toBe("261201040000");
  });

  it("handles daylight saving time", () => {
    const summer = instantOf({ year: 2026, month: 7, day: 1, hour: 12, minute: 0, second: 0 }, "America/New_York");
    expect(new Date(summer).toISOString()).toBe("2026-07-01T16:00:00.000Z");
    const winter = instantOf({ year: 2026, month: 1, day: 15, hour: 12, minute: 0, second: 0 }, "America/New_York");
    expect(new Date(winter).toISOString()).toBe("2026-01-15T17:00:00.000Z");
  });

  it("reads ISO timestamps: without a zone in the given zone, with Z or an offset as written", () => {
    expect(iso("2024-01-31T18:05:00")).toBe("2024-01-31T12:35:00.000Z");
    expect(iso("2024-01-31 18:05")).toBe("2024-01-31T12:35:00.000Z");
    expect(iso("2024-01-31T18:05:00.250Z")).toBe("2024-01-31T18:05:00.250Z");
    expect(iso("2024-01-31T18:05:00+02:00")).toBe("2024-01-31T16:05:00.000Z");
    expect(iso("2024-01-31T18:05:00-0130")).toBe("2024-01-31T19:35:00.000Z");
    expect(iso("2024-02-30T10:00:00")).toContain("not a real calendar date");
    expect(iso("2024-01-31T24:00:00")).toContain("not a real time of day");
    // A date alone is its midnight in the given zone (ISO 8601 calendar date, as CRM exports send a day's events).
    expect(iso("2024-01-31")).toBe("2024-01-30T18:30:00.000Z");
    expect(iso("2024-02-30")).toContain("not a real calendar date");
    expect(iso("2024-01-31Z")).toContain("ISO 8601");
    expect(iso("2024-01-31T")).toContain("ISO 8601");
    expect(iso("2024-01-31T10:00:00+25:00")).toContain("offset");
  });

  it("reads the common shapes (seconds, then nothing, Z or ±hh:mm) exactly as every other shape", () => {
    expect(iso("2024-01-31t18:05:00z")).toBe("2024-01-31T18:05:00.000Z");
    expect(iso(" 2024-01-31 18:05:00+05:30 ")).toBe("2024-01-31T12:35:00.000Z");
    expect(iso("2024-01-31T18:05:00-08:00")).toBe(iso("2024-01-31T18:05:00-0800"));
    expect(iso("2024-01-31T18:05:00+05:30")).toBe(iso("2024-01-31T18:05:00.000+05:30"));
    expect(iso("2024-02-29T23:59:59Z")).toBe("2024-02-29T23:59:59.000Z");
    expect(iso("2023-02-29T10:00:00Z")).toContain("not a real calendar date");
    expect(iso("2024-01-31T18:60:00+05:30")).toContain("not a real time of day");
    expect(iso("2024-01-31T18:05:00-24:00")).toContain("offset");
    expect(iso("2024-01-31T18:05:00+05:60")).toContain("offset");
    for (const text of ["2024-01-31X18:05:00Z", "2024-01-31T18:05:00+05-30", "2024-01-31T18:05:0aZ", "2024/01/31T18:05:00Z", "2024-01-31T18:05:00Q"]) {
      expect(iso(text)).toContain("must be an ISO 8601 date-time");
    }
  });
});

describe("event times", () => {
  const NOW = Date.UTC(2026, 0, 1);
  const at = (value: unknown, forms: Array<"cts" | "iso" | "epoch">) => {
    const result = resolveEventTime(value, forms, "Asia/Kolkata", NOW);
    return result.ok ? new Date(result.value).toISOString() : result.reason;
  };

  it("reads cts or ISO in the panel's zone, as the route allows", () => {
    expect(at("240131180500", ["cts"])).toBe("2024-01-31T12:35:00.000Z");
    expect(at(240131180500, ["cts", "iso"])).toBe("2024-01-31T12:35:00.000Z");
    expect(at("2024-01-31T18:05:00", ["cts", "iso"])).toBe("2024-01-31T12:35:00.000Z");
    expect(at("2024-01-31T18:05:00Z", ["iso"])).toBe("2024-01-31T18:05:00.000Z");
  });

  it("reads epoch seconds (a fraction allowed) or milliseconds, as numbers or digits, refusing other magnitudes", () => {
    expect(at(1706704500, ["epoch"])).toBe("2024-01-31T12:35:00.000Z");
    expect(at(1706704500.25, ["epoch"])).toBe("2024-01-31T12:35:00.250Z");
    expect(at("1706704500123", ["iso", "epoch"])).toBe("2024-01-31T12:35:00.123Z");
    expect(at("20240131", ["epoch"])).toMatch(/^must be epoch seconds \(10 digits\) or milliseconds \(13 digits\)/);
    expect(at("240131180500", ["iso", "epoch"])).toBe("must be an ISO 8601 date-time or epoch seconds or milliseconds");
    expect(at("1706704500s", ["epoch"])).toMatch(/^must be epoch seconds/);
    expect(at(-1706704500, ["epoch"])).toMatch(/^must be epoch seconds/);
  });

  it("refuses a time more than 24 hours ahead of now, naming the instant it read", () => {
    expect(at(NOW / 1000 + 24 * 3600, ["epoch"])).toBe(new Date(NOW + 24 * 3_600_000).toISOString());
    expect(at(NOW / 1000 + 24 * 3600 + 1, ["epoch"])).toBe(
      `is more than 24 hours ahead of now: it reads as ${new Date(NOW + 24 * 3_600_000 + 1000).toISOString()}; an event time says when something happened`,
    );
    expect(at("270101000000", ["cts"])).toMatch(/^is more than 24 hours ahead of now: it reads as 2026-12-31T18:30:00.000Z/);
  });

  it("takes absent, null and blank as now", () => {
    for (const value of [undefined, null, "", "  "]) expect(at(value, ["cts"])).toBe(new Date(NOW).toISOString());
  });

  it("refuses with the form's own reason, or names every form it takes", () => {
    expect(at("2024-01-31T18:05:00", ["cts"])).toMatch(/^must be YYMMDDhhmmss \(12 digits\)/);
    expect(at("240230100000", ["cts"])).toMatch(/not a real calendar date/);
    expect(at("yesterday", ["cts", "iso"])).toBe("must be YYMMDDhhmmss or an ISO 8601 date-time");
    expect(at({ at: 1 }, ["cts"])).toBe("must be YYMMDDhhmmss, not an object");
  });
});

describe("zone offsets, cached per hour", () => {
  // The reference: every field read from Intl, as before the cache.
  function intlWallClock(epochMs: number, timeZone: string) {
    const parts = Object.fromEntries(
      new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit" })
        .formatToParts(new Date(epochMs))
        .filter((p) => p.type !== "literal")
        .map((p) => [p.type, Number(p.value)]),
    );
    return { year: parts.year, month: parts.month, day: parts.day, hour: parts.hour, minute: parts.minute, second: parts.second };
  }

  it("agrees with Intl at every minute around transitions, read twice (cold and cached)", async () => {
    const { wallClockAt } = await import("../../src/domain/time");
    const windows: Array<[string, string]> = [
      ["America/New_York", "2026-03-08T06:00:00Z"],
      ["America/New_York", "2026-11-01T05:00:00Z"],
      ["Europe/London", "2026-03-29T00:00:00Z"],
      ["Australia/Lord_Howe", "2026-04-04T14:00:00Z"],
      ["Asia/Kathmandu", "2026-01-01T00:00:00Z"],
      ["Asia/Kolkata", "1990-06-15T12:34:56.789Z"],
    ];
    for (const [zone, around] of windows) {
      const centre = Date.parse(around);
      for (let pass = 0; pass < 2; pass++) {
        for (let t = centre - 3 * 3_600_000; t <= centre + 3 * 3_600_000; t += 60_000 + 7) {
          expect(wallClockAt(t, zone), `${zone} at ${new Date(t).toISOString()}`).toEqual(intlWallClock(t, zone));
        }
      }
    }
  });

  it("reads wall-clock times in a gap and an overlap as before the cache", () => {
    // 02:30 does not exist on 2026-03-08 in New York; it is read with the EDT offset (= 01:30 EST).
    expect(new Date(instantOf({ year: 2026, month: 3, day: 8, hour: 2, minute: 30, second: 0 }, "America/New_York")).toISOString()).toBe("2026-03-08T06:30:00.000Z");
    // 01:30 happens twice on 2026-11-01: the earlier instant (EDT).
    expect(new Date(instantOf({ year: 2026, month: 11, day: 1, hour: 1, minute: 30, second: 0 }, "America/New_York")).toISOString()).toBe("2026-11-01T05:30:00.000Z");
  });
});
