import { env } from "cloudflare:workers";
import { afterAll, describe, expect, it } from "vitest";
import { runCronTasks } from "../../src/jobs/cron";
import { recordEvents } from "../../src/services/pipeline/record";
import { readCronMessage } from "../../src/lib/tasks";
import { utcDayOf } from "../../src/domain/time";
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

/**
 * One tick at `now` with every query it sends counted, then each message it handed out (and
 * each those send) through the consumer, one per invocation (max_batch_size = 1).
 */
async function tick(now: number) {
  const count = { n: 0 };
  const queue = collectingQueue();
  const tickEnv = countingEnv(env, count, queue);
  const started = Date.now();
  await runCronTasks(tickEnv, now);
  const tickMs = Date.now() - started;
  const tickQueries = count.n;
  const tickMessages = queue.bodies.length;
  const shardMessagesOnly = queue.bodies.every((body) => readCronMessage(body)?.panels === undefined);
  let messages = tickMessages;
  let most = 0;
  const batches = new Map<string, number>();
  const msByTask = new Map<string, number>();
  while (queue.bodies.length) {
    const body = queue.bodies.shift();
    const message = readCronMessage(body)!;
    if (message.panels) batches.set(message.cron, (batches.get(message.cron) ?? 0) + 1);
    count.n = 0;
    const one = collectingQueue();
    one.bodies.push(body);
    const before = queue.bodies.length;
    const t0 = Date.now();
    await drainCron(tickEnv, one);
    msByTask.set(message.cron, (msByTask.get(message.cron) ?? 0) + Date.now() - t0);
    messages += queue.bodies.length - before;
    most = Math.max(most, count.n);
  }
  const batchMessages = [...batches.values()].reduce((sum, n) => sum + n, 0);
  console.log(
    `cron tick at ${PANELS} panels: ${tickQueries} D1 queries, ${tickMs} ms, ${tickMessages} messages handed out, ${messages} messages in all ` +
      `(panel batches ${JSON.stringify([...batches])}); at most ${most} D1 queries in one message; ms by task ${JSON.stringify([...msByTask])}`,
  );
  return { tickQueries, tickMs, tickMessages, shardMessagesOnly, messages, batches, batchMessages, most };
}

/** Records an event of `panel` that happened `daysAgo`, received then too (as if it had waited). */
async function oldEvent(panelId: string, daysAgo: number, now: number): Promise<void> {
  await recordEvents(env, { id: panelId }, [{ channel: "custom_activity" as const, name: "view", identity: "ada@example.com", params: {}, occurredAt: now - daysAgo * DAY }]);
  await pipelineSettled(panelId);
  await panelData.prepare("UPDATE events SET received_at = occurred_at WHERE panel_id = ?").bind(panelId).run();
}

describe("the cron at 10,000 panels", () => {
  it("hands the work out in a bounded number of D1 queries and messages, idle panels none, and the handed-out work archives old events of one of them", { timeout: 300_000 }, async () => {
    // One real panel with an event past its 30-day window...
    const now = Date.now();
    const panel = await createPanel();
    expect((await admin("PATCH", `/panels/${panel.id}`, { event_retention_days: 30 })).status).toBe(200);
    await oldEvent(panel.id, 40, now);
    // ...among 9,999 others on the same shard, written straight into the directory.
    const shard = (await env.DB.prepare("SELECT shard FROM panels WHERE id = ?").bind(panel.id).first<{ shard: number }>())!.shard;
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
       INSERT INTO panels (id, name, client_id, created_at, updated_at, shard)
       SELECT ?2 || i, 'Bulk ' || i, ?2 || 'client-' || i, ?3, ?3, ?4 FROM n`,
    )
      .bind(PANELS - 1, BULK_PREFIX, now, shard)
      .run();
    expect((await env.DB.prepare("SELECT COUNT(*) AS n FROM panels WHERE shard = ?").bind(shard).first<{ n: number }>())!.n).toBeGreaterThanOrEqual(PANELS);

    // The day's first tick: one message per handed-out task and shard, none per panel...
    const first = await tick(now);
    expect(first.tickQueries).toBeLessThanOrEqual(50);
    expect(first.tickMs).toBeLessThanOrEqual(5_000);
    expect(first.shardMessagesOnly).toBe(true);
    // ...then batches only for panels with work: the archive's one panel, and the day's contact
    // count of every panel (once a day). Each message far under D1's 1,000 queries per invocation.
    expect(first.batches.get("events.archive")).toBe(1);
    expect(first.batches.get("overview.contact-counts")).toBe(Math.ceil(PANELS / 100));
    expect(first.batchMessages).toBe(1 + Math.ceil(PANELS / 100));
    expect(first.most).toBeLessThan(500);
    // The old event left the shard for R2.
    const hot = () => panelData.prepare("SELECT COUNT(*) AS n FROM events WHERE panel_id = ?").bind(panel.id).first<{ n: number }>();
    expect((await hot())!.n).toBe(0);
    expect((await env.FILES.list({ prefix: `events/${panel.id}/` })).objects).toHaveLength(1);

    // A later tick the same day, every panel idle but one with another old event: the tick's
    // messages and one batch, not one per 100 panels.
    await oldEvent(panel.id, 41, now);
    const later = await tick(Math.min(now + 60_000, utcDayOf(now) + DAY - 1));
    expect(later.tickQueries).toBeLessThanOrEqual(50);
    expect(later.shardMessagesOnly).toBe(true);
    expect([...later.batches]).toEqual([["events.archive", 1]]);
    expect(later.messages).toBe(later.tickMessages + 1);
    expect(later.most).toBeLessThan(500);
    expect((await hot())!.n).toBe(0);
    expect((await env.FILES.list({ prefix: `events/${panel.id}/` })).objects).toHaveLength(2);
  });
});
