import type { ShardDb } from "../../src/store/shards";

/** The shard, keeping the values bound to each statement whose SQL `matches`, in order. */
export function recordingBinds(real: ShardDb, matches: (sql: string) => boolean): { db: ShardDb; bound: unknown[][] } {
  const bound: unknown[][] = [];
  const db = new Proxy(real, {
    get(target, name) {
      if (name === "prepare")
        return (sql: string) => {
          const statement = target.prepare(sql);
          if (!matches(sql)) return statement;
          return { bind: (...values: unknown[]) => (bound.push(values), statement.bind(...values)) };
        };
      const value = Reflect.get(target, name, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db, bound };
}
