import { describe, expect, it } from "vitest";
import { alertReach, concerns, conditionChanges, cronLateness, shardFull, type AlertCondition } from "../../src/domain/operations";

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

  it("tells a panel's owners of their panel's conditions, their shards' (partitions' included) and a late cron; the deployment of all but each panel's dead letters", () => {
    const webhook: AlertCondition = { key: "webhook_disabled:p:w", kind: "webhook_disabled", panelId: "p", detail: "" };
    const full: AlertCondition = { key: "shard_full:2", kind: "shard_full", panelId: null, shard: 2, detail: "" };
    const late: AlertCondition = { key: "cron_late", kind: "cron_late", panelId: null, detail: "" };
    const letters: AlertCondition = { key: "dead_letters", kind: "dead_letters", panelId: null, detail: "" };
    const pLetters: AlertCondition = { key: "dead_letters:p", kind: "dead_letters", panelId: "p", detail: "" };
    const p = { panelId: "p", shards: [0, 2] };
    const q = { panelId: "q", shards: [1] };
    const deployment = { panelId: null, shards: [] };
    expect([webhook, full, late, letters, pLetters].map((c) => concerns(c, p))).toEqual([true, true, true, false, true]);
    expect([webhook, full, late, letters, pLetters].map((c) => concerns(c, q))).toEqual([false, false, true, false, false]);
    expect([webhook, full, late, letters, pLetters].map((c) => concerns(c, deployment))).toEqual([true, true, true, true, false]);
    expect(alertReach([webhook, full, pLetters])).toEqual({ panels: ["p"], shards: [2], everyPanel: false });
    expect(alertReach([late]).everyPanel).toBe(true);
  });
});
