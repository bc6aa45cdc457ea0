import { describe, expect, it } from "vitest";
import { normalisePrimaryKey } from "../../src/domain/primary-key";

describe("normalisePrimaryKey", () => {
  it.each([
    ["  Ada@Example.COM ", "ada@example.com"],
    ["first.last+tag@sub.example.co.in", "first.last+tag@sub.example.co.in"],
  ])("EMAIL %j becomes %j", (raw, expected) => {
    expect(normalisePrimaryKey("EMAIL", "string", raw)).toEqual({ ok: true, value: expected });
  });

  it.each(["", "plain", "a@b", "a b@example.com", "@example.com", 42, null])("EMAIL %j is refused", (raw) => {
    expect(normalisePrimaryKey("EMAIL", "string", raw).ok).toBe(false);
  });

  it.each([
    ["+91 98765 43210", "+919876543210"],
    ["(020) 555-0100", "0205550100"],
    [9876543210, "9876543210"],
    // pandas' float spelling (CONTRACT 10)
    ["9876500001.0", "9876500001"],
    ["+919876500001.0", "+919876500001"],
  ])("MOBILE %j becomes %j", (raw, expected) => {
    expect(normalisePrimaryKey("MOBILE", "string", raw)).toEqual({ ok: true, value: expected });
  });

  it.each(["12345", "+1234567890123456", "98765abc", "++9198765", true])("MOBILE %j is refused", (raw) => {
    expect(normalisePrimaryKey("MOBILE", "string", raw).ok).toBe(false);
  });

  it("reads an integer key attribute as its decimal text", () => {
    expect(normalisePrimaryKey("CUSTOMER_NO", "integer", " 0042 ")).toEqual({ ok: true, value: "42" });
    expect(normalisePrimaryKey("CUSTOMER_NO", "integer", 42)).toEqual({ ok: true, value: "42" });
    expect(normalisePrimaryKey("CUSTOMER_NO", "integer", "4.2").ok).toBe(false);
    expect(normalisePrimaryKey("CUSTOMER_NO", "integer", "42.0")).toEqual({ ok: true, value: "42" });
  });
});
