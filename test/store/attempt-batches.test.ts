import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { countAttemptsBatched } from "../../src/store/attempt-batches";
import { d1Counted } from "../../src/store/d1-count";
import { countAttempts } from "../../src/store/operator-sessions";

// Signup form submissions count their rate limits with the concurrent submissions' counts, one
// round trip for those that arrive while a batch is on its way (bench:forms). Each answer must be
// the one countAttempts gives when the calls run one after another.

const WINDOW_MS = 10 * 60_000;

describe("rate-limit counts batched across concurrent requests", () => {
  it("counts that arrive together go in one round trip and are answered as if counted in turn", async () => {
    const roundTrips: number[] = [];
    const db = d1Counted(env, (statements) => roundTrips.push(statements)).DB;
    const tag = crypto.randomUUID();
    const now = Date.now();
    const kept: Promise<unknown>[] = [];
    const count = (attempts: { subject: string; limit: number }[]) => countAttemptsBatched(db, attempts, now, now - WINDOW_MS, (work) => kept.push(work));
    const ip = { subject: `batch-ip:${tag}`, limit: 6 };
    const address = (n: number) => ({ subject: `batch-key:${tag}:${n}`, limit: 2 });

    // Eight submissions at once: one IP (six allowed), addresses 1 (three times, two allowed) and 2..6.
    const answers = await Promise.all([1, 1, 2, 1, 3, 4, 5, 6].map((n) => count([ip, address(n)])));
    expect(answers).toEqual([
      [true, true],
      [true, true],
      [true, true],
      // Address 1's third: the IP is still within, the address is not.
      [true, false],
      [true, true],
      [true, true],
      // The IP's seventh and eighth: refused by the IP, so their addresses are not counted.
      [false, false],
      [false, false],
    ]);
    // The first went alone; the seven that came while it was on its way went together.
    expect(roundTrips).toEqual([1, 7]);
    await Promise.all(kept);
    expect(kept).toHaveLength(2);

    // The counts stand as countAttempts left them: the next of address 2 is its second, within.
    expect(await countAttempts(env.DB, [address(2)], now, now - WINDOW_MS)).toEqual([true]);
    // Address 5 was not counted (its IP was refused first): its first count, within a limit of one.
    const once = { subject: address(5).subject, limit: 1 };
    expect(await countAttempts(env.DB, [once], now, now - WINDOW_MS)).toEqual([true]);
    expect(await countAttempts(env.DB, [once], now, now - WINDOW_MS)).toEqual([false]);
  });

  it("a crowd larger than a batch's bound goes in several batches", async () => {
    const roundTrips: number[] = [];
    const db = d1Counted(env, (statements) => roundTrips.push(statements)).DB;
    const tag = crypto.randomUUID();
    const now = Date.now();
    const answers = await Promise.all(Array.from({ length: 26 }, (_, i) => countAttemptsBatched(db, [{ subject: `batch-crowd:${tag}:${i}`, limit: 1 }], now, now - WINDOW_MS, () => {})));
    expect(answers.every((a) => a.length === 1 && a[0] === true)).toBe(true);
    // The first alone, then at most 20 statements a round trip.
    expect(roundTrips).toEqual([1, 20, 5]);
  });

  it("a count alone goes at once, in a round trip of its own", async () => {
    const roundTrips: number[] = [];
    const db = d1Counted(env, (statements) => roundTrips.push(statements)).DB;
    const now = Date.now();
    const subject = `batch-alone:${crypto.randomUUID()}`;
    expect(await countAttemptsBatched(db, [{ subject, limit: 1 }], now, now - WINDOW_MS, () => {})).toEqual([true]);
    expect(await countAttemptsBatched(db, [{ subject, limit: 1 }], now, now - WINDOW_MS, () => {})).toEqual([false]);
    expect(roundTrips).toEqual([1, 1]);
    expect(await countAttemptsBatched(db, [], now, now - WINDOW_MS, () => {})).toEqual([]);
    expect(roundTrips).toEqual([1, 1]);
  });
});
