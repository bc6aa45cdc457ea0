import { describe, expect, it } from "vitest";
import { abOrderKey, abSeed, pickWinner, testRecipients } from "../../src/domain/ab-test";

describe("A/B test rules", () => {
  it("orders contacts by a hash of the campaign and the contact: the same each time, different per campaign, spread over the ids", () => {
    const ids = Array.from({ length: 1000 }, (_, i) => i + 1);
    const order = (campaign: string) => [...ids].sort((a, b) => abOrderKey(abSeed(campaign), a) - abOrderKey(abSeed(campaign), b) || a - b);
    expect(order("cmp_1")).toEqual(order("cmp_1"));
    expect(order("cmp_1").slice(0, 20)).not.toEqual(order("cmp_2").slice(0, 20));
    // The first fifth is no block of neighbouring ids: about a fifth of each tenth of the ids.
    const first = order("cmp_1").slice(0, 200);
    for (let tenth = 0; tenth < 10; tenth++) {
      const inTenth = first.filter((id) => id > tenth * 100 && id <= (tenth + 1) * 100).length;
      expect(inTenth).toBeGreaterThan(5);
      expect(inTenth).toBeLessThan(40);
    }
  });

  it("tests the share of the audience, at least one per variant", () => {
    expect(testRecipients(1000, 20, 2)).toBe(200);
    expect(testRecipients(12, 20, 2)).toBe(2);
    expect(testRecipients(5, 1, 3)).toBe(3);
    expect(testRecipients(2, 10, 4)).toBe(2);
  });

  it("picks the most unique opens or clicks, a tie to the first variant", () => {
    const tallies = [
      { variant: 0, sent: 10, unique_opens: 4, unique_clicks: 1 },
      { variant: 1, sent: 10, unique_opens: 5, unique_clicks: 1 },
      { variant: 2, sent: 10, unique_opens: 5, unique_clicks: 0 },
    ];
    expect(pickWinner(tallies, "unique_opens", 3)).toBe(1);
    expect(pickWinner(tallies, "unique_clicks", 3)).toBe(0);
    expect(pickWinner([], "unique_opens", 2)).toBe(0);
  });
});
