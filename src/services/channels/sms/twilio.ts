import { callProvider, isRetryableStatus } from "../provider-call";
import type { OutgoingSms, SmsSendResult, SmsProvider } from "./provider";

export interface TwilioConfig {
  accountSid: string;
  authToken: string;
  /** The sending number (E.164) or, instead, a messaging service. */
  from?: string;
  messagingServiceSid?: string;
  /** https://api.twilio.com, or a stand-in. */
  apiUrl: string;
  /** Where Twilio posts the message's status changes (StatusCallback). */
  statusCallback: (message: OutgoingSms) => string;
}

/** Twilio's error for a number that replied STOP: sending to it is refused until it replies START. */
export const TWILIO_UNSUBSCRIBED = 21610;

/**
 * Twilio's Messages API (2010-04-01): one form POST per message, HTTP Basic with the account
 * SID and auth token; the answer's `sid` is the provider's message id that status callbacks
 * name.
 */
export class TwilioProvider implements SmsProvider {
  readonly name = "twilio";
  private readonly url: string;
  private readonly authorization: string;

  constructor(private readonly config: TwilioConfig) {
    this.url = `${config.apiUrl.replace(/\/+$/, "")}/2010-04-01/Accounts/${encodeURIComponent(config.accountSid)}/Messages.json`;
    this.authorization = `Basic ${btoa(`${config.accountSid}:${config.authToken}`)}`;
  }

  async send(message: OutgoingSms): Promise<SmsSendResult> {
    const form = new URLSearchParams({ To: `+${message.to}`, Body: message.text, StatusCallback: this.config.statusCallback(message) });
    if (this.config.messagingServiceSid) form.set("MessagingServiceSid", this.config.messagingServiceSid);
    else form.set("From", this.config.from ?? "");
    const called = await callProvider("Twilio", this.url, { method: "POST", headers: { authorization: this.authorization, "content-type": "application/x-www-form-urlencoded" }, body: form });
    if (!called.ok) return called;
    const { response, text } = called;
    let answer: { sid?: unknown; code?: unknown; message?: unknown } = {};
    try {
      answer = JSON.parse(text) as typeof answer;
    } catch {
      // reported below with the status
    }
    if (response.ok) {
      if (typeof answer.sid === "string" && answer.sid) return { ok: true, providerMessageId: answer.sid };
      return { ok: false, retryable: false, error: `Twilio answered ${response.status} without a message sid` };
    }
    const code = typeof answer.code === "number" ? ` (code ${answer.code})` : "";
    const detail = typeof answer.message === "string" ? answer.message : text.slice(0, 300);
    const failed = { ok: false as const, retryable: isRetryableStatus(response.status), error: `Twilio answered ${response.status}${code}: ${detail}` };
    return answer.code === TWILIO_UNSUBSCRIBED ? { ...failed, optedOut: true } : failed;
  }
}

/**
 * X-Twilio-Signature: base64 of HMAC-SHA1, keyed with the auth token, over the full URL Twilio
 * requested followed by each POST parameter's name and value, sorted by name.
 */
export async function twilioSignature(authToken: string, url: string, params: URLSearchParams): Promise<string> {
  const names = [...new Set(params.keys())].sort();
  let data = url;
  for (const name of names) for (const value of params.getAll(name)) data += name + value;
  const encoder = new TextEncoder();
  const key = await crypto.subtle.importKey("raw", encoder.encode(authToken), { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, encoder.encode(data)));
  let binary = "";
  for (const byte of mac) binary += String.fromCharCode(byte);
  return btoa(binary);
}
