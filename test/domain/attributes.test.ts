import { describe, expect, it } from "vitest";
import { checkAttributes, checkJsonValue, checkTextValue, DEFAULT_ATTRIBUTES, isRealCalendarDate, isPhoneAttribute, nearestAttribute, readClientValue } from "../../src/domain/attributes";

describe("checkJsonValue", () => {
  it.each([
    ["string", "x", "x"],
    ["string", 9876543210, "9876543210"],
    ["integer", 36, 36],
    ["integer", "36", 36],
    ["integer", "-3", -3],
    ["integer", "12.0", 12],
    ["float", 2.5, 2.5],
    ["float", "12.50", 12.5],
    ["float", "-3", -3],
    ["float", 3, 3],
    ["boolean", false, false],
    ["date", "2024-02-29", "2024-02-29"],
    ["date", "2024-02-29T10:30:00Z", "2024-02-29T10:30:00Z"],
  ] as const)("%s accepts %j", (type, value, expected) => {
    expect(checkJsonValue(type, value)).toEqual({ ok: true, value: expected });
  });

  it("names the text it refuses", () => {
    expect(checkJsonValue("integer", "22 years")).toEqual({ ok: false, reason: 'must be an integer, not "22 years"' });
    expect(checkJsonValue("integer", "12.5")).toEqual({ ok: false, reason: 'must be an integer, not "12.5"' });
    expect(checkJsonValue("integer", true)).toEqual({ ok: false, reason: "must be an integer, not a boolean" });
  });

  it.each([
    ["string", true],
    ["string", {}],
    ["integer", "12.5"],
    ["integer", "22 years"],
    ["integer", ""],
    ["integer", " 36"],
    ["integer", 3.5],
    ["integer", 2 ** 60],
    ["float", "2.5 kg"],
    ["float", "0x10"],
    ["float", "Infinity"],
    ["float", ""],
    ["boolean", "true"],
    ["date", "2023-02-29"],
    ["date", "2024-13-01"],
    ["date", "2024-01-01T25:00:00"],
    ["date", 20240101],
  ] as const)("%s refuses %j", (type, value) => {
    expect(checkJsonValue(type, value).ok).toBe(false);
  });
});

describe("checkTextValue (CSV cells)", () => {
  it("reads text as the attribute's type", () => {
    expect(checkTextValue("integer", " 42 ")).toEqual({ ok: true, value: 42 });
    expect(checkTextValue("float", "4.25")).toEqual({ ok: true, value: 4.25 });
    expect(checkTextValue("boolean", "Yes")).toEqual({ ok: true, value: true });
    expect(checkTextValue("integer", "4.2").ok).toBe(false);
    expect(checkTextValue("float", "abc").ok).toBe(false);
    expect(checkTextValue("float", "0x10").ok).toBe(false);
    expect(checkTextValue("float", "1.5E+07")).toEqual({ ok: true, value: 15_000_000 });
  });
});

describe("checkAttributes", () => {
  const schema = new Map([
    ["EMAIL", "string"],
    ["AGE", "integer"],
  ] as const);

  it("canonicalises names and reports every problem", () => {
    const result = checkAttributes(schema, { email: "a@b.c", Age: "x", shoe: 1 });
    expect(result.values).toEqual({ EMAIL: "a@b.c" });
    expect(result.problems.map((p) => p.field)).toEqual(["data.Age", "data.shoe"]);
  });

  it("refuses a name given twice in different cases", () => {
    const result = checkAttributes(schema, { AGE: 1, age: 2 });
    expect(result.problems).toHaveLength(1);
  });
});

describe("nearestAttribute", () => {
  const defaults = new Map(DEFAULT_ATTRIBUTES);

  it.each([
    ["FIRST_NAME", "FIRSTNAME"],
    ["first-name", "FIRSTNAME"],
    ["LAST_NAME", "LASTNAME"],
    ["CUSTOMERNAME", "NAME"],
    ["EMIAL", "EMAIL"],
    ["email_id", "EMAIL"],
    ["MOBILE_NO", "MOBILE"],
    ["COUNTY", "COUNTRY"],
    ["AGES", "AGE"],
  ])("%s: %s", (name, nearest) => {
    expect(nearestAttribute(name, defaults)).toBe(nearest);
  });

  it.each(["SHOE_SIZE", "PHONE", "X", "___"])("%s: none close", (name) => {
    expect(nearestAttribute(name, defaults)).toBeUndefined();
  });
});

describe("isRealCalendarDate", () => {
  it("answers as a Date does, for every day of many years and for values no calendar has", () => {
    const byDate = (y: number, m: number, d: number) => {
      const date = new Date(Date.UTC(y, m - 1, d));
      return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d;
    };
    const years = [0, 50, 99, 100, 999, 1000, 1600, 1700, 1900, 1999, 2000, 2023, 2024, 2100, 2400, 9999, 10000, -4, 275760, 2024.5, Number.NaN];
    for (const y of years) {
      for (const m of [-1, 0, 1, 2, 3, 4, 6, 9, 11, 12, 13, 1.5]) {
        for (const d of [-1, 0, 1, 15, 28, 29, 30, 31, 32, 2.5]) expect(isRealCalendarDate(y, m, d), `${y}-${m}-${d}`).toBe(byDate(y, m, d));
      }
    }
  });
});

describe("readClientValue (CONTRACT 10)", () => {
  it('reads "" (or blanks) for a non-text type as no value; text keeps ""', () => {
    for (const type of ["integer", "float", "date", "boolean"] as const) {
      expect(readClientValue(type, "")).toEqual({ ok: true, value: null });
      expect(readClientValue(type, "  ", undefined, "text")).toEqual({ ok: true, value: null });
    }
    expect(readClientValue("string", "")).toEqual({ ok: true, value: "" });
  });

  it("reads integral decimals as integers and still refuses 34.5", () => {
    expect(readClientValue("integer", 34.0)).toEqual({ ok: true, value: 34 });
    expect(readClientValue("integer", "34.0")).toEqual({ ok: true, value: 34 });
    expect(readClientValue("integer", "34.0", undefined, "text")).toEqual({ ok: true, value: 34 });
    expect(readClientValue("integer", 34.5).ok).toBe(false);
    expect(readClientValue("integer", "34.5", undefined, "text").ok).toBe(false);
  });

  it("drops pandas' .0 from phone attributes only", () => {
    expect(readClientValue("string", "9876500001.0", isPhoneAttribute("MOBILE"))).toEqual({ ok: true, value: "9876500001" });
    expect(readClientValue("string", "+919876500001.0", isPhoneAttribute("alt_phone"))).toEqual({ ok: true, value: "+919876500001" });
    expect(readClientValue("string", "9876500001.0", isPhoneAttribute("MOBILE_NO"), "text")).toEqual({ ok: true, value: "9876500001" });
    expect(readClientValue("string", "9876500001.5", isPhoneAttribute("MOBILE"))).toEqual({ ok: true, value: "9876500001.5" });
    expect(readClientValue("string", "12.0", isPhoneAttribute("CITY"))).toEqual({ ok: true, value: "12.0" });
    expect(readClientValue("string", "12.0")).toEqual({ ok: true, value: "12.0" });
    expect(isPhoneAttribute("PHONENUMBER")).toBe(true);
    expect(isPhoneAttribute("NAME")).toBe(false);
  });
});
