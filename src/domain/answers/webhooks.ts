// The admin API's answers about webhooks and their deliveries.
import { z } from "../../lib/z";
import { ALERT_FREQUENCIES } from "../webhooks/alerts";
import { PAYLOAD_VERSIONS } from "../webhooks/payload";
import { isoInstant } from "./panels";

const webhookState = z.enum(["configured", "operational", "disabled"]);

/** A webhook, its secrets only as whether they are set, and its dispatcher's backlog. */
export const webhookAnswer = z.strictObject({
  id: z.string(),
  label: z.string(),
  url: z.string(),
  username: z.string().nullable(),
  password_set: z.boolean(),
  signing_secret_set: z.boolean(),
  version: z.enum(PAYLOAD_VERSIONS),
  alert: z.strictObject({ emails: z.array(z.string()), frequency: z.enum(ALERT_FREQUENCIES) }).nullable(),
  state: webhookState,
  disabled_reason: z.string().nullable(),
  disabled_at: isoInstant.nullable(),
  backlog: z.number(),
  backlog_oldest_at: isoInstant.nullable(),
  in_flight: z.strictObject({ batch_id: z.string(), events: z.number(), failed_attempts: z.number(), next_attempt_at: isoInstant }).nullable(),
  dropped: z.number(),
  created_at: isoInstant,
  updated_at: isoInstant,
});
export const webhookListAnswer = z.strictObject({ webhooks: z.array(webhookAnswer) });

/** The answer of the test and enable actions: the endpoint's status or the error reaching it. */
export const webhookTestAnswer = z.strictObject({
  state: webhookState.nullable(),
  status: z.number().nullable(),
  error: z.string().nullable(),
  message: z.string(),
  /** enable: the events waiting, delivered in order once operational. */
  backlog: z.number().optional(),
});

export const webhookDeliveriesAnswer = z.strictObject({
  deliveries: z.array(
    z.strictObject({
      at: isoInstant,
      kind: z.enum(["delivery", "test"]),
      batch_id: z.string(),
      events: z.number(),
      status: z.number().nullable(),
      error: z.string().nullable(),
      error_message: z.string().nullable(),
      duration_ms: z.number(),
      response: z.string(),
      outcome: z.string(),
      next_attempt_at: isoInstant.nullable(),
    }),
  ),
});

export const webhookEventsQueuedAnswer = z.strictObject({ accepted: z.number(), duplicates: z.number() });
