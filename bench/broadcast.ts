// npm run bench:broadcast: a campaign to MESSAGES (default 100,000) contacts through the outbox
// provider, messages per second from publish (the Cron Trigger's scheduled handler) to the last
// message sent, beside a baseline in the same runtime: the same number of outbox writes (R2
// .eml + D1 row) by a bare loop. Goal: at least 50% of the baseline.
//
// The contacts are seeded directly in D1 (bench setup, not the import path).
import { BENCH_SHARD, createBenchPanel, report, share, startRuntime } from "./lib.ts";

const messages = Number(process.env.MESSAGES ?? 100_000);
const runtime = await startRuntime();

interface D1Like {
  prepare(sql: string): { bind(...values: unknown[]): { run(): Promise<unknown>; first<T>(): Promise<T | null> } };
}

async function waitUntil<T>(probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

try {
  const db = (await runtime.miniflare.getD1Database(BENCH_SHARD)) as unknown as D1Like;
  const files = await runtime.miniflare.getR2Bucket("FILES");
  const panel = await createBenchPanel(runtime.origin);

  // Seed: the contacts, a list holding them all, the HTML body and a due campaign.
  const seedStart = performance.now();
  await db
    .prepare(
      `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2)
       INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at)
       SELECT ?1, 'user' || n || '@example.com', json_object('EMAIL', 'user' || n || '@example.com', 'NAME', 'User ' || n, 'CITY', 'Pune'), 0, 0 FROM seq`,
    )
    .bind(panel.id, messages)
    .run();
  await db.prepare("INSERT INTO lists (id, panel_id, name, name_key, description, created_at, updated_at) VALUES (1, ?, 'Bench', 'bench', '', 0, 0)").bind(panel.id).run();
  await db.prepare("INSERT INTO list_members (list_id, contact_id, panel_id, added_at) SELECT 1, id, panel_id, 0 FROM contacts WHERE panel_id = ?").bind(panel.id).run();
  const html = `<html><body><h1>Hello {{NAME|there}}</h1><p>Our spring sale in {{CITY|your city}} starts today.</p>
    <p><a href="https://shop.example.com/sale?utm_source=email">See the sale</a> or <a href="https://shop.example.com/stores">find a store</a>.</p>
    <p>${"Lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(8)}</p></body></html>`;
  await files.put("bench/body.html", html);
  const now = Date.now();
  // Every campaign's contacts arrive through an import job; here it is one already completed.
  await db
    .prepare(
      `INSERT INTO import_jobs (id, panel_id, status, phase, sources, list_id, total, created, created_at, finished_at, updated_at)
       VALUES ('imp_bench', ?1, 'completed', 'done', '[]', 1, ?2, ?2, ?3, ?3, ?3)`,
    )
    .bind(panel.id, messages, now)
    .run();
  await db
    .prepare(
      `INSERT INTO campaigns (id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key,
         status, import_job_id, request_id, created_at, updated_at)
       VALUES ('cmp_bench', ?, 1, 'Bench', 'Hello {{NAME}}', 'Shop', 'shop@example.com', '[]', '', ?, 'bench/body.html', 'scheduled', 'imp_bench', 'bench', ?, ?)`,
    )
    .bind(panel.id, now - 1000, now, now)
    .run();
  console.log(`seeded ${messages} contacts in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

  // Baseline: the same number of outbox writes by a bare loop, run as 10 loops side by side:
  // the sends consumer works on up to 10 nudges of one queue batch at a time, so the baseline
  // gets the same parallelism.
  const sample = "X".repeat(2200); // about the size of the campaign's .eml
  const loops = 10;
  const perLoop = Math.ceil(messages / loops);
  const baseStart = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      const end = Math.min(messages, (i + 1) * perLoop);
      // Requests of 1,000 writes each keep every response well inside fetch's header timeout.
      for (let offset = i * perLoop; offset < end; offset += 1000) {
        const response = await fetch(`${runtime.origin}/__bench/outbox?count=${Math.min(1000, end - offset)}&offset=${offset}&size=${sample.length}`);
        if (!response.ok) throw new Error(`baseline failed: ${response.status} ${await response.text()}`);
      }
    }),
  );
  const baseSeconds = (performance.now() - baseStart) / 1000;

  // The campaign: publish by the scheduled handler, then the sends queue until the last message.
  const worker = await runtime.miniflare.getWorker();
  const start = performance.now();
  await worker.scheduled({ cron: "* * * * *", scheduledTime: new Date() });
  const final = await waitUntil(
    () => db.prepare("SELECT status, (SELECT COUNT(*) FROM campaign_messages WHERE campaign_id = 'cmp_bench' AND status = 'sent') AS sent FROM campaigns WHERE id = 'cmp_bench'").bind().first<{ status: string; sent: number }>(),
    (row) => row !== null && (row.status === "sent" || row.status === "failed"),
    30 * 60_000,
  );
  const seconds = (performance.now() - start) / 1000;
  const outboxRows = await db.prepare("SELECT COUNT(*) AS n FROM outbox WHERE panel_id = ?").bind(panel.id).first<{ n: number }>();
  const eml = await files.get(`outbox/${panel.id}/cmp_bench.1.eml`);
  const emlSize = eml ? (await eml.text()).length : 0;

  const baseRate = messages / baseSeconds;
  const rate = messages / seconds;
  console.log(`\ncampaign to ${messages} contacts through the outbox provider (status ${final!.status}, ${final!.sent} sent, ${outboxRows?.n} outbox rows, .eml ${emlSize} bytes)`);
  console.log("case".padEnd(44), "seconds".padStart(9), "msg/s".padStart(9), "vs baseline".padStart(12));
  console.log("baseline: bare loop of outbox writes".padEnd(44), baseSeconds.toFixed(1).padStart(9), baseRate.toFixed(0).padStart(9), "100%".padStart(12));
  console.log("publish -> all sent (cron, queue, render)".padEnd(44), seconds.toFixed(1).padStart(9), rate.toFixed(0).padStart(9), `${((rate / baseRate) * 100).toFixed(0)}%`.padStart(12));
  if (final!.sent !== messages) console.log(`WARNING: ${messages - final!.sent} messages not sent`);
  report("broadcast", [
    { figure: `campaign to ${messages} contacts, msg/s`, service: rate.toFixed(0), baseline: baseRate.toFixed(0), ratio: share(rate, baseRate), goal: ">= 50%", met: rate >= 0.5 * baseRate && final!.sent === messages },
  ]);
} finally {
  await runtime.stop();
}
