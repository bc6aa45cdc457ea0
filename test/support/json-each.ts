import type { ShardDb } from "../../src/store/shards";

/** The shard as a database without jsonb_each answers: every batch naming it fails, writing nothing. */
export function withoutJsonbEach(real: ShardDb): { db: ShardDb; refused: () => number } {
  const naming = new WeakSet<object>();
  let refused = 0;
  const wrapped = new Proxy(real, {
    get(target, property) {
      if (property === "prepare") {
        return (sql: string) => {
          const statement = target.prepare(sql);
          if (!sql.includes("jsonb_each")) return statement;
          return { bind: (...values: unknown[]) => { const bound = statement.bind(...values); naming.add(bound); return bound; } };
        };
      }
      if (property === "batch") {
        return (statements: D1PreparedStatement[]) => {
          if (!statements.some((s) => naming.has(s))) return target.batch(statements);
          refused++;
          return Promise.reject(new Error("D1_ERROR: no such table: jsonb_each: SQLITE_ERROR"));
        };
      }
      const value = (target as any)[property];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db: wrapped, refused: () => refused };
}
