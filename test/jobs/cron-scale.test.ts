import { env } from "cloudflare:workers";
import { afterAll, describe, expect, it } from "vitest";
import { runCronTasks } from "../../src/jobs/cron";
import { recordEvents } from "../../src/services/pipeline/record";
import { readCronMessage } from "../../src/lib/tasks";
import { admin, createPanel, panelData } from "../support/helpers";
import { pipelineSettled } from "../support/activity";
import { collectingQueue, drainCron, withBindings } from "../support/cron";

const DAY = 86_400_000;
const PANELS = 10_000;
const BULK_PREFIX = "cronscale-";

/** Each D1 statement run through `db` counts one query, a batch one per statement (as D1 counts them). */
function countingD1(db: D1Database, count: { n: number }): D1Database {
  const real = new WeakMap<object, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const wrapped = new Proxy(statement, {
      get(target, key) {
        if (key === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        if (key === "first" || key === "all" || key === "run" || key === "raw") {
          return (...args: unknown[]) => {
            count.n++;
            return (target[key] as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    real.set(wrapped, statement);
    return wrapped;
  };
  return new Proxy(db, {
    get(target, key) {
      if (key === "prepare") return (sql: string) => wrap(target.prepare(sql));
      if (key === "batch") {
        return (statements: D1PreparedStatement[]) => {
          count.n += statements.length;
          return target.batch(statements.map((s) => real.get(s) ?? s));
        };
      }
      if (key === "exec") {
        return (sql: string) => {
          count.n++;
          return target.exec(sql);
        };
      }
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** `env` whose control database and every shard count their queries into `count`. */
function countingEnv(base: Env, count: { n: number }, queue: Queue): Env {
  const bindings = base as unknown as Record<string, unknown>;
  const overrides: Record<string, unknown> = { DB: countingD1(base.DB, count), CRON: queue };
  for (let i = 0; bindings[`SHARD_${i}`]; i++) overrides[`SHARD_${i}`] = countingD1(bindings[`SHARD_${i}`] as D1Database, count);
  return withBindings(base, overrides as Partial<Env>);
}

afterAll(async () => {
  await env.DB.prepare("DELETE FROM panels WHERE id LIKE ?").bind(`${BULK_PREFIX}%`).run();
});

describe("the cron at 10,000 panels", () => {
  it("hands the work out in a bounded number of D1 queries, and the handed-out work archives an old event of one of them", { timeout: 300_000 }, async () => {
    // One real panel with an event past its 30-day window...
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).status).toBe(200);
    const old = Date.now() - 40 * DAY;
    await recordEvents(env, { id: panel.id }, [{ channel: "custom_activity" as const, name: "view", identity: "ada@example.com", params: {}, occurredAt: old }]);
    await pipelineSettled(panel.id);
    await panelData.prepare("UPDATE events SET received_at = occurred_at WHERE panel_id = ?").bind(panel.id).run();
    // ...among 9,999 others on the same shard, written straight into the directory.
    const shard = (await env.DB.prepare("SELECT shard FROM panels WHERE id = ?").bind(panel.id).first<{ shard: number }>())!.shard;
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
       INSERT INTO panels (id, name, client_id, created_at, updated_at, shard)
       SELECT ?2 || i, 'Bulk ' || i, ?2 || 'client-' || i, ?3, ?3, ?4 FROM n`,
    )
      .bind(PANELS - 1, BULK_PREFIX, Date.now(), shard)
      .run();
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM panels WHERE shard = ?").bind(shard).first<{ n: number }>())!.n).toBeGreaterThanOrEqual(PANELS);

    // The tick: every query it sends counted, its messages kept.
    const count = { n: 0 };
    const queue = collectingQueue();
    const tickEnv = countingEnv(env, count, queue);
    const started = Date.now();
    await runCronTasks(tickEnv, Date.now());
    const tickMs = Date.now() - started;
    console.log(`cron tick at ${PANELS} panels: ${count.n} D1 queries, ${tickMs} ms, ${queue.bodies.length} messages handed out`);
    expect(count.n).toBeLessThanOrEqual(50);
    expect(tickMs).toBeLessThanOrEqual(5_000);
    // One message per handed-out task and shard, none per panel.
    expect(queue.bodies.every((body) => readCronMessage(body)?.panels === undefined)).toBe(true);

    // The consumer, a message per invocation (max_batch_size = 1): each stays far under D1's
    // 1,000 queries per invocation, and the per-panel tasks reach every panel in batches.
    let most = 0;
    let batches = 0;
    const msByTask = new Map<string, number>();
    while (queue.bodies.length) {
      const body = queue.bodies.shift();
      const message = readCronMessage(body)!;
      if (message.panels) batches++;
      count.n = 0;
      const one = collectingQueue();
      one.bodies.push(body);
      const t0 = Date.now();
      await drainCron(tickEnv, one);
      msByTask.set(message.cron, (msByTask.get(message.cron) ?? 0) + Date.now() - t0);
      most = Math.max(most, count.n);
    }
    console.log(`consumer: ${batches} panel batch messages, at most ${most} D1 queries in one message; ms by task ${JSON.stringify([...msByTask])}`);
    expect(batches).toBeGreaterThanOrEqual(2 * Math.ceil(PANELS / 100));
    expect(most).toBeLessThan(500);

    // The old event left the shard for R2.
    const hot = await panelData.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ?").bind(panel.id).first<{ n: number }>();
    expect(hot!.n).toBe(0);
    expect((await env.FILES.list({ prefix: `events/${panel.id}/` })).objects).toHaveLength(1);
  });
});
