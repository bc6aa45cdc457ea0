import { AwsClient } from "aws4fetch";
import { base64OfBytes } from "../../../domain/email-message";
import { settleEach } from "../../../lib/tasks";
import { withTraceHeaders } from "../../../lib/observability/trace";
import type { EmailProvider, OutgoingEmail, SendResult } from "./provider";

export interface SesConfig {
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** Defaults to https://email.{region}.amazonaws.com; tests use a local stand-in. */
  endpoint?: string;
  configurationSet?: string;
}

/** Sends at a time per batch; SES accounts start at 14 messages/s, so more buys nothing. */
const CONCURRENCY = 8;

const encoder = new TextEncoder();

/**
 * Amazon SES v2 `SendEmail` with the raw MIME message, signed with SigV4 by aws4fetch. SES has
 * no idempotency key, so what may have reached it is never resent: callers record an attempt
 * right before calling (an interrupted attempt without one is redone, one with one is settled
 * as failed with an unknown outcome), and a request that timed out is reported as failed.
 */
export class SesProvider implements EmailProvider {
  readonly name = "ses";
  readonly idempotent = false;
  readonly realEmail = true;
  private readonly client: AwsClient;
  private readonly url: string;

  constructor(private readonly config: SesConfig) {
    // Retries are the queue's job: a retry here could outlive the consumer's time budget.
    this.client = new AwsClient({ accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey, service: "ses", region: config.region, retries: 0 });
    const endpoint = (config.endpoint ?? `https://email.${config.region}.amazonaws.com`).replace(/\/+$/, "");
    this.url = `${endpoint}/v2/email/outbound-emails`;
  }

  async send(messages: readonly OutgoingEmail[]): Promise<SendResult[]> {
    const settled = await settleEach(messages, CONCURRENCY, (message) => this.sendOne(message));
    // sendOne reports every failure as a result; a rejection here is a fault of the service.
    return settled.map((outcome) => {
      if (outcome.status === "rejected") throw outcome.reason;
      return outcome.value as SendResult;
    });
  }

  private async sendOne(message: OutgoingEmail): Promise<SendResult> {
    const body = {
      FromEmailAddress: message.from,
      Destination: { ToAddresses: [message.to] },
      Content: { Raw: { Data: base64OfBytes(encoder.encode(message.raw)) } },
      ...(this.config.configurationSet ? { ConfigurationSetName: this.config.configurationSet } : {}),
      EmailTags: [{ Name: "msgid", Value: message.id.replace(/[^A-Za-z0-9_-]/g, "_") }],
    };
    let response: Response;
    try {
      response = await this.client.fetch(this.url, {
        method: "POST",
        headers: withTraceHeaders({ "content-type": "application/json" }),
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
    } catch (error) {
      // A request that timed out may have been taken: resending could deliver twice.
      if (error instanceof Error && error.name === "TimeoutError") {
        return { ok: false, retryable: false, error: "outcome unknown: SES did not answer within 15 s; not resent, to send at most once" };
      }
      return { ok: false, retryable: true, error: `SES unreachable: ${error instanceof Error ? error.message : String(error)}` };
    }
    const text = await response.text();
    if (response.ok) {
      try {
        const messageId = (JSON.parse(text) as { MessageId?: unknown }).MessageId;
        if (typeof messageId === "string" && messageId) return { ok: true, providerMessageId: messageId };
      } catch {
        // fall through: a 2xx without a message id is reported below
      }
      return { ok: false, retryable: false, error: `SES answered ${response.status} without a MessageId` };
    }
    const retryable = response.status === 429 || response.status >= 500;
    return { ok: false, retryable, error: `SES answered ${response.status}: ${text.slice(0, 300)}` };
  }
}
