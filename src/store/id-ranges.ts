// Id ranges per shard (decision 0030): shard k hands out the INTEGER ids of its tables from
// k * 2^40 up, so a panel's rows (the list ids its clients hold, contact and event ids...) can
// be copied to another shard of the region without colliding with the rows there.
//
// AUTOINCREMENT never hands out an id below the largest one the table ever held, so the floor
// is set by inserting one placeholder row with id = k * 2^40 and deleting it in the same
// transaction (sqlite_sequence itself is not written: D1 may refuse it). The statements are
// plain SQL without parameters, so the same text runs as a D1 batch (tests, benchmarks) and
// through `wrangler d1 execute --command` (scripts/migrate.ts), where D1 runs it as one
// transaction too. Each insert is skipped once the table's sequence has reached the floor, and
// the delete removes only the placeholder (a real row's id is always above the floor), so
// applying them again changes nothing.
//
// No placeholder may count anywhere: each one is chosen so that no trigger of its table acts on
// it (listed per table below); test/store/id-ranges.test.ts checks the aggregates stay as they
// were. This file imports nothing: scripts/migrate.ts and bench/lib.ts run it under Node.

/** 2^40: a trillion ids per shard; ids stay below 2^53 (exact in JavaScript) for 8,192 shards. */
export const ID_RANGE_SIZE = 2 ** 40;

/** The first id shard `shardIndex` hands out is one above this; 0 for shard 0 (unchanged). */
export function idFloor(shardIndex: number): number {
  if (!Number.isInteger(shardIndex) || shardIndex < 0 || shardIndex >= 2 ** 53 / ID_RANGE_SIZE) throw new Error(`no id range for shard ${shardIndex}`);
  return shardIndex * ID_RANGE_SIZE;
}

/**
 * Every shard table with an `INTEGER PRIMARY KEY AUTOINCREMENT` id: the columns and values of
 * its placeholder row (the NOT NULL columns without a default). scripts/check-shards.ts fails
 * when a shard table has such an id and is missing here.
 */
export const ID_RANGE_PLACEHOLDERS: Record<string, { columns: string; values: string }> = {
  // No trigger. panel_id '' names no panel, so UNIQUE (panel_id, pk_value) meets no real contact.
  contacts: { columns: "panel_id, pk_value, created_at, updated_at", values: "'', '', 0, 0" },
  // lists: numbered per panel since migration 0058 (CONTRACT 10), no range of their own.
  // journey_step_waiting_new and journey_step_point_gone count only points whose kind is not
  // 'start'; a 'start' point counts nowhere. instance_id names no instance: the foreign key is
  // deferred to the end of the transaction (PRAGMA defer_foreign_keys), by when the row is gone.
  journey_points: {
    columns: "instance_id, step_id, panel_id, journey_id, contact_id, kind, created_at",
    values: "'', '', '', '', 0, 'start', 0",
  },
  // No trigger.
  event_batches: { columns: "panel_id, received_at, nudged_at", values: "'', 0, 0" },
  // journey_channel_events counts only events with a journey_id and a msgid: the placeholder has neither.
  events: { columns: "panel_id, guid, channel, name, occurred_at, received_at", values: "'', '', 'custom_activity', '', 0, 0" },
  // No trigger.
  journey_list_entries: { columns: "panel_id, journey_id, list_id, contact_id", values: "'', '', 0, 0" },
  // No trigger ('enter' satisfies its CHECK).
  segment_changes: { columns: "segment_id, panel_id, contact_id, change, at", values: "'', '', 0, 'enter', 0" },
  // No trigger.
  audit_log: { columns: "panel_id, at, action, target", values: "'', 0, '', ''" },
};

/** The SQL that sets shard `shardIndex`'s id floor in every table, in order, as one transaction; none for shard 0. */
export function idFloorStatements(shardIndex: number): string[] {
  return floorStatements(idFloor(shardIndex));
}

/**
 * Ranges handed to a shard that takes in a moved panel whose ids lie above the shard's own
 * (decision 0031): SQLite's AUTOINCREMENT hands out one above the largest id a table holds, so
 * the shard would go on in the other shard's range. Ranges from this one upwards are handed out
 * one per such move by the control database (panel_moves' id_ranges); shard indices stay below it.
 */
export const FIRST_MOVE_RANGE = 1024;

/**
 * The last range a move may hand out (decision 0037): ids of range r run up to (r + 1) × 2^40,
 * so range 8,190's end is 2^53 − 2^40. Range 8,191 is never handed out: a shard that ran past
 * the last range's trillion ids per table would still stay below 2^53 (Number.MAX_SAFE_INTEGER).
 * The pool holds 7,167 ranges; a move that needs one past it fails, saying so.
 */
export const LAST_MOVE_RANGE = 2 ** 53 / ID_RANGE_SIZE - 2;

/** The SQL that lifts every table's id floor to `floor` (a multiple of ID_RANGE_SIZE), as one transaction. */
export function floorStatements(floor: number): string[] {
  if (floor === 0) return [];
  return [
    "PRAGMA defer_foreign_keys = ON",
    ...Object.entries(ID_RANGE_PLACEHOLDERS).flatMap(([table, { columns, values }]) => [
      `INSERT INTO ${table} (id, ${columns}) SELECT ${floor}, ${values} WHERE COALESCE((SELECT seq FROM sqlite_sequence WHERE name = '${table}'), 0) < ${floor}`,
      `DELETE FROM ${table} WHERE id = ${floor}`,
    ]),
  ];
}

/** The shard index k of a shard binding (SHARD_k); null for any other binding (the control database DB). */
export function shardIndexOf(binding: string): number | null {
  const match = /^SHARD_(\d+)$/.exec(binding);
  return match ? Number(match[1]) : null;
}
