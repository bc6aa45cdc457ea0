import { withTraceHeaders } from "../../lib/observability/trace";
/**
 * One call to a provider that takes no idempotency key (SMS gateways, push services): callers
 * record the attempt before calling and never resend one whose outcome is unknown.
 */

/** Time a provider has to answer; an attempt that ran out may have been taken, so it is not resent. */
export const PROVIDER_TIMEOUT_MS = 15_000;

export type ProviderCall = { ok: true; response: Response; text: string } | { ok: false; retryable: boolean; error: string };

/** Reads a provider's answer: fetch failures before an answer are retryable, a timeout is an unknown outcome. */
export async function callProvider(name: string, url: string, init: RequestInit): Promise<ProviderCall> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, headers: withTraceHeaders(init.headers), signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS) });
  } catch (error) {
    if (error instanceof Error && error.name === "TimeoutError") {
      return { ok: false, retryable: false, error: `outcome unknown: ${name} did not answer within ${PROVIDER_TIMEOUT_MS / 1000} s; not resent, to send at most once` };
    }
    return { ok: false, retryable: true, error: `${name} unreachable: ${error instanceof Error ? error.message : String(error)}` };
  }
  return { ok: true, response, text: await response.text() };
}

/** Throttling and server errors may pass; anything else the provider refused for good. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}
