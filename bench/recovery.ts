// npm run bench:recovery: recovery after a crash at full speed. Three kinds of background work,
// SENDS (default 10,000) campaign recipients and ENTRIES (default 10,000) journey entries of
// each of two kinds, are recorded in D1 as a crash leaves them, their queue messages gone:
//
//   sends    a published campaign whose batch nudges were lost, ten of its batches claimed by
//            a consumer that died (outbox provider)
//   entries  list entries of a running list journey (one sms step) whose nudges were lost
//   points   journey instances written but never continued (the consumer died between the
//            two), their start points still leased by the dead consumer for a minute
//
// Then the service restarts on that state and fires the cron at once and every minute after,
// as `npm start` does; measured: seconds from the restart until each kind of work is done.
// Beside it, in a runtime of its own in the same run, the same work with nothing dropped: the
// nudges the normal path sends (one per campaign batch; one for the entries, as an upload
// step sends; five for the points, the chains a re-drive starts), and no cron at all. Goal:
// each kind done at most 2 minutes later than with nothing dropped.
//
// Last, how long one large batch run holds the runtime: HOLD_EVENTS (default 5,000) activities
// posted in batches of 1,000 into a running journey whose webhook step delivers to a receiver
// in this process, while an admin read is made every 100 ms; its latency during the run beside
// the same read with the runtime idle, in the same runtime.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { adminCall, BENCH_SHARD, createBenchPanel, report, startRuntime, times, type BenchRuntime } from "./lib.ts";

const sends = Number(process.env.SENDS ?? 10_000);
const entries = Number(process.env.ENTRIES ?? 10_000);
const TICK_MS = 60_000;
const TIMEOUT_MS = Number(process.env.TIMEOUT_S ?? 1800) * 1000;
const holdEvents = Number(process.env.HOLD_EVENTS ?? 5000);
/** Which parts run: `crash` (the recovery comparison), `hold` (the large batch run), or both. */
const parts = (process.env.PARTS ?? "crash,hold").split(",");

interface D1Like {
  prepare(sql: string): { bind(...values: unknown[]): { run(): Promise<unknown>; first<T>(): Promise<T | null> } };
}

type Kind = "sends" | "entries" | "points";
const KINDS: Kind[] = ["sends", "entries", "points"];

interface Seeded {
  panelId: string;
  listJourney: string;
  pointsJourney: string;
}

const HTML = `<html><body><h1>Hello {{NAME|there}}</h1><p><a href="https://shop.example.com/sale">See the sale</a></p></body></html>`;

