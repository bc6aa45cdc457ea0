import { d1Counted } from "../../src/store/d1-count";

// D1 use counted for the benchmarks: every statement the service runs and every round trip
// (a statement alone, or a batch of them), per isolate. GET /__bench/d1 answers the counts
// and, with ?reset=1, starts them again. Tests count with it too (countedEnv).
export interface D1Use {
  statements: number;
  roundTrips: number;
}
const counts: D1Use = { statements: 0, roundTrips: 0 };

/** The same bindings with the control database and every shard counted into `use` (src/store/d1-count.ts's wrapper). */
export function countedEnv(env: Env, use: D1Use): Env {
  return d1Counted(env, (statements) => {
    use.statements += statements;
    use.roundTrips++;
  });
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
