import { Webhook } from "standardwebhooks";

/**
 * Standard Webhooks signatures (CONTRACT 6): `webhook-id` (the batch id, the same on every
 * re-send), `webhook-timestamp` (seconds, per attempt) and `webhook-signature`
 * (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`). Signing uses the reference library of
 * the specification, so receivers verifying with any Standard Webhooks library agree with it.
 */

const SECRET_PREFIX = "whsec_";

/** Why a signing secret is unusable, or null: `whsec_` + base64 of 24 to 64 random bytes. */
export function signingSecretProblem(secret: string): string | null {
  if (!secret.startsWith(SECRET_PREFIX)) return `must start with ${SECRET_PREFIX} (a Standard Webhooks secret)`;
  let length: number;
  try {
    length = atob(secret.slice(SECRET_PREFIX.length)).length;
  } catch {
    return `must be ${SECRET_PREFIX} followed by base64`;
  }
  if (length < 24 || length > 64) return `must encode 24 to 64 bytes after ${SECRET_PREFIX}, not ${length}`;
  return null;
}

export function signatureHeaders(secret: string, messageId: string, at: number, body: string): Record<string, string> {
  const timestamp = new Date(at);
  return {
    "webhook-id": messageId,
    "webhook-timestamp": String(Math.floor(at / 1000)),
    "webhook-signature": new Webhook(secret).sign(messageId, timestamp, body),
  };
}