/** Records the three kinds of work as a crash leaves them (`crashed`) or ready for their normal nudges. */
async function seed(runtime: BenchRuntime, crashed: boolean, crashAt: number): Promise<Seeded> {
  const db = (await runtime.miniflare.getD1Database(BENCH_SHARD)) as unknown as D1Like;
  const files = await runtime.miniflare.getR2Bucket("FILES");
  const panel = await createBenchPanel(runtime.origin);
  const contacts = Math.max(sends, entries);
  await db
    .prepare(
      `WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?2)
       INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at)
       SELECT ?1, 'user' || n || '@example.com',
         json_object('EMAIL', 'user' || n || '@example.com', 'NAME', 'User ' || n, 'MOBILE', '+1555' || printf('%07d', n)), 0, 0 FROM seq`,
    )
    .bind(panel.id, contacts)
    .run();
  await db.prepare("INSERT INTO lists (id, panel_id, name, name_key, description, created_at, updated_at) VALUES (1, ?1, 'Campaign', 'campaign', '', 0, 0), (2, ?1, 'Journey', 'journey', '', 0, 0)").bind(panel.id).run();

  // sends: published, every recipient queued, the batch nudges lost (and ten batches claimed by a dead consumer).
  await files.put("bench/recovery.html", HTML);
  await db
    .prepare(
      `INSERT INTO campaigns (id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key,
         status, recipients, request_id, created_at, published_at, updated_at)
       VALUES ('cmp_recovery', ?1, 1, 'Recovery', 'Hello {{NAME}}', 'Shop', 'shop@example.com', '[]', '', ?2, 'bench/recovery.html', 'sending', ?3, 'bench', ?2, ?2, ?2)`,
    )
    .bind(panel.id, crashAt, sends)
    .run();
  await db
    .prepare(
      `INSERT INTO campaign_messages (campaign_id, contact_id, panel_id, batch, status, claim, claimed_at)
       SELECT 'cmp_recovery', id, panel_id, (ROW_NUMBER() OVER (ORDER BY id) - 1) / 100, 'queued', NULL, NULL FROM contacts WHERE panel_id = ?1 ORDER BY id LIMIT ?2`,
    )
    .bind(panel.id, sends)
    .run();
  if (crashed) {
    await db.prepare("UPDATE campaign_messages SET status = 'sending', claim = 'dead', claimed_at = ? WHERE campaign_id = 'cmp_recovery' AND batch < 10").bind(crashAt).run();
  }

  // entries: a running list journey, then the members (the membership trigger writes the entries; no nudge).
  const sms = [{ id: "hi", type: "sms", text: "Hi {{NAME}}" }];
  const listJourney = await adminCall(runtime.origin, "POST", `/panels/${panel.id}/journeys`, { name: "List", trigger: { type: "list", listid: 2 }, steps: sms });
  await adminCall(runtime.origin, "POST", `/panels/${panel.id}/journeys/${listJourney.id}/status`, { status: "running" });
  await db.prepare("INSERT INTO list_members (list_id, contact_id, panel_id, added_at) SELECT 2, id, panel_id, ?2 FROM contacts WHERE panel_id = ?1 ORDER BY id LIMIT ?3").bind(panel.id, crashAt, entries).run();

  // points: instances entered, their start points not continued (leased by the dead consumer for a minute after the crash).
  await adminCall(runtime.origin, "POST", `/panels/${panel.id}/activities`, { name: "bench" });
  const pointsJourney = await adminCall(runtime.origin, "POST", `/panels/${panel.id}/journeys`, { name: "Points", trigger: { type: "activity", activity: "bench" }, steps: sms });
  await adminCall(runtime.origin, "POST", `/panels/${panel.id}/journeys/${pointsJourney.id}/status`, { status: "running" });
  await db
    .prepare(
      `INSERT INTO journey_instances (id, panel_id, journey_id, contact_id, entry_key, status, entered_at)
       SELECT 'jin_bench_' || id, panel_id, ?2, id, 'bench:' || id, 'active', ?3 FROM contacts WHERE panel_id = ?1 ORDER BY id LIMIT ?4`,
    )
    .bind(panel.id, pointsJourney.id, crashAt, entries)
    .run();
  await db
    .prepare(
      `INSERT INTO journey_points (instance_id, step_id, panel_id, journey_id, contact_id, kind, outcome, created_at, resolved_at, leased_until)
       SELECT id, '', panel_id, journey_id, contact_id, 'start', 'start', ?2, ?2, ?3 FROM journey_instances WHERE journey_id = ?1`,
    )
    .bind(pointsJourney.id, crashAt, crashed ? crashAt + 60_000 : 0)
    .run();
  return { panelId: panel.id, listJourney: listJourney.id, pointsJourney: pointsJourney.id };
}

async function isDone(runtime: BenchRuntime, seeded: Seeded, kind: Kind): Promise<boolean> {
  const db = (await runtime.miniflare.getD1Database(BENCH_SHARD)) as unknown as D1Like;
  const count = async (sql: string, ...values: unknown[]) => (await db.prepare(sql).bind(...values).first<{ n: number }>())!.n;
  if (kind === "sends") return (await count("SELECT COUNT(*) AS n FROM campaigns WHERE id = 'cmp_recovery' AND status = 'sent'")) === 1;
  const journey = kind === "entries" ? seeded.listJourney : seeded.pointsJourney;
  return (await count("SELECT COUNT(*) AS n FROM journey_instances WHERE journey_id = ? AND status = 'completed'", journey)) === entries;
}

