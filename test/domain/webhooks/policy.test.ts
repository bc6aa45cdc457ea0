import { describe, expect, it } from "vitest";
import { decideOutcome, parseRetryAfter, RETRY_SCHEDULE_MS } from "../../../src/domain/webhooks/policy";

const answer = (status: number | null, retryAfter: string | null = null, error: string | null = null) => ({ status, error, retryAfter });
const mid = () => 0.5;

describe("decideOutcome", () => {
  it.each([200, 201, 204, 299])("%i is delivered", (status) => {
    expect(decideOutcome(answer(status), 0, 0, mid)).toEqual({ kind: "delivered" });
  });

  it.each([500, 410])("%i disables at once", (status) => {
    expect(decideOutcome(answer(status), 0, 0, mid)).toMatchObject({ kind: "disable", reason: expect.stringContaining(String(status)) });
  });

  it.each([[301], [302], [400], [401], [404], [429], [502], [503], [504]])("%i is retried on the schedule", (status) => {
    expect(decideOutcome(answer(status), 0, 1_000, mid)).toEqual({ kind: "retry", at: 1_000 + 5_000, reason: `HTTP ${status}` });
    expect(decideOutcome(answer(status), 3, 1_000, mid)).toMatchObject({ at: 1_000 + 2 * 3600_000 });
  });

  it("retries errors without a status", () => {
    expect(decideOutcome(answer(null, null, "timeout"), 0, 0, mid)).toEqual({ kind: "retry", at: 5_000, reason: "error: timeout" });
  });

  it("spreads each wait by ±20%", () => {
    expect(decideOutcome(answer(503), 1, 0, () => 0)).toMatchObject({ at: 240_000 });
    expect(decideOutcome(answer(503), 1, 0, () => 1)).toMatchObject({ at: 360_000 });
  });

  it("never retries sooner than Retry-After asks", () => {
    expect(decideOutcome(answer(429, "120"), 0, 0, mid)).toMatchObject({ kind: "retry", at: 120_000 });
    expect(decideOutcome(answer(429, "1"), 0, 0, mid)).toMatchObject({ at: 5_000 });
    expect(decideOutcome(answer(503, new Date(600_000).toUTCString()), 0, 0, mid)).toMatchObject({ at: 600_000 });
  });

  it("disables when the schedule is spent: ten attempts in all", () => {
    expect(decideOutcome(answer(503), RETRY_SCHEDULE_MS.length - 1, 0, mid).kind).toBe("retry");
    expect(decideOutcome(answer(503), RETRY_SCHEDULE_MS.length, 0, mid)).toMatchObject({ kind: "disable", reason: expect.stringContaining("10 attempts") });
  });
});

describe("parseRetryAfter", () => {
  it("reads seconds and HTTP dates, caps at a day, ignores junk", () => {
    expect(parseRetryAfter("30", 0)).toBe(30_000);
    expect(parseRetryAfter("999999", 0)).toBe(24 * 3600_000);
    expect(parseRetryAfter("Thu, 01 Jan 1970 00:01:00 GMT", 0)).toBe(60_000);
    expect(parseRetryAfter("Thu, 01 Jan 1970 00:01:00 GMT", 120_000)).toBe(0);
    expect(parseRetryAfter("soon", 0)).toBeNull();
    expect(parseRetryAfter(null, 0)).toBeNull();
  });
});
