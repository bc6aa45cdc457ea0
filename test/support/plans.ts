import type { ShardDb } from "../../src/store/shards";

/** A statement a store function ran: its SQL and bound values. */
export interface Caught {
  sql: string;
  values: unknown[];
}

/** The shard, recording each statement it is asked to prepare and bind before running it. */
export function recording(db: ShardDb): { db: ShardDb; caught: Caught[] } {
  const caught: Caught[] = [];
  const prepare = (sql: string) => {
    const statement = db.prepare(sql);
    return new Proxy(statement, {
      get(target, name) {
        if (name !== "bind") return Reflect.get(target, name);
        return (...values: unknown[]) => {
          caught.push({ sql, values });
          return target.bind(...values);
        };
      },
    });
  };
  return { db: new Proxy(db, { get: (target, name) => (name === "prepare" ? prepare : Reflect.get(target, name)) }), caught };
}

/** How `db` plans a caught statement, its steps' details joined by " | ". */
export async function planOf(db: ShardDb, { sql, values }: Caught): Promise<string> {
  const { results } = await db.prepare(`EXPLAIN QUERY PLAN ${sql}`).bind(...values).all<{ detail: string }>();
  return results.map((row) => row.detail).join(" | ");
}
