import type { ShardDb } from "../../../store/shards";

/**
 * Where campaign email goes (DESIGN: Cloudflare's email sending is transactional only, so
 * marketing mail goes through a provider over HTTP). EMAIL_PROVIDER chooses: "outbox", the
 * embedded default that keeps each message as an .eml in R2, or "ses".
 */
export interface OutgoingEmail {
  /** Our message id (`msgid`), also the outbox key: the same id sent twice is one message. */
  id: string;
  panelId: string;
  campaignId: string | null;
  from: string;
  to: string;
  subject: string;
  /** The whole RFC 5322 message. */
  raw: string;
  /** Why a provider that sends real email would refuse it; only the outbox takes such a message, and keeps the note. */
  note?: string;
  /**
   * A contact's message: the contact and the database holding its message row (campaign_messages,
   * or journey_messages without a campaign). The outbox keeps no copy once that row is gone (the
   * contact erased while the message was under way); absent for a test copy.
   */
  contact?: { id: number; db: ShardDb };
}

export type SendResult =
  | { ok: true; providerMessageId: string }
  /** `retryable`: the provider did not take the message and may later (throttling, 5xx, network). */
  | { ok: false; retryable: boolean; error: string };

export interface EmailProvider {
  readonly name: string;
  /** Resending an id already sent has no second effect, so an interrupted attempt may be redone. */
  readonly idempotent: boolean;
  /** Whether messages reach recipients; such a provider sends only from verified sender domains. */
  readonly realEmail: boolean;
  /** Sends each message; one result per message, in order. Never throws for one bad message. */
  send(messages: readonly OutgoingEmail[], now: number): Promise<SendResult[]>;
}

/** A bounce the provider reported, found by the provider's message id. */
export interface ProviderBounce {
  providerMessageId: string;
  /** Permanent bounces suppress the address; transient ones are only counted. */
  permanent: boolean;
  addresses: string[];
  detail: Record<string, unknown>;
}

/**
 * A complaint the provider reported (the recipient marked the mail as spam, through the
 * mailbox provider's feedback loop), found by the provider's message id.
 */
export interface ProviderComplaint {
  providerMessageId: string;
  addresses: string[];
  detail: Record<string, unknown>;
}

/** Secrets of the providers; optional because only the configured provider needs its own. */
export interface EmailProviderSecrets {
  SES_ACCESS_KEY_ID?: string;
  SES_SECRET_ACCESS_KEY?: string;
  /** Path secret of the SNS notification endpoint (bounces and complaints): /hooks/email/ses/{token}. */
  SES_SNS_TOKEN?: string;
}

/** The whole Env: the outbox writes to the shard of each message's panel. */
export type ProviderEnv = Env & EmailProviderSecrets;
