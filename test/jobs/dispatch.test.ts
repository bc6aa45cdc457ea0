import { createMessageBatch, createExecutionContext, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { runCronTasks } from "../../src/jobs/cron";
import { handleQueue, queueKind } from "../../src/jobs/queues";

describe("queue dispatch", () => {
  it("reads the queue kind from region-suffixed names", () => {
    expect(queueKind("apiv2-imports-default")).toBe("imports");
    expect(queueKind("apiv2-events-india")).toBe("events");
    expect(queueKind("apiv2-dlq-default")).toBe("dlq");
    expect(queueKind("apiv2-other-default")).toBeUndefined();
  });

  it("retries messages of a queue that has no consumer instead of dropping them", async () => {
    const batch = createMessageBatch("apiv2-other-default", [{ id: "m1", timestamp: new Date(), attempts: 1, body: {} }]);
    const exec = createExecutionContext();
    await handleQueue(batch, env, exec);
    const result = await getQueueResult(batch, exec);
    expect(result.retryBatch.retry).toBe(true);
  });
});

describe("cron tasks", () => {
  it("runs every task even when one fails", async () => {
    const ran: string[] = [];
    await runCronTasks(env, Date.now(), [
      { name: "a", run: async () => void ran.push("a") },
      { name: "b", run: async () => Promise.reject(new Error("boom")) },
      { name: "c", run: async () => void ran.push("c") },
    ]);
    expect(ran.sort()).toEqual(["a", "c"]);
  });
});
