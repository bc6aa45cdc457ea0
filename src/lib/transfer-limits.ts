import { config, type ConfigSource } from "./config";
import { OutboundError } from "./outbound";

/**
 * How long a download from a caller's URL may take, and how slowly it may come: a source that
 * never answers, drips a byte a second or stalls mid-body must fail in bounded time instead of
 * holding a request or a queue consumer (docs/api/outbound-fetches.md states the values).
 */
export interface TransferLimits {
  /** The response headers must arrive within this (ms). */
  headersMs: number;
  /** The whole download, headers and body, must end within this (ms). */
  deadlineMs: number;
  /** Minimum rate: fewer bytes than this per second over a whole window is too slow. */
  minBytesPerSecond: number;
  /** The window the rate is measured over (ms): a pause shorter than this is tolerated. */
  windowMs: number;
}

/** Downloads answered during a request (`source_file`, `contacts_upload_source`). */
export const REQUEST_DOWNLOAD_LIMITS: TransferLimits = { headersMs: 15_000, deadlineMs: 30_000, minBytesPerSecond: 8 * 1024, windowMs: 5_000 };

/** Downloads of import jobs (bulk upload `path`, list imports): a queue consumer may run 15 minutes. */
export const IMPORT_DOWNLOAD_LIMITS: TransferLimits = { headersMs: 30_000, deadlineMs: 10 * 60_000, minBytesPerSecond: 64 * 1024, windowMs: 10_000 };

/**
 * `base` with the rate settings the configuration gives (DOWNLOAD_MIN_BYTES_PER_SECOND,
 * DOWNLOAD_RATE_WINDOW_MS; tests make the window short). Unset values keep `base`'s.
 */
export function transferLimitsFor(env: ConfigSource, base: TransferLimits): TransferLimits {
  const { minBytesPerSecond, rateWindowMs } = config(env).download;
  return { ...base, minBytesPerSecond: minBytesPerSecond ?? base.minBytesPerSecond, windowMs: rateWindowMs ?? base.windowMs };
}

/** Most bytes one read of a byte stream asks for. */
const READ_BYTES = 64 * 1024;

interface ChunkReader {
  read(): Promise<ReadableStreamReadResult<Uint8Array>>;
  cancel(reason: unknown): Promise<void>;
}

/**
 * Reads `body` in chunks of at least `minBytes` where it is a byte stream (a fetch's body is):
 * the runtime hands a download over in chunks of about 4 KB, and each read through
 * limitTransfer costs JS work (a tenth of an import's CPU, bench:profile). Other streams are
 * read as they come.
 */
function chunkReader(body: ReadableStream<Uint8Array>, minBytes: number): ChunkReader {
  let byob: ReadableStreamBYOBReader;
  try {
    byob = body.getReader({ mode: "byob" });
  } catch {
    const reader = body.getReader();
    return { read: () => reader.read(), cancel: (reason) => reader.cancel(reason) };
  }
  return {
    read: () => byob.readAtLeast(minBytes, new Uint8Array(Math.max(minBytes, READ_BYTES))),
    cancel: (reason) => byob.cancel(reason),
  };
}

/**
 * `body` under `limits`, counted from `startedAt` (when the request was sent): the stream
 * errors with an OutboundError (code "timeout", "slow" or "broken") when the deadline passes,
 * when a window that the reader spent waiting on the source brought fewer bytes than the
 * minimum rate, or when the connection breaks; the source is cancelled then. Time the
 * consumer spends not reading (back-pressure) is never held against the source.
 */
export function limitTransfer(body: ReadableStream<Uint8Array>, limits: TransferLimits, host: string, startedAt: number): ReadableStream<Uint8Array> {
  const deadlineAt = startedAt + limits.deadlineMs;
  const minPerWindow = (limits.minBytesPerSecond * limits.windowMs) / 1000;
  // A quarter of a window's minimum at most, so a source at the minimum rate finishes reads within a window.
  const reader = chunkReader(body, Math.max(1, Math.min(READ_BYTES, Math.floor(minPerWindow / 4))));
  let pending: Promise<ReadableStreamReadResult<Uint8Array>> | null = null;
  let windowStart = Date.now();
  let windowBytes = 0;
  let total = 0;
  // One timer per window, shared by every read in it: a timer per read was about a tenth of a
  // 1,000,000-row import's CPU (bench:profile, PROFILE=import), the file coming in small chunks.
  let alarm: Promise<"timer"> | null = null;
  let alarmTimer: ReturnType<typeof setTimeout> | null = null;
  const windowAlarm = (): Promise<"timer"> => {
    if (alarm) return alarm;
    const ms = Math.min(windowStart + limits.windowMs, deadlineAt) - Date.now();
    alarm = new Promise<"timer">((resolve) => (alarmTimer = setTimeout(() => resolve("timer"), Math.max(0, ms))));
    return alarm;
  };
  const disarm = () => {
    if (alarmTimer !== null) clearTimeout(alarmTimer);
    alarm = null;
    alarmTimer = null;
  };
  const newWindow = () => {
    disarm();
    windowStart = Date.now();
    windowBytes = 0;
  };

  const fail = (controller: ReadableStreamDefaultController<Uint8Array>, error: OutboundError) => {
    disarm();
    controller.error(error);
    reader.cancel(error).catch(() => undefined);
  };

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // A window that ended while nobody was reading starts again now.
        if (pending === null && Date.now() >= windowStart + limits.windowMs) newWindow();
        for (;;) {
          pending ??= reader.read();
          let result: ReadableStreamReadResult<Uint8Array> | "timer";
          try {
            result = await Promise.race([pending, windowAlarm()]);
          } catch (error) {
            // The fetch's own deadline signal (fetchOutbound's timeoutMs) aborts the body with a TimeoutError.
            const timedOut = error instanceof Error && error.name === "TimeoutError";
            return fail(
              controller,
              timedOut
                ? new OutboundError(`${host} did not finish sending within ${limits.deadlineMs} ms (${total} bytes received)`, "timeout")
                : new OutboundError(`the connection to ${host} broke after ${total} bytes`, "broken"),
            );
          }
          if (result === "timer") {
            if (Date.now() >= deadlineAt) {
              return fail(controller, new OutboundError(`${host} did not finish sending within ${limits.deadlineMs} ms (${total} bytes received)`, "timeout"));
            }
            if (windowBytes < minPerWindow) {
              return fail(
                controller,
                new OutboundError(`${host} sent too slowly: ${windowBytes} bytes in ${limits.windowMs} ms, below the minimum of ${limits.minBytesPerSecond} bytes per second`, "slow"),
              );
            }
            newWindow();
            continue;
          }
          pending = null;
          if (result.done) {
            disarm();
            return controller.close();
          }
          windowBytes += result.value.byteLength;
          total += result.value.byteLength;
          return controller.enqueue(result.value);
        }
      },
      async cancel(reason) {
        disarm();
        await reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
