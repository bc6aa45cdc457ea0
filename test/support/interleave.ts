import { env } from "cloudflare:workers";

// A step of the background work interleaved with what a client does: a binding whose chosen
// method runs the client's act first, the test's way to land a call in the middle of a step.

/** `target` with some members replaced; every other method still runs on the target itself. */
export function overriding<T extends object>(target: T, overrides: Partial<Record<keyof T, unknown>>): T {
  return new Proxy(target, {
    get(base, key) {
      if (Object.prototype.hasOwnProperty.call(overrides, key)) return overrides[key as keyof T];
      const value = Reflect.get(base, key);
      return typeof value === "function" ? value.bind(base) : value;
    },
  });
}

/**
 * `FILES` whose first outbox write (of `panelId`'s mail, when given) runs `during` before it
 * lands: a client acting while a message is with the provider.
 */
export function filesActingOnSend(during: () => Promise<void>, panelId?: string): R2Bucket {
  let done = false;
  const files = env.FILES;
  return overriding(files, {
    put: async (name: string, ...rest: unknown[]) => {
      if (!done && name.startsWith(panelId ? `outbox/${panelId}/` : "outbox/")) {
        done = true;
        await during();
      }
      return (files.put as (...a: unknown[]) => unknown).call(files, name, ...rest);
    },
  });
}

/**
 * `db` whose first batch holding a statement `writes` picks (by its SQL and bound values) runs
 * `during` before it lands: a client acting after a step planned its writes, before they land.
 */
export function dbActingOnWrite<T extends D1Database>(db: T, writes: (sql: string, values: unknown[]) => boolean, during: () => Promise<void>): T {
  const picked = new WeakSet<object>();
  let done = false;
  return overriding<D1Database>(db, {
    prepare: (sql: string) => {
      const statement = db.prepare(sql);
      return overriding(statement, {
        bind: (...values: unknown[]) => {
          const bound = statement.bind(...values);
          if (writes(sql, values)) picked.add(bound);
          return bound;
        },
      });
    },
    batch: async (statements: D1PreparedStatement[]) => {
      if (!done && statements.some((s) => picked.has(s))) {
        done = true;
        await during();
      }
      return db.batch(statements);
    },
  }) as T;
}
