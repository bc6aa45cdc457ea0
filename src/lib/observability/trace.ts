import { randomHex } from "../random";
import { currentObservation } from "./context";

// W3C Trace Context: version-traceid-parentid-flags, lowercase hex; all-zero ids are invalid.
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * This request's traceparent: the caller's trace id with a span id of our own, or a new trace
 * whose id is the request id (one id to search logs and a receiver's logs by).
 */
export function traceparentFor(incoming: string | null, requestId: string): string {
  const match = incoming ? TRACEPARENT.exec(incoming.trim().toLowerCase()) : null;
  const traceId = match && !/^0+$/.test(match[1]!) ? match[1]! : requestId;
  const flags = match ? match[3]! : "01";
  return `00-${traceId}-${randomHex(8)}-${flags}`;
}

/** Headers of an outbound call with the current trace (a child span of this request), if any. */
export function withTraceHeaders(headers: HeadersInit | undefined): HeadersInit | undefined {
  const observation = currentObservation();
  if (!observation) return headers;
  const out = new Headers(headers);
  if (!out.has("traceparent")) out.set("traceparent", childTraceparent(observation.traceparent));
  return out;
}

/** A trace of work no request started (a queue batch, the webhook dispatcher's run). */
export function newTraceparent(): string {
  return traceparentFor(null, randomHex(16));
}

export function childTraceparent(parent: string): string {
  const [version, traceId, , flags] = parent.split("-");
  return `${version}-${traceId}-${randomHex(8)}-${flags}`;
}
