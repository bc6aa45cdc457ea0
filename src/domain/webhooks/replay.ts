import { z } from "../../lib/z";
import { CHANNEL_EVENTS, WEBHOOK_CHANNELS, type MessageChannel } from "./payload";

// A webhook replay as the admin API takes it (issue 46 item 2, decision 0043); the panel's
// request type is z.input of the schema.

/** A replay id: the caller's (its idempotency key) or one the service makes. */
export const REPLAY_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The longest range one replay may cover. */
export const MAX_REPLAY_RANGE_DAYS = 366;

const instant = z.string().trim().min(1, { error: "must not be empty" }).max(64).meta({ example: "2026-11-01T00:00:00Z" });

export const createReplayBody = z
  .object({
    id: z.string().max(64).regex(REPLAY_ID, { error: "must be 1 to 64 letters, digits, '-' or '_'" }).optional(),
    /** ISO 8601; with Z or an offset, or a wall-clock time in the panel's zone. */
    from: instant,
    to: instant,
    channels: z
      .array(z.enum(WEBHOOK_CHANNELS, { error: `must be one of ${WEBHOOK_CHANNELS.join(", ")}` }))
      .min(1, { error: "must name at least one channel" })
      .max(WEBHOOK_CHANNELS.length)
      .optional(),
    journey_id: z.string().min(1).max(64).optional(),
    dry_run: z.boolean().default(false),
  })
  .strict();

export type CreateReplayBody = z.output<typeof createReplayBody>;

/** The (channel, name) pairs of message channels that are webhook events, as "channel/name". */
export const REPLAYED_MESSAGE_KINDS: readonly string[] = (Object.entries(CHANNEL_EVENTS) as Array<[MessageChannel, readonly string[]]>).flatMap(
  ([channel, names]) => names.map((name) => `${channel}/${name}`),
);

/** Whether a stored event's channel and name make a webhook event (every custom activity does). */
export function isReplayedKind(channel: string, name: string): boolean {
  return channel === "custom_activity" || REPLAYED_MESSAGE_KINDS.includes(`${channel}/${name}`);
}

/**
 * Batches a replay of `events` takes when each batch is full at the event limit (`maxEvents`):
 * replay steps hand events over in whole batches, so only a batch cut by its bytes (events of
 * more than 2.6 KB on average) makes more.
 */
export function replayBatches(events: number, maxEvents: number): number {
  return Math.ceil(events / maxEvents);
}
