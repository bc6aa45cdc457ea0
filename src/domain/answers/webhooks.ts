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

/** A webhook replay (issue 46 item 2): what it re-sends, how far its steps got, what was delivered. */
export const webhookReplayAnswer = z.strictObject({
  dry_run: z.literal(false),
  id: z.string(),
  webhook_id: z.string(),
  from: isoInstant,
  to: isoInstant,
  channels: z.array(z.string()).nullable(),
  journey_id: z.string().nullable(),
  state: z.enum(["running", "done", "cancelled"]),
  /** The dry run's count when it started. */
  events_total: z.number(),
  /** Events handed to the webhook's dispatcher so far. */
  events_sent: z.number(),
  /** Of those, delivered (a 2xx), in how many batches, and how many still wait. */
  events_delivered: z.number(),
  batches_delivered: z.number(),
  events_waiting: z.number(),
  /** The last event handed over (its time and id); null before the first. */
  cursor: z.strictObject({ occurred_at: isoInstant, event_id: z.number() }).nullable(),
  created_by: z.string().nullable(),
  created_at: isoInstant,
  finished_at: isoInstant.nullable(),
});

/** A dry run: how many events and batches the replay would send. */
export const webhookReplayDryRunAnswer = z.strictObject({ dry_run: z.literal(true), events: z.number(), batches: z.number() });

export const webhookReplayCreateAnswer = z.discriminatedUnion("dry_run", [webhookReplayDryRunAnswer, webhookReplayAnswer]);
export const webhookReplayListAnswer = z.strictObject({ replays: z.array(webhookReplayAnswer) });
