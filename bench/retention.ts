// npm run bench:retention: events per second moved to R2 by the retention task (rows read,
// written as gzipped NDJSON parts, read back and compared, then deleted in chunks) beside a
// baseline in the same runtime: a bare loop of the same R2 writes and D1 deletes.
//
// EVENTS (default 100,000) events of 5,000 contacts over 10 days, 200 days ago, are seeded
// directly in the shard for each side (bench setup, not the recording path).
import { BENCH_SHARD, createBenchPanel, startRuntime } from "./lib.ts";

const events = Number(process.env.EVENTS ?? 100_000);
const runtime = await startRuntime();

interface D1Like {
  prepare(sql: string): { bind(...values: unknown[]): { run(): Promise<unknown> } };
}

async function seed(db: D1Like, panelId: string): Promise<void> {
  const start = Date.now() - 200 * 86_400_000;
  await db
    .prepare(
      `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2)
       INSERT INTO events (panel_id, batch_id, guid, channel, name, activity_id, contact_id, uniqueid, identity, source, params, occurred_at, received_at)
       SELECT ?1, 0, 'g-' || ?1 || '-' || n, 'custom_activity', 'add_to_cart', 1, n % 5000 + 1, 'visitor-' || (n % 5000), 'user' || (n % 5000) || '@example.com', 'web',
         json_object('name', 'Kettle', 'prid', n, 'price', 29.5), ?3 + (n % 10) * 86400000 + n, ?3 + (n % 10) * 86400000 + n FROM seq`,
    )
    .bind(panelId, events, start)
    .run();
}

try {
  const db = (await runtime.miniflare.getD1Database(BENCH_SHARD)) as unknown as D1Like;
  const baselinePanel = await createBenchPanel(runtime.origin);
  const servicePanel = await createBenchPanel(runtime.origin);
  await seed(db, baselinePanel.id);
  await seed(db, servicePanel.id);
  console.log(`seeded ${events} events for each side`);

  const run = async (path: string, panel: string) => (await (await fetch(`${runtime.origin}${path}?panel=${panel}`)).json()) as { moved: number; ms: number; parts?: number };
  const baseline = await run("/__bench/archive-baseline", baselinePanel.id);
  const service = await run("/__bench/archive-service", servicePanel.id);
  const rate = (r: { moved: number; ms: number }) => r.moved / (r.ms / 1000);
  console.log(`\nevents moved to R2 (${events} events, parts of 2,000, deletes of 500)`);
  console.log("case".padEnd(44), "events".padStart(8), "seconds".padStart(8), "events/s".padStart(10), "vs baseline".padStart(12));
  for (const [name, r] of [["baseline: bare R2 writes and D1 deletes", baseline], ["retention task (record, write, verify, delete)", service]] as const) {
    console.log(name.padEnd(44), String(r.moved).padStart(8), (r.ms / 1000).toFixed(1).padStart(8), rate(r).toFixed(0).padStart(10), `${((rate(r) / rate(baseline)) * 100).toFixed(0)}%`.padStart(12));
  }
  if (service.moved !== events) throw new Error(`the task moved ${service.moved} of ${events} events`);
} finally {
  await runtime.stop();
}
