import { Webhook } from "standardwebhooks";

/**
 * Standard Webhooks signatures (CONTRACT 6): `webhook-id` (the batch id, the same on every
 * re-send), `webhook-timestamp` (seconds, per attempt) and `webhook-signature`
 * (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`). Signing uses the reference library of
 * the specification, so receivers verifying with any Standard Webhooks library agree with it.
 */

export function signatureHeaders(secret: string, messageId: string, at: number, body: string): Record<string, string> {
  const timestamp = new Date(at);
  return {
    "webhook-id": messageId,
    "webhook-timestamp": String(Math.floor(at / 1000)),
    "webhook-signature": new Webhook(secret).sign(messageId, timestamp, body),
  };
}
