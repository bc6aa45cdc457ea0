// D1 use counted for the benchmarks: every statement the service runs and every round trip
// (a statement alone, or a batch of them), per isolate. GET /__bench/d1 answers the counts
// and, with ?reset=1, starts them again. Tests count with it too (countedEnv).
export interface D1Use {
  statements: number;
  roundTrips: number;
}
const counts: D1Use = { statements: 0, roundTrips: 0 };

/** The binding itself never reaches D1's batch: statements are unwrapped first. */
const unwrapped = new WeakMap<object, D1PreparedStatement>();

function countingStatement(statement: D1PreparedStatement, counts: D1Use): D1PreparedStatement {
  const wrapped = new Proxy(statement, {
    get(target, property) {
      if (property === "bind") return (...values: unknown[]) => countingStatement(target.bind(...values), counts);
      if (property === "run" || property === "first" || property === "all" || property === "raw") {
        const method = (target as any)[property] as (...args: unknown[]) => unknown;
        return (...args: unknown[]) => {
          counts.statements++;
          counts.roundTrips++;
          return method.apply(target, args);
        };
      }
      const value = (target as any)[property];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  unwrapped.set(wrapped, statement);
  return wrapped;
}

/** The same database, each statement and round trip added to `counts`. */
function countingDatabase<T extends D1Database>(db: T, counts: D1Use): T {
  return new Proxy(db, {
    get(target, property) {
      if (property === "prepare") {
        return (sql: string) => countingStatement(target.prepare(sql), counts);
      }
      if (property === "batch") {
        return (statements: D1PreparedStatement[]) => {
          counts.statements += statements.length;
          counts.roundTrips++;
          return target.batch(statements.map((s) => unwrapped.get(s) ?? s));
        };
      }
      const value = (target as any)[property];
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The same bindings with the control database and every shard counted into `use` (a panel's data is on its shard). */
export function countedEnv(env: Env, use: D1Use): Env {
  return { ...env, DB: countingDatabase(env.DB, use), SHARD_0: countingDatabase(env.SHARD_0, use), SHARD_1: countingDatabase(env.SHARD_1, use) };
}

const envs = new WeakMap<Env, Env>();

/** The same bindings, counted for GET /__bench/d1. One wrapper per env object, so per-env caches keep working. */
export function countingEnv(env: Env): Env {
  let wrapped = envs.get(env);
  if (!wrapped) {
    wrapped = countedEnv(env, counts);
    envs.set(env, wrapped);
  }
  return wrapped;
}

export async function d1Counts(request: Request): Promise<Response> {
  const answer = JSON.stringify(counts);
  if (new URL(request.url).searchParams.get("reset") === "1") {
    counts.statements = 0;
    counts.roundTrips = 0;
  }
  return new Response(answer, { headers: { "content-type": "application/json" } });
}
