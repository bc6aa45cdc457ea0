import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { OutboundError } from "../../src/lib/outbound";
import { IMPORT_DOWNLOAD_LIMITS, limitTransfer, transferLimitsFor, type TransferLimits } from "../../src/lib/transfer-limits";

const LIMITS: TransferLimits = { headersMs: 1_000, deadlineMs: 2_000, minBytesPerSecond: 100, windowMs: 200 };

/** A source that sends `chunks` of `size` bytes, `gapMs` apart, then ends (or errors with `fault`). */
function source(chunks: number, size: number, gapMs: number, fault?: Error): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (sent > 0) await scheduler.wait(gapMs);
      if (sent === chunks) return fault ? controller.error(fault) : controller.close();
      sent++;
      controller.enqueue(new Uint8Array(size));
    },
  });
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  let total = 0;
  for await (const chunk of stream) total += chunk.byteLength;
  return total;
}

describe("limitTransfer", () => {
  it("passes a source that keeps the minimum rate", async () => {
    expect(await drain(limitTransfer(source(5, 100, 50), LIMITS, "files.test", Date.now()))).toBe(500);
  });

  it("ends a source that sends too slowly within a window", async () => {
    const failure = await drain(limitTransfer(source(50, 1, 100), LIMITS, "files.test", Date.now())).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OutboundError);
    expect(failure).toMatchObject({ code: "slow", message: expect.stringMatching(/^files\.test sent too slowly: \d bytes in 200 ms, below the minimum of 100 bytes per second$/) });
  });

  it("ends a steady source at the deadline", async () => {
    const failure = await drain(limitTransfer(source(100, 50, 100), { ...LIMITS, deadlineMs: 500 }, "files.test", Date.now())).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "timeout", message: expect.stringMatching(/^files\.test did not finish sending within 500 ms \(\d+ bytes received\)$/) });
  });

  it("reports a connection that breaks mid-body with the bytes received", async () => {
    const failure = await drain(limitTransfer(source(2, 9, 10, new TypeError("Network connection lost.")), LIMITS, "files.test", Date.now())).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: "broken", message: "the connection to files.test broke after 18 bytes" });
  });

  it("never holds a slow reader against the source", async () => {
    const limited = limitTransfer(source(3, 10, 0), LIMITS, "files.test", Date.now());
    const reader = limited.getReader();
    let total = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      await scheduler.wait(300); // longer than a window, and the source was never waited on
    }
    expect(total).toBe(30);
  });
});

describe("transferLimitsFor", () => {
  it("takes the rate settings from the configuration, the built-in ones when empty, and refuses a value that is not a whole number", () => {
    expect(transferLimitsFor({ ...env, DOWNLOAD_MIN_BYTES_PER_SECOND: "10", DOWNLOAD_RATE_WINDOW_MS: "250" }, IMPORT_DOWNLOAD_LIMITS)).toEqual({
      ...IMPORT_DOWNLOAD_LIMITS,
      minBytesPerSecond: 10,
      windowMs: 250,
    });
    expect(transferLimitsFor({ ...env, DOWNLOAD_MIN_BYTES_PER_SECOND: "", DOWNLOAD_RATE_WINDOW_MS: "" }, IMPORT_DOWNLOAD_LIMITS)).toEqual(IMPORT_DOWNLOAD_LIMITS);
    expect(() => transferLimitsFor({ ...env, DOWNLOAD_RATE_WINDOW_MS: "fast" }, IMPORT_DOWNLOAD_LIMITS)).toThrow(/DOWNLOAD_RATE_WINDOW_MS must be a whole number/);
  });
});
