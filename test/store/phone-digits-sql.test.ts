import { describe, expect, it } from "vitest";
import { phoneDigits } from "../../src/domain/sms";
import { phoneDigitsSql } from "../../src/store/phone-digits-sql";
import { panelData } from "../support/helpers";

// A segment's `reachable: sms` finds a number's stop in SQL, a send by phoneDigits: they must agree.
describe("a MOBILE's digits in SQL", () => {
  it("are phoneDigits' for every number it reads, and no stop's key (digits alone, 6 to 15) for one it refuses", async () => {
    const spellings = [
      "+919800000401", "919800000401", " +91 (98000) 00401 ", "+91-98000-00401", "+1 415.555.0100", "\t+14155550100\n", "+1\u00a0415\u00a0555\u00a00100",
      "++14155550100", "1+4155550100", "(+1)4155550100", "415-CALL-NOW", "12345", "1234567890123456", "", "+",
    ];
    const { results } = await panelData
      .prepare(`SELECT ${phoneDigitsSql("value")} AS digits FROM json_each(?) ORDER BY key`)
      .bind(JSON.stringify(spellings))
      .all<{ digits: string }>();
    spellings.forEach((raw, i) => {
      const digits = phoneDigits(raw);
      if (digits) expect([raw, results[i]!.digits]).toEqual([raw, digits]);
      else expect([raw, /^\d{6,15}$/.test(results[i]!.digits)]).toEqual([raw, false]);
    });
  });
});
