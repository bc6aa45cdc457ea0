import type { ShardDb } from "./shards";

/**
 * The table function that reads a bound JSON array of rows (decisions 0032 and 0036).
 * jsonb_each (SQLite 3.45 on) hands each element over as JSONB, so the `->>` reads of its
 * members do not parse its text again each: json_each's values are text, parsed once per read,
 * about half of storing a batch's events as rows and a third of an import chunk's upserts.
 * Where the database does not know it, the statements run again with json_each, which reads
 * the same values, and the isolate keeps to it.
 */
export type JsonEach = "jsonb_each" | "json_each";
let inUse: JsonEach = "jsonb_each";
/** How a database refuses it: an unknown table function, or one its authorizer does not allow. */
const JSONB_EACH_REFUSED = /jsonb_each|not authorized|SQLITE_AUTH/i;

/** Runs `statements(each)` as one D1 batch with the best table function the database has. */
export async function batchWithJsonEach<T = unknown>(db: ShardDb, statements: (each: JsonEach) => D1PreparedStatement[]): Promise<D1Result<T>[]> {
  const each = inUse;
  try {
    return await db.batch<T>(statements(each));
  } catch (error) {
    // All or none: nothing of the failed batch was written.
    if (each === "json_each" || !JSONB_EACH_REFUSED.test(String(error))) throw error;
    // Known from here on, whatever the retry meets (an import chunk another consumer committed, say).
    inUse = "json_each";
    return await db.batch<T>(statements("json_each"));
  }
}
