import type { SendResult } from "../email/provider";

/** A provider's result; `optedOut`: the provider refused the number because it opted out (Twilio 21610). */
export type SmsSendResult = SendResult & { optedOut?: boolean };

/** One SMS as a provider gets it: already rendered, links already shortened. */
export interface OutgoingSms {
  /** Our message id (`msgid`). */
  id: string;
  panelId: string;
  /** Digits with the country code. */
  to: string;
  text: string;
  /** India: the DLT template the text was registered as. */
  dltTemplateId: string | null;
  /** The provider's own template, where the provider sends by template (MSG91). */
  providerTemplateId: string | null;
}

/**
 * An SMS provider reached over fetch. Neither Twilio nor MSG91 takes an idempotency key, so
 * callers record the attempt before calling and never resend one whose outcome is unknown;
 * `send` never throws for a refused message, it reports it.
 */
export interface SmsProvider {
  readonly name: "twilio" | "msg91";
  send(message: OutgoingSms): Promise<SmsSendResult>;
}

/** Where the provider APIs are; tests and benchmarks point them at loopback stand-ins. */
export type SmsApiEnv = Pick<Env, "TWILIO_API_URL" | "MSG91_API_URL">;

/** Time a provider has to answer; an attempt that ran out may have been taken, so it is not resent. */
export const SMS_TIMEOUT_MS = 15_000;

/** Reads a provider's answer: fetch failures before an answer are retryable, a timeout is an unknown outcome. */
export async function callProvider(name: string, url: string, init: RequestInit): Promise<{ ok: true; response: Response; text: string } | { ok: false; result: SmsSendResult }> {
  let response: Response;
  try {
    response = await fetch(url, { ...init, signal: AbortSignal.timeout(SMS_TIMEOUT_MS) });
  } catch (error) {
    if (error instanceof Error && error.name === "TimeoutError") {
      return { ok: false, result: { ok: false, retryable: false, error: `outcome unknown: ${name} did not answer within ${SMS_TIMEOUT_MS / 1000} s; not resent, to send at most once` } };
    }
    return { ok: false, result: { ok: false, retryable: true, error: `${name} unreachable: ${error instanceof Error ? error.message : String(error)}` } };
  }
  return { ok: true, response, text: await response.text() };
}

/** Throttling and server errors may pass; anything else the provider refused for good. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}
