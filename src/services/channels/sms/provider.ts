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
