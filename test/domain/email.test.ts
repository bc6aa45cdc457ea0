import { describe, expect, it } from "vitest";
import { isEmailAddress, normaliseEmail, parseAddressList } from "../../src/domain/email";

describe("the email rule", () => {
  it("takes addresses with any local-part characters an address may hold", () => {
    for (const address of ["ada@example.com", "first.last+tag@sub.example.co.in", "o'neil@example.ie", "a!b#c@example.com"]) {
      expect(isEmailAddress(address), address).toBe(true);
    }
  });

  it("refuses what cannot be an address, the backslash included", () => {
    for (const text of ["", "plain", "a@b", "a b@example.com", "@example.com", "a@example.com,b@example.com", "a\\b@example.com", `${"a".repeat(250)}@x.com`]) {
      expect(isEmailAddress(text), text).toBe(false);
    }
  });

  it("normalises one address or names the text it refused", () => {
    expect(normaliseEmail("  Ada@Example.COM ")).toEqual({ ok: true, value: "ada@example.com" });
    expect(normaliseEmail("nope")).toEqual({ ok: false, reason: 'is not a valid email address: "nope"' });
    expect(normaliseEmail("chloé@example.com")).toEqual({ ok: false, reason: 'has a non-ASCII local part ("chloé"): that needs SMTPUTF8, which the email provider does not support' });
    expect(isEmailAddress("ada@bücher.example")).toBe(true);
  });
});

describe("address lists (notifyemail, notify_me)", () => {
  it("takes one or several addresses, by comma or semicolon, each once", () => {
    expect(parseAddressList("Ops@Example.com", 10)).toEqual({ ok: true, value: ["ops@example.com"] });
    expect(parseAddressList("a@example.com, b@example.com;A@example.com", 10)).toEqual({ ok: true, value: ["a@example.com", "b@example.com"] });
  });

  it("names every bad address, and refuses none or too many", () => {
    expect(parseAddressList("a@example.com, nope, x@", 10)).toEqual({ ok: false, reason: "is not an email address: nope, x@" });
    expect(parseAddressList(" , ", 10).ok).toBe(false);
    expect(parseAddressList("a@x.com,b@x.com,c@x.com", 2)).toEqual({ ok: false, reason: "must hold at most 2 email addresses, not 3" });
  });
});
