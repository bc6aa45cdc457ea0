import { fetchOutbound, OutboundError, type OutboundEnv } from "../../lib/outbound";
import type { AttemptAnswer } from "../../domain/webhooks/policy";
import { metrics, type DataPointWriter } from "../../lib/observability/metrics";
import { signatureHeaders } from "./signing";

/**
 * One POST of a batch to a webhook endpoint (CONTRACT 6, spec 6.1): form-encoded `data`,
 * Basic auth when credentials are set, Standard Webhooks headers when a signing secret is
 * set, redirects answered as they are (never followed), and one deadline for the whole
 * attempt. Never throws for what the endpoint does: every answer becomes an AttemptResult.
 */

export interface DeliveryTarget {
  url: string;
  username: string | null;
  password: string | null;
  signingSecret: string | null;
}

export interface AttemptResult extends AttemptAnswer {
  /** When the attempt started (epoch ms). */
  at: number;
  durationMs: number;
  /** Human detail of an error (status null). */
  errorMessage: string | null;
  /** The first 2 KB of the response body. */
  response: string;
}

export const RESPONSE_EXCERPT_BYTES = 2048;

/**
 * The whole attempt (connect, request, headers and the response excerpt) must finish within
 * this. Workers' fetch does not expose the connect phase on its own, so one deadline covers
 * it; a refused connection fails at once.
 */
export const DELIVERY_TIMEOUT_MS = 15_000;

export const USER_AGENT = "apiv2-webhooks/1.0";

function basicAuth(username: string, password: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(`${username}:${password}`)) binary += String.fromCharCode(byte);
  return `Basic ${btoa(binary)}`;
}

export function deliveryHeaders(target: DeliveryTarget, batchId: string, body: string, at: number, replay: string | null = null): Record<string, string> {
  const headers: Record<string, string> = {
    "content-type": "application/x-www-form-urlencoded",
    "user-agent": USER_AGENT,
    // Lets a receiver without signatures recognise a re-sent batch too.
    "x-webhook-batch-id": batchId,
  };
  // A replay's batch says so, and which replay (live batches carry no such header).
  if (replay !== null) headers["x-webhook-replay"] = replay;
  if (target.username !== null) headers.authorization = basicAuth(target.username, target.password ?? "");
  if (target.signingSecret !== null) Object.assign(headers, signatureHeaders(target.signingSecret, batchId, at, body));
  return headers;
}

/**
 * Reads at most `limit` bytes of the body, then lets the rest go; stops early when `signal`
 * fires. `broken` when the connection broke before the body's end (or the limit): the answer
 * was cut off, which is not a delivery the receiver can be taken to have finished.
 */
async function readExcerpt(response: Response, limit: number, signal: AbortSignal): Promise<{ text: string; broken: boolean; size: number }> {
  if (!response.body) return { text: "", broken: false, size: 0 };
  const reader = response.body.getReader();
  const stop = () => void reader.cancel().catch(() => {});
  signal.addEventListener("abort", stop);
  const chunks: Uint8Array[] = [];
  let size = 0;
  let broken = false;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // Our own deadline cancels the read; anything else is the connection breaking.
    broken = !signal.aborted;
  } finally {
    signal.removeEventListener("abort", stop);
    stop();
  }
  const bytes = new Uint8Array(Math.min(size, limit));
  let offset = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, Math.min(chunk.byteLength, bytes.byteLength - offset));
    bytes.set(part, offset);
    offset += part.byteLength;
    if (offset >= bytes.byteLength) break;
  }
  // A multi-byte character cut at the limit becomes U+FFFD rather than an error.
  return { text: new TextDecoder().decode(bytes), broken, size };
}

/** One delivery attempt, counted in the metrics as delivered (2xx) or failed. */
export async function postBatch(
  env: OutboundEnv & { METRICS?: DataPointWriter },
  target: DeliveryTarget,
  batch: { id: string; body: string; replay?: string | null },
  options: { now: number; timeoutMs?: number },
): Promise<AttemptResult> {
  const result = await attemptBatch(env, target, batch, options);
  metrics(env).webhook(result.status !== null && result.status >= 200 && result.status < 300 ? "delivered" : "failed");
  return result;
}

async function attemptBatch(
  env: OutboundEnv,
  target: DeliveryTarget,
  batch: { id: string; body: string; replay?: string | null },
  options: { now: number; timeoutMs?: number },
): Promise<AttemptResult> {
  const timeoutMs = options.timeoutMs ?? DELIVERY_TIMEOUT_MS;
  const started = Date.now();
  const elapsed = () => Math.max(0, Date.now() - started);
  const at = options.now;
  try {
    const response = await fetchOutbound(
      env,
      target.url,
      { method: "POST", headers: deliveryHeaders(target, batch.id, batch.body, at, batch.replay ?? null), body: batch.body },
      { timeoutMs, maxRedirects: 0 },
    );
    // The status decides the outcome; a body that does not arrive in time only loses the excerpt,
    // but one cut off by a broken connection makes the attempt a failure, re-sent under its batch id.
    const excerpt = await readExcerpt(response, RESPONSE_EXCERPT_BYTES, AbortSignal.timeout(Math.max(1, timeoutMs - elapsed())));
    if (excerpt.broken) {
      const message = `the answer (HTTP ${response.status}) broke off after ${excerpt.size} bytes of its body`;
      return { at, durationMs: elapsed(), status: null, error: "truncated", errorMessage: message, response: excerpt.text, retryAfter: null };
    }
    return { at, durationMs: elapsed(), status: response.status, error: null, errorMessage: null, response: excerpt.text, retryAfter: response.headers.get("retry-after") };
  } catch (error) {
    const code = error instanceof OutboundError ? error.code : "connect";
    const message = error instanceof Error ? error.message : String(error);
    return { at, durationMs: elapsed(), status: null, error: code, errorMessage: message, response: "", retryAfter: null };
  }
}
