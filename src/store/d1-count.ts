import { currentObservation } from "../lib/observability/context";
import { allShards, shardBindingName, type ControlDb, type ShardDb } from "./shards";

/**
 * Counts the D1 statements a request or a queue batch sends, for its log line (lib/observability/log.ts): the
 * control database and every shard of the env handed to it are wrapped, and each statement run
 * (first/run/all/raw, each statement of a batch, an exec) adds one to the current observation's
 * `d1Statements`. Store code is unchanged; outside an observation nothing is counted. The
 * benchmarks and tests count with the same wrapper (bench/worker/d1-count.ts).
 */

/** Told of each round trip to D1 with the number of statements it carried. */
export type D1Counter = (statements: number) => void;

function countIntoObservation(n: number): void {
  const observation = currentObservation();
  if (observation) observation.d1Statements = (observation.d1Statements ?? 0) + n;
}

/** A prepared statement that counts itself when run; `inner` goes to the real batch. */
class CountedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly counted: D1Counter,
  ) {}
  bind(...values: unknown[]): CountedStatement {
    return new CountedStatement(this.inner.bind(...values), this.counted);
  }
  first(column?: string): Promise<unknown> {
    this.counted(1);
    return column === undefined ? this.inner.first() : this.inner.first(column);
  }
  run(): Promise<D1Result> {
    this.counted(1);
    return this.inner.run();
  }
  all(): Promise<D1Result> {
    this.counted(1);
    return this.inner.all();
  }
  raw(options?: { columnNames?: boolean }): Promise<unknown[]> {
    this.counted(1);
    return options?.columnNames ? this.inner.raw({ columnNames: true }) : this.inner.raw();
  }
}

class CountedDatabase {
  constructor(
    private readonly inner: ControlDb | ShardDb,
    private readonly counted: D1Counter,
  ) {}
  prepare(query: string): CountedStatement {
    return new CountedStatement(this.inner.prepare(query), this.counted);
  }
  batch(statements: readonly (CountedStatement | D1PreparedStatement)[]): Promise<D1Result[]> {
    this.counted(statements.length);
    return this.inner.batch(statements.map((s) => (s instanceof CountedStatement ? s.inner : s)));
  }
  exec(query: string): Promise<D1ExecResult> {
    this.counted(1);
    return this.inner.exec(query);
  }
  dump(): Promise<ArrayBuffer> {
    return this.inner.dump();
  }
  withSession(constraintOrBookmark?: string): D1DatabaseSession {
    return this.inner.withSession(constraintOrBookmark);
  }
}

/** `env` with its D1 bindings (the control database and each shard's) telling `counted` of every round trip. */
export function d1Counted(env: Env, counted: D1Counter): Env {
  const overrides: Record<string, unknown> = { DB: new CountedDatabase(env.DB, counted) };
  for (const shard of allShards(env)) overrides[shardBindingName(shard.index)] = new CountedDatabase(shard.db, counted);
  return { ...env, ...overrides } as Env;
}

const countingEnvs = new WeakMap<object, Env>();

/**
 * `env` with its D1 bindings (the control database and each shard's) counting into the current observation; one per env
 * object (an isolate's env is the same for each request), so `config(env)` stays parsed once.
 */
export function countingD1(env: Env): Env {
  let wrapped = countingEnvs.get(env);
  if (!wrapped) {
    wrapped = d1Counted(env, countIntoObservation);
    countingEnvs.set(env, wrapped);
  }
  return wrapped;
}