/** Seconds from `start` until each kind is done, polling twice a second. */
async function timeToDone(runtime: BenchRuntime, seeded: Seeded, start: number): Promise<Record<Kind, number>> {
  const done: Partial<Record<Kind, number>> = {};
  let reported = 0;
  while (KINDS.some((kind) => done[kind] === undefined)) {
    if (performance.now() - start > TIMEOUT_MS) throw new Error(`not done after ${TIMEOUT_MS / 1000} s: ${KINDS.filter((k) => done[k] === undefined).join(", ")}`);
    // Miniflare's proxy to the runtime's bindings drops a connection now and then on a loaded
    // machine; a failed poll is a missed sample, not a failed run.
    try {
      if (process.env.VERBOSE && performance.now() - reported > 10_000) {
        reported = performance.now();
        console.log(`${((reported - start) / 1000).toFixed(0)} s:`, JSON.stringify(await tally(runtime, seeded)), JSON.stringify(done));
      }
      for (const kind of KINDS) if (done[kind] === undefined && (await isDone(runtime, seeded, kind))) done[kind] = (performance.now() - start) / 1000;
    } catch (error) {
      console.error(`poll failed (${(error as Error).message}); polling on`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  return done as Record<Kind, number>;
}

/** What was sent, entered and continued, to check each once. */
async function tally(runtime: BenchRuntime, seeded: Seeded) {
  const db = (await runtime.miniflare.getD1Database(BENCH_SHARD)) as unknown as D1Like;
  const one = async (sql: string, ...values: unknown[]) => (await db.prepare(sql).bind(...values).first<{ n: number }>())!.n;
  return {
    outbox: await one("SELECT COUNT(*) AS n FROM outbox WHERE panel_id = ?", seeded.panelId),
    sent: await one("SELECT COUNT(*) AS n FROM campaign_messages WHERE campaign_id = 'cmp_recovery' AND status = 'sent'"),
    sms: await one("SELECT COUNT(*) AS n FROM journey_messages WHERE panel_id = ? AND channel = 'sms'", seeded.panelId),
    instances: await one("SELECT COUNT(*) AS n FROM journey_instances WHERE panel_id = ?", seeded.panelId),
  };
}

async function nothingDropped(): Promise<{ seconds: Record<Kind, number>; counts: Awaited<ReturnType<typeof tally>> }> {
  const runtime = await startRuntime();
  try {
    const seeded = await seed(runtime, false, Date.now());
    const sendsQueue = await runtime.miniflare.getQueueProducer("SENDS");
    const journeysQueue = await runtime.miniflare.getQueueProducer("JOURNEYS");
    const start = performance.now();
    const batches = Math.ceil(sends / 100);
    for (let i = 0; i < batches; i += 100) {
      await sendsQueue.sendBatch(
        Array.from({ length: Math.min(100, batches - i) }, (_, j) => ({ body: { kind: "campaign_batch", panelId: seeded.panelId, campaignId: "cmp_recovery", batch: i + j } })),
      );
    }
    await journeysQueue.send({ type: "list-entries", panel: seeded.panelId });
    await journeysQueue.sendBatch(Array.from({ length: 5 }, () => ({ body: { type: "points", panel: seeded.panelId } })));
    const seconds = await timeToDone(runtime, seeded, start);
    return { seconds, counts: await tally(runtime, seeded) };
  } finally {
    await runtime.stop();
  }
}

async function afterCrash(): Promise<{ seconds: Record<Kind, number>; counts: Awaited<ReturnType<typeof tally>>; ticks: number }> {
  const stateDir = join(mkdtempSync(join(tmpdir(), "apiv2-recovery-")), "state");
  try {
    // The work as the crash left it, written by a runtime that then goes away with its queues.
    const before = await startRuntime({ stateDir, withoutConsumersOf: ["apiv2-sends-default", "apiv2-journeys-default", "apiv2-events-default", "apiv2-imports-default"] });
    const seeded = await seed(before, true, Date.now());
    await before.stop();

    const runtime = await startRuntime({ stateDir });
    try {
      const worker = await runtime.miniflare.getWorker();
      const start = performance.now();
      let ticks = 0;
      const tick = () => {
        ticks++;
        return worker.scheduled({ cron: "* * * * *", scheduledTime: new Date() }).catch((error: unknown) => console.error("cron tick failed", error));
      };
      void tick();
      const timer = setInterval(() => void tick(), TICK_MS);
      try {
        const seconds = await timeToDone(runtime, seeded, start);
        return { seconds, counts: await tally(runtime, seeded), ticks };
      } finally {
        clearInterval(timer);
      }
    } finally {
      await runtime.stop();
    }
  } finally {
    rmSync(join(stateDir, ".."), { recursive: true, force: true });
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : 0;
}

/** Admin reads every 100 ms while `until` is pending: their latencies, sorted. */
async function readsDuring(origin: string, panelId: string, until: Promise<unknown>): Promise<number[]> {
  const latencies: number[] = [];
  let over = false;
  void until.then(() => (over = true));
  while (!over) {
    const t0 = performance.now();
    await adminCall(origin, "GET", `/panels/${panelId}`);
    latencies.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return latencies.sort((a, b) => a - b);
}

async function batchHold() {
  let received = 0;
  let onAll: () => void = () => {};
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const data = new URLSearchParams(Buffer.concat(chunks).toString("utf8")).get("data");
      if (data) for (const events of Object.values(JSON.parse(data) as Record<string, unknown[]>)) received += events.length;
      if (received >= holdEvents) onAll();
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const runtime = await startRuntime();
  try {
    const { origin } = runtime;
    const panel = await createBenchPanel(origin);
    const activity = await adminCall(origin, "POST", `/panels/${panel.id}/activities`, { name: "add_to_cart", params: { price: "float" } });
    const webhook = await adminCall(origin, "POST", `/panels/${panel.id}/webhooks`, { label: "hold", url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` });
    await adminCall(origin, "POST", `/panels/${panel.id}/webhooks/${webhook.id}/test`);
    const journey = await adminCall(origin, "POST", `/panels/${panel.id}/journeys`, {
      name: "Hold",
      trigger: { type: "activity", activity: "add_to_cart" },
      steps: [{ id: "hook", type: "webhook", webhook: webhook.id, attributes: ["EMAIL"] }],
    });
    await adminCall(origin, "POST", `/panels/${panel.id}/journeys/${journey.id}/status`, { status: "running" });
    const idle = await readsDuring(origin, panel.id, new Promise((resolve) => setTimeout(resolve, 5000)));
    const all = new Promise<void>((resolve) => (onAll = resolve));
    const start = performance.now();
    for (let from = 0; from < holdEvents; from += 1000) {
      const events = Array.from({ length: Math.min(1000, holdEvents - from) }, (_, j) => ({
        activityid: activity.activityid,
        identity: `hold${from + j}@example.com`,
        activity_params: { "f^price": 9.5 },
      }));
      const posted = await fetch(`${origin}/v1/activity/batch/${encodeURIComponent(panel.clientId)}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(events) });
      if (!posted.ok) throw new Error(`batch post failed: ${posted.status} ${await posted.text()}`);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise((resolve) => (timer = setTimeout(resolve, TIMEOUT_MS)));
    const during = await readsDuring(origin, panel.id, Promise.race([all, timeout]));
    clearTimeout(timer);
    return { idle, during, seconds: (performance.now() - start) / 1000, received };
  } finally {
    await runtime.stop();
    receiver.close();
  }
}

if (parts.includes("crash")) {
  const baseline = await nothingDropped();
  const crashed = await afterCrash();
  console.log(`\nrecovery: ${sends} campaign recipients, ${entries} list entries, ${entries} half-done journey instances (outbox provider, sms steps)`);
  console.log("kind".padEnd(10), "nothing dropped s".padStart(18), "after crash s".padStart(14), "extra s".padStart(9));
  for (const kind of KINDS) {
    const extra = crashed.seconds[kind] - baseline.seconds[kind];
    console.log(kind.padEnd(10), baseline.seconds[kind].toFixed(1).padStart(18), crashed.seconds[kind].toFixed(1).padStart(14), extra.toFixed(1).padStart(9), extra <= 120 ? "" : "  over the 2-minute goal");
  }
  console.log(`cron ticks after the restart: ${crashed.ticks}`);
  console.log("counts (nothing dropped / after crash):", JSON.stringify(baseline.counts), JSON.stringify(crashed.counts));
  const expected = { outbox: sends, sent: sends, sms: 2 * entries, instances: 2 * entries };
  const complete = JSON.stringify(crashed.counts) === JSON.stringify(expected);
  report(
    "recovery",
    KINDS.map((kind) => ({
      figure: `${kind} after a crash, seconds to done`,
      service: crashed.seconds[kind].toFixed(1),
      baseline: baseline.seconds[kind].toFixed(1),
      ratio: times(crashed.seconds[kind], baseline.seconds[kind]),
      goal: "<= baseline + 120",
      met: crashed.seconds[kind] - baseline.seconds[kind] <= 120 && complete,
    })),
  );
  for (const [name, counts] of [["nothing dropped", baseline.counts], ["after crash", crashed.counts]] as const) {
    if (JSON.stringify(counts) !== JSON.stringify(expected)) console.log(`WARNING ${name}: expected ${JSON.stringify(expected)}`);
  }
}

if (parts.includes("hold")) {
  const hold = await batchHold();
  const row = (name: string, l: number[]) =>
    console.log(name.padEnd(34), String(l.length).padStart(6), percentile(l, 50).toFixed(0).padStart(8), percentile(l, 99).toFixed(0).padStart(8), (l.at(-1) ?? 0).toFixed(0).padStart(8));
  console.log(`\none large batch run: ${holdEvents} activities in batches of 1,000 into a journey with a webhook step; ${hold.received} webhook events in ${hold.seconds.toFixed(1)} s`);
  console.log("admin read (GET /panels/{id})".padEnd(34), "reads".padStart(6), "p50 ms".padStart(8), "p99 ms".padStart(8), "max ms".padStart(8));
  row("idle (baseline)", hold.idle);
  row("during the batch run", hold.during);
  console.log(`max during / p50 idle: ${((hold.during.at(-1) ?? 0) / Math.max(1, percentile(hold.idle, 50))).toFixed(0)}x`);
  report("recovery", [
    {
      figure: `admin read p99 ms during a ${holdEvents}-event batch run`,
      service: percentile(hold.during, 99).toFixed(0),
      baseline: percentile(hold.idle, 99).toFixed(0),
      ratio: times(percentile(hold.during, 99), Math.max(1, percentile(hold.idle, 99))),
      goal: "",
      met: null,
    },
  ]);
}
