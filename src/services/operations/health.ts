import { allShards, probeDatabase, shardBindingName } from "../../store/shards";

/**
 * The deep health check (GET /health/deep): every binding the Worker cannot serve without is
 * asked something it answers without changing anything (a `SELECT 1` of the control database
 * and of each shard, a HEAD of R2). Queues are not probed: a probe would be a message sent.
 */
export interface BindingCheck {
  binding: string;
  ok: boolean;
  ms: number;
  error: string | null;
}

/** A binding that has not answered in this long counts as unreachable. */
const PROBE_TIMEOUT_MS = 5_000;

async function probe(binding: string, ask: () => Promise<unknown>): Promise<BindingCheck> {
  const started = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS);
    });
    await Promise.race([ask(), timeout]);
    return { binding, ok: true, ms: Date.now() - started, error: null };
  } catch (error) {
    return { binding, ok: false, ms: Date.now() - started, error: error instanceof Error ? error.message : String(error) };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

export async function checkBindings(env: Env): Promise<BindingCheck[]> {
  return Promise.all([
    probe("DB", () => probeDatabase(env.DB)),
    ...allShards(env).map((shard) => probe(shardBindingName(shard.index), () => probeDatabase(shard.db))),
    probe("FILES", () => env.FILES.head("health/deep")),
  ]);
}
