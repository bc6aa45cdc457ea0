import { describe, expect, it } from "vitest";
import { uuidV7 } from "../../src/lib/random";

describe("uuidV7", () => {
  it("is a version-7 UUID whose text sorts by creation time", () => {
    const earlier = uuidV7(Date.UTC(2024, 0, 1));
    const later = uuidV7(Date.UTC(2024, 0, 1) + 1);
    expect(earlier).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(earlier.slice(0, 13)).toBe("018cc251-f400");
    expect(earlier < later).toBe(true);
    expect(new Set(Array.from({ length: 1000 }, () => uuidV7(0))).size).toBe(1000);
  });

  it("takes each call's own time, whatever the call before it took", () => {
    const at = (now: number) => uuidV7(now).slice(0, 13);
    expect([at(Date.UTC(2024, 0, 1)), at(Date.UTC(2024, 0, 1) + 1), at(Date.UTC(2024, 0, 1)), at(0), at(0.9)]).toEqual([
      "018cc251-f400",
      "018cc251-f401",
      "018cc251-f400",
      "00000000-0000",
      "00000000-0000",
    ]);
  });
});
