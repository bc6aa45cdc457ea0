import { describe, expect, it } from "vitest";
import { phoneDigits, replaceSmsLinks, replyKeyword, smsLength, smsLinks } from "../../src/domain/sms";

describe("SMS length in segments", () => {
  it("counts GSM-7 septets: 160 in one segment, 153 per segment once split; extension characters take two", () => {
    expect(smsLength("a".repeat(160))).toEqual({ encoding: "GSM-7", characters: 160, units: 160, segments: 1 });
    expect(smsLength("a".repeat(161)).segments).toBe(2);
    expect(smsLength("a".repeat(306)).segments).toBe(2);
    expect(smsLength("a".repeat(307)).segments).toBe(3);
    expect(smsLength("€".repeat(80))).toEqual({ encoding: "GSM-7", characters: 80, units: 160, segments: 1 });
    expect(smsLength("€".repeat(81)).segments).toBe(2);
    expect(smsLength("Grüße à Paris, 5 £ {ok}").encoding).toBe("GSM-7");
  });

  it("falls back to UCS-2 for any other character: 70 code units in one segment, 67 per segment; an emoji is two units", () => {
    expect(smsLength("नमस्ते")).toEqual({ encoding: "UCS-2", characters: 6, units: 6, segments: 1 });
    expect(smsLength("ç".repeat(70)).segments).toBe(1);
    expect(smsLength("ç".repeat(71)).segments).toBe(2);
    expect(smsLength("ç".repeat(134)).segments).toBe(2);
    expect(smsLength("ç".repeat(135)).segments).toBe(3);
    expect(smsLength("🙂")).toEqual({ encoding: "UCS-2", characters: 1, units: 2, segments: 1 });
  });
});

describe("links, numbers and replies", () => {
  it("finds links without the sentence's punctuation and replaces them in order", () => {
    const text = "See https://shop.example.com/cart?id=7. Or (http://a.example/x), not ftp://b.";
    expect(smsLinks(text)).toEqual(["https://shop.example.com/cart?id=7", "http://a.example/x"]);
    expect(replaceSmsLinks(text, (_url, i) => `S${i}`)).toBe("See S0. Or (S1), not ftp://b.");
  });

  it("reduces numbers to digits with the country code, and reads STOP and START", () => {
    expect(phoneDigits("+1 (415) 555-0100")).toBe("14155550100");
    expect(phoneDigits("919800000001")).toBe("919800000001");
    expect(phoneDigits("call me")).toBeNull();
    expect(phoneDigits(null)).toBeNull();
    expect(replyKeyword(" stop ")).toBe("stop");
    expect(replyKeyword("UNSUBSCRIBE")).toBe("stop");
    expect(replyKeyword("Start")).toBe("start");
    expect(replyKeyword("please stop")).toBeNull();
  });
});
