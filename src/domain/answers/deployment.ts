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

/** A panel's move from one shard to another, step by step. */
export const panelMoveAnswer = z.strictObject({
  id: z.string(),
  panel_id: z.string(),
  from_shard: z.number(),
  to_shard: z.number(),
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
