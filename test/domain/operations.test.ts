import { describe, expect, it } from "vitest";
import { conditionChanges, cronLateness, shardFull, type AlertCondition } from "../../src/domain/operations";

const MIN = 60_000;
const condition = (key: string): AlertCondition => ({ key, kind: "webhook_disabled", panelId: "p", detail: key });

describe("operations alert rules", () => {
  it("measures the cron's lateness by its own start, the gap since the tick before, and the CRON queue's oldest message", () => {
    const at = 10 * 60 * MIN;
    expect(cronLateness({ scheduledAt: at, startedAt: at + 2_000 }, at - MIN, null)).toBe(2_000);
    expect(cronLateness({ scheduledAt: at - 7 * MIN, startedAt: at }, at - MIN, null)).toBe(7 * MIN);
    // Ticks missed: the last one started 9 minutes ago, 8 more than the minute it should be.
    expect(cronLateness({ scheduledAt: at, startedAt: at }, at - 9 * MIN, null)).toBe(8 * MIN);
    expect(cronLateness({ scheduledAt: at, startedAt: at }, null, at - 6 * MIN)).toBe(6 * MIN);
    // A tick run ahead of its time (a test, a clock skew) is not late.
    expect(cronLateness({ scheduledAt: at + MIN, startedAt: at }, null, null)).toBe(0);
  });

  it("raises what is newly found and clears what is no longer found", () => {
    expect(conditionChanges(["a", "b"], [condition("b"), condition("c")])).toEqual({ raised: [condition("c")], cleared: ["a"] });
    expect(conditionChanges([], [])).toEqual({ raised: [], cleared: [] });
  });

  it("calls a shard full past 80% of its limit", () => {
    expect(shardFull(8 * 1024 ** 3, 10 * 1024 ** 3)).toBe(false);
    expect(shardFull(8 * 1024 ** 3 + 1, 10 * 1024 ** 3)).toBe(true);
  });
});
