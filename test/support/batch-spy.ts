import type { ShardDb } from "../../src/store/shards";

/**
 * The shard with its `batch` replaced by `batch` (which may call the real one, wait or throw);
 * `tagged` tells whether a statement in the batch was prepared from SQL that `tag` matches.
 * Everything else goes to the real shard.
 */
export function spiedShard(
  real: ShardDb,
  batch: (statements: D1PreparedStatement[], tagged: (statement: D1PreparedStatement) => boolean) => Promise<D1Result[]>,
  tag: (sql: string) => boolean = () => false,
): ShardDb {
  const marked = new WeakSet<object>();
  const tagged = (statement: D1PreparedStatement) => marked.has(statement);
  return new Proxy(real, {
    get(target, name) {
      if (name === "prepare") {
        return (sql: string) => {
          const statement = target.prepare(sql);
          if (!tag(sql)) return statement;
          return { bind: (...values: unknown[]) => { const bound = statement.bind(...values); marked.add(bound); return bound; } };
        };
      }
      if (name === "batch") return (statements: D1PreparedStatement[]) => batch(statements, tagged);
      const value = Reflect.get(target, name);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
