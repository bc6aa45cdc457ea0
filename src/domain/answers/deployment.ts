// The admin API's answers about the deployment's machinery: dead letters and panel moves.
import { z } from "../../lib/z";
import { isoInstant } from "./panels";

export const deadLetterListAnswer = z.strictObject({
  dead_letters: z.array(
    z.strictObject({
      id: z.number(),
      queue: z.string(),
      kind: z.string(),
      panel_id: z.string().nullable(),
      message: z.string(),
      attempts: z.number(),
      action: z.string(),
      received_at: isoInstant,
    }),
  ),
});

/** A panel's move from one shard to another, step by step: the whole panel, or one partition's buckets (a split, decision 0047). */
export const panelMoveAnswer = z.strictObject({
  id: z.string(),
  panel_id: z.string(),
  from_shard: z.number(),
  to_shard: z.number(),
  /** The buckets that move (a partition split); null when the whole panel moves. */
  buckets: z.strictObject({ first: z.number(), last: z.number() }).nullable(),
  state: z.enum(["copying", "catching_up", "cleaning", "done", "failed"]),
  rows_copied: z.number(),
  changes_applied: z.number(),
  rows_deleted: z.number(),
  pause_ms: z.number().nullable(),
  attempts: z.number(),
  error: z.string().nullable(),
  created_at: isoInstant,
  switched_at: isoInstant.nullable(),
  finished_at: isoInstant.nullable(),
});
export const panelMoveListAnswer = z.strictObject({ moves: z.array(panelMoveAnswer) });

/** A panel's mirrors resynced from its home (decision 0041): what each mirror shard was behind by, now repaired. */
export const mirrorResyncAnswer = z.strictObject({
  mirrors: z.array(
    z.strictObject({
      shard: z.number(),
      lists_repaired: z.number(),
      lists_removed: z.number(),
      attributes_added: z.number(),
      topics_repaired: z.number(),
      topics_removed: z.number(),
      segments_repaired: z.number(),
      segments_removed: z.number(),
      journeys_repaired: z.number(),
    }),
  ),
});

/** What fixes an item of the operations view: an admin API call, or (method null) a page of the documentation. */
export const opsAction = z.strictObject({
  label: z.string(),
  method: z.enum(["GET", "POST"]).nullable(),
  href: z.string(),
});

/** GET /admin/v1/ops: the deployment's operations view (issue 47). */
export const opsAnswer = z.strictObject({
  region: z.string(),
  generated_at: isoInstant,
  queues: z.array(
    z.strictObject({
      binding: z.string(),
      queue: z.string(),
      /** Null when the runtime would not tell (`error` says why). */
      backlog: z.number().nullable(),
      backlog_bytes: z.number().nullable(),
      oldest_message_at: isoInstant.nullable(),
      oldest_message_age_s: z.number().nullable(),
      error: z.string().nullable(),
      action: opsAction.nullable(),
    }),
  ),
  dead_letters: z.strictObject({
    last_24h: z.array(z.strictObject({ queue: z.string(), count: z.number(), newest_at: isoInstant })),
    latest: z.array(
      z.strictObject({
        id: z.number(),
        queue: z.string(),
        kind: z.string(),
        panel_id: z.string().nullable(),
        attempts: z.number(),
        action: z.string(),
        received_at: isoInstant,
        redrive: opsAction,
      }),
    ),
  }),
  cron: z.strictObject({
    last_tick_at: isoInstant.nullable(),
    /** Seconds since the last tick started; over 300 the cron is late. */
    since_last_tick_s: z.number().nullable(),
    late: z.boolean(),
    ticks: z.array(z.strictObject({ scheduled_at: isoInstant, started_at: isoInstant, duration_ms: z.number(), failed_tasks: z.number() })),
    action: opsAction.nullable(),
  }),
  shards: z.array(
    z.strictObject({
      shard: z.number(),
      binding: z.string(),
      size_bytes: z.number().nullable(),
      limit_bytes: z.number(),
      used_share: z.number().nullable(),
      panels: z.number(),
      contacts: z.number().nullable(),
      error: z.string().nullable(),
      action: opsAction.nullable(),
    }),
  ),
  disabled_webhooks: z.array(
    z.strictObject({
      panel_id: z.string(),
      shard: z.number(),
      id: z.string(),
      label: z.string(),
      url: z.string(),
      reason: z.string().nullable(),
      disabled_at: isoInstant.nullable(),
      action: opsAction,
    }),
  ),
  unverified_sender_domains: z.array(
    z.strictObject({
      panel_id: z.string(),
      shard: z.number(),
      domain: z.string(),
      state: z.enum(["pending", "failed"]),
      checked_at: isoInstant.nullable(),
      action: opsAction,
    }),
  ),
  stuck_jobs: z.array(
    z.strictObject({
      kind: z.enum(["import", "campaign_publish", "campaign_send", "panel_move"]),
      panel_id: z.string(),
      id: z.string(),
      state: z.string(),
      since: isoInstant,
      detail: z.string(),
      action: opsAction,
    }),
  ),
  alerts: z.strictObject({
    subscriptions: z.number(),
    holding: z.array(z.strictObject({ key: z.string(), kind: z.string(), panel_id: z.string().nullable(), detail: z.string(), since: isoInstant })),
  }),
});

export const deadLetterRedriveAnswer = z.strictObject({ id: z.number(), kind: z.string(), panel_id: z.string().nullable(), action: z.string() });

export const alertSubscriptionAnswer = z.strictObject({
  id: z.string(),
  kinds: z.array(z.string()),
  email: z.string().nullable(),
  webhook_url: z.string().nullable(),
  signing_secret_set: z.boolean(),
  created_at: isoInstant,
  last_error: z.string().nullable(),
  last_error_at: isoInstant.nullable(),
});
export const alertSubscriptionListAnswer = z.strictObject({ subscriptions: z.array(alertSubscriptionAnswer) });
