import { insertMessageStatement, type JourneyMessage } from "../store/journeys";

/**
 * SEAM (message sending). Every message a journey sends leaves the engine here, as statements
 * of the step's D1 batch, keyed by msgid (`<instance>.<step>`) so a step run twice records one
 * message. sms, apn and bpn: the outbox channel is the service's default for them (CONTRACT 5)
 * and this records the message with its msgid; their delivered/click come back through
 * `POST /v1/events/{channel}`.
 *
 * email: recorded in the same outbox, NOT yet sent through the broadcast capability's email
 * provider (src/channels/email on branch issue-6) and without its open pixel and rewritten
 * links. To switch: render with domain/email-message.ts (personalize, applyTracking,
 * buildMime), hand it to emailProvider(env).send() with the msgid as message id, and sign the
 * tracking links with a claim that names the journey message so /t/o and /t/c record the open
 * and click with this msgid. Until then journey email events are reported through
 * `POST /v1/events/email` like the other channels.
 */
export function journeyMessageStatements(db: D1Database, message: JourneyMessage): D1PreparedStatement[] {
  return [insertMessageStatement(db, message)];
}
