import type { ShardDb } from "../../src/store/shards";
import { spiedShard } from "./batch-spy";

/** The shard as a database without jsonb_each answers: every batch naming it fails, writing nothing. */
export function withoutJsonbEach(real: ShardDb): { db: ShardDb; refused: () => number } {
  let refused = 0;
  const db = spiedShard(
    real,
    (statements, naming) => {
      if (!statements.some(naming)) return real.batch(statements);
      refused++;
      return Promise.reject(new Error("D1_ERROR: no such table: jsonb_each: SQLITE_ERROR"));
    },
    (sql) => sql.includes("jsonb_each"),
  );
  return { db, refused: () => refused };
}
