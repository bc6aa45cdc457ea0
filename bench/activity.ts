// npm run bench:activity: single-activity posts under concurrent load beside a bare one-insert
// D1 route (issue 48 goals: >= 85% of its throughput, p50 <= 1.15x, p99 <= 1.3x) and the post's
// floor (the same request, one event row stored, no goal: how much of the gap is the service's), the batch
// endpoint beside the bare batched insert of the same bodies into the service's `events` table
// (no goal: the endpoint stores one batch row, the pipeline the events), Activity API v2's upload beside the batch endpoint
// (>= 95%), and the pipeline end to end beside that bare batched insert (<= 1.5x its time and
// its workerd CPU per event), every figure a ratio against a baseline of the same run and runtime.
//
// The machine is shared, so cases alternate in short slices (ROUNDS x SLICE seconds each); the
// figures are totals over all slices, and the spread of the per-slice ratios is printed beside
// each one, so a reader sees the noise.
//
// Part 1 (single posts) and part 3 (batches end to end) run with the EVENTS queue consumer
// attached, as deployed: each service slice waits for the pipeline to finish before the next
// slice, so a baseline never pays for it. Part 1 reports that drain apart; part 3 counts it in
// the pipeline's time (the last batch of a slice waits up to a queue delivery window, 1 s).
// Part 2 measures the batch endpoint itself in a second runtime without the EVENTS consumer:
// locally workerd runs every isolate on one thread, so an attached consumer takes the
// endpoint's CPU, which in production it does not (consumers run in invocations of their own).
import { asUploadEvent, BENCH_ACTIVITY, benchEvent } from "./activity-events.ts";
import { adminCall, BENCH_SHARD, createBenchPanel, load, printComparison, rate, report, share, sliceSpread, startRuntime, Tally, times, type BenchFigure, type BenchRuntime, type SliceFigures } from "./lib.ts";

const concurrency = Number(process.env.CONCURRENCY ?? 16);
const rounds = Number(process.env.ROUNDS ?? 5);
const slice = Number(process.env.SLICE ?? 3);
const batchSize = Number(process.env.BATCH_SIZE ?? 1000);
const batchConcurrency = Number(process.env.BATCH_CONCURRENCY ?? 2);
/** Which parts to run, e.g. PARTS=3 for an A/B of the pipeline alone (default: all). */
const parts = new Set((process.env.PARTS ?? "1,2,3").split(",").map((part) => part.trim()));

const EVENTS_QUEUE = "apiv2-events-default";

interface Setup {
  runtime: BenchRuntime;
  drain(): Promise<number>;
  single(): Promise<Response>;
  /** The single post's floor (bench/worker/baseline-post-floor.ts): the same request, the work it cannot do without. */
  postFloor(): Promise<Response>;
  batch(): Promise<Response>;
  upload(): Promise<Response>;
  insert(): Promise<Response>;
  /** The same batch body stored by the bare baseline (bench/worker/baseline-events.ts). */
  insertEvents(): Promise<Response>;
}

async function setUp(runtime: BenchRuntime): Promise<Setup> {
  const db = await runtime.miniflare.getD1Database(BENCH_SHARD);
  const pending = async () => (await db.prepare("SELECT COUNT(*) AS n FROM event_batches WHERE state = 'pending'").first<{ n: number }>())!.n;
  const panel = await createBenchPanel(runtime.origin);
  const activity = await adminCall(runtime.origin, "POST", `/panels/${panel.id}/activities`, BENCH_ACTIVITY);
  const event = (i: number) => benchEvent(activity.activityid, i);
  const named = (i: number) => asUploadEvent(event(i));
  let sequence = 0;
  return {
    runtime,
    async drain() {
      const t0 = performance.now();
      while ((await pending()) > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      return (performance.now() - t0) / 1000;
    },
    single: () =>
      fetch(`${runtime.origin}/v1/activity/singleactivity/${panel.clientId}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(event(sequence++)),
      }),
    postFloor: () =>
      fetch(`${runtime.origin}/__bench/post-floor?client=${panel.clientId}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(event(sequence++)),
      }),
    batch() {
      const start = sequence;
      sequence += batchSize;
      return fetch(`${runtime.origin}/v1/activity/batch/${panel.clientId}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(Array.from({ length: batchSize }, (_, j) => event(start + j))),
      });
    },
    upload() {
      const start = sequence;
      sequence += batchSize;
      return fetch(`${runtime.origin}/v1/activity/upload`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${panel.apiKey}` },
        body: JSON.stringify(Array.from({ length: batchSize }, (_, j) => named(start + j))),
      });
    },
    insertEvents() {
      const start = sequence;
      sequence += batchSize;
      return fetch(`${runtime.origin}/__bench/insert-events`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(Array.from({ length: batchSize }, (_, j) => event(start + j))),
      });
    },
    insert() {
      const i = sequence++;
      return fetch(`${runtime.origin}/__bench/insert?key=k${i}&attrs=${encodeURIComponent(JSON.stringify({ EMAIL: `user${i}@example.com`, NAME: `User ${i}` }))}`);
    },
  };
}

function printBatches(title: string, tally: Tally, note: string) {
  const b = tally.result();
  const events = b.requests * batchSize;
  console.log(`\n${title}`);
  console.log(
    `calls/s ${b.perSecond.toFixed(1)}  events/s ${(events / b.seconds).toFixed(0)}  p50 ${b.p50.toFixed(0)} ms  p99 ${b.p99.toFixed(0)} ms  failed ${b.failures}  ${note}`,
  );
  return events;
}

const figures: BenchFigure[] = [];

// Part 1: single posts, pipeline attached.
const deployed = await setUp(await startRuntime());
try {
  const { single, postFloor, insert, batch, drain } = deployed;
  // Warm every path so none pays for first-request compilation.
  await load(insert, { concurrency, seconds: 2 });
  await load(single, { concurrency, seconds: 2 });
  await load(postFloor, { concurrency, seconds: 2 });
  await load(batch, { concurrency: batchConcurrency, seconds: 2 });
  await drain();

  const baseline = new Tally(deployed.runtime.origin);
  const singles = new Tally(deployed.runtime.origin);
  const floors = new Tally(deployed.runtime.origin);
  let singleDrain = 0;
  for (let round = 0; round < (parts.has("1") ? rounds : 0); round++) {
    await baseline.slice(() => load(baseline.timed(insert), { concurrency, seconds: slice }));
    await singles.slice(
      () => load(singles.timed(single), { concurrency, seconds: slice }),
      async () => (singleDrain += await drain()),
    );
    await floors.slice(() => load(floors.timed(postFloor), { concurrency, seconds: slice }));
  }
  const base = baseline.result();
  if (parts.has("1")) {
    printComparison(`part 1: single activity, ${concurrency} concurrent clients, ${rounds} alternating slices of ${slice}s each`, [
      ["baseline: one bare D1 insert", base],
      ["POST /v1/activity/singleactivity", singles.result()],
      ["floor: the post's least work", floors.result()],
    ], base);
    console.log(`pipeline drain after the single-post slices: ${singleDrain.toFixed(1)}s in total (not counted above)`);
    console.log(`workerd CPU per request: baseline ${baseline.cpuMsPer()} ms, single activity ${singles.cpuMsPer()} ms including its pipeline, floor ${floors.cpuMsPer()} ms`);
    const perPost = singles.d1Per();
    console.log(`D1 per single post (recording and pipeline): ${perPost.statements.toFixed(2)} statements in ${perPost.roundTrips.toFixed(2)} round trips (baseline: ${baseline.d1Per().statements.toFixed(2)})`);
    const one = singles.result();
    const least = floors.result();
    figures.push(
      { figure: "single post req/s", service: one.perSecond.toFixed(0), baseline: base.perSecond.toFixed(0), ratio: share(one.perSecond, base.perSecond), spread: sliceSpread(singles, baseline, rate, share), goal: ">= 85%", met: one.perSecond >= 0.85 * base.perSecond },
      { figure: "single post p50 ms", service: one.p50.toFixed(1), baseline: base.p50.toFixed(1), ratio: times(one.p50, base.p50), spread: sliceSpread(singles, baseline, (s) => s.p50, times), goal: "<= 1.15x", met: one.p50 <= 1.15 * base.p50 },
      { figure: "single post p99 ms", service: one.p99.toFixed(1), baseline: base.p99.toFixed(1), ratio: times(one.p99, base.p99), spread: sliceSpread(singles, baseline, (s) => s.p99, times), goal: "<= 1.3x", met: one.p99 <= 1.3 * base.p99 },
      { figure: "single post workerd CPU ms/request (with its pipeline)", service: singles.cpuMsPer(), baseline: baseline.cpuMsPer(), ratio: times(Number(singles.cpuMsPer()), Number(baseline.cpuMsPer())), spread: sliceSpread(singles, baseline, (s) => s.cpuSeconds / s.requests, times), goal: "", met: null },
      { figure: "single post's floor req/s (its least work, no goal)", service: least.perSecond.toFixed(0), baseline: base.perSecond.toFixed(0), ratio: share(least.perSecond, base.perSecond), spread: sliceSpread(floors, baseline, rate, share), goal: "", met: null },
      { figure: "single post req/s vs its floor (no goal)", service: one.perSecond.toFixed(0), baseline: least.perSecond.toFixed(0), ratio: share(one.perSecond, least.perSecond), spread: sliceSpread(singles, floors, rate, share), goal: "", met: null },
    );
  }

  // Part 2: the batch endpoint on its own, beside the bare batched insert of the same bodies in its runtime.
  if (parts.has("2")) {
    const endpoint = await setUp(await startRuntime({ withoutConsumersOf: [EVENTS_QUEUE] }));
    try {
      await load(endpoint.insertEvents, { concurrency: batchConcurrency, seconds: 2 });
      await load(endpoint.batch, { concurrency: batchConcurrency, seconds: 2 });
      await load(endpoint.upload, { concurrency: batchConcurrency, seconds: 2 });
      const bare = new Tally();
      const ingest = new Tally();
      const uploads = new Tally();
      for (let round = 0; round < rounds; round++) {
        await bare.slice(() => load(bare.timed(endpoint.insertEvents), { concurrency: batchConcurrency, seconds: slice }));
        await ingest.slice(() => load(ingest.timed(endpoint.batch), { concurrency: batchConcurrency, seconds: slice }));
        await uploads.slice(() => load(uploads.timed(endpoint.upload), { concurrency: batchConcurrency, seconds: slice }));
      }
      const stored = printBatches(`part 2 baseline: the same bodies stored straight into events (one INSERT…SELECT json_each a call), ${rounds} slices of ${slice}s`, bare, "");
      const events = printBatches(
        `part 2: batch endpoint, ${batchSize} events per call, ${batchConcurrency} concurrent clients, alternating with the baseline; EVENTS consumer not attached`,
        ingest,
        "",
      );
      const uploaded = printBatches(
        `part 2b: Activity API v2 upload (POST /v1/activity/upload, Bearer key, named events, unprefixed params, ISO timestamps), same calls, alternating with the batch slices`,
        uploads,
        "(goal: >= 95% of the batch endpoint's events/s)",
      );
      const ingested = events / ingest.result().seconds;
      const bareRate = stored / bare.result().seconds;
      const ratio = uploaded / uploads.result().seconds / ingested;
      console.log(`upload vs batch: ${(ratio * 100).toFixed(0)}% of the batch endpoint's events/s; workerd CPU per 1,000 events recorded: upload ${uploads.cpuMsPer(uploaded / 1000)} ms, batch ${ingest.cpuMsPer(events / 1000)} ms, bare insert ${bare.cpuMsPer(stored / 1000)} ms`);
      figures.push(
        { figure: "batch endpoint events/s (vs bare batched insert)", service: ingested.toFixed(0), baseline: bareRate.toFixed(0), ratio: share(ingested, bareRate), spread: sliceSpread(ingest, bare, rate, share), goal: "", met: null },
        { figure: "upload events/s (vs batch endpoint)", service: (uploaded / uploads.result().seconds).toFixed(0), baseline: ingested.toFixed(0), ratio: share(ratio, 1), spread: sliceSpread(uploads, ingest, rate, share), goal: ">= 95%", met: ratio >= 0.95 },
      );
    } finally {
      await endpoint.runtime.stop();
    }
  }

  // Part 3: batches end to end, pipeline attached and sharing the thread, each slice drained
  // before the bare batched insert of the same bodies takes its turn.
  if (parts.has("3")) {
    const bare = new Tally(deployed.runtime.origin);
    const batches = new Tally(deployed.runtime.origin);
    await load(deployed.insertEvents, { concurrency: batchConcurrency, seconds: 2 });
    let batchDrain = 0;
    for (let round = 0; round < rounds; round++) {
      await bare.slice(() => load(bare.timed(deployed.insertEvents), { concurrency: batchConcurrency, seconds: slice }));
      await batches.slice(
        () => load(batches.timed(batch), { concurrency: batchConcurrency, seconds: slice }),
        async () => (batchDrain += await drain()),
      );
    }
    const stored = printBatches(`part 3 baseline: the same bodies stored straight into events, alternating with the pipeline's slices`, bare, "");
    const events = printBatches(
      `part 3: batch endpoint with the EVENTS consumer attached (same ${batchSize}-event calls), ${rounds} slices of ${slice}s, each drained`,
      batches,
      "(the pipeline shares the thread)",
    );
    const pipelineSeconds = batches.slices.reduce((sum, one) => sum + one.wallSeconds, 0);
    const endToEnd = events / pipelineSeconds;
    const bareRate = stored / bare.result().seconds;
    console.log(
      `pipeline: ${events} events made rows and taken through the steps in ${pipelineSeconds.toFixed(1)}s, ${batchDrain.toFixed(1)}s of it draining after the slices ` +
        `(${endToEnd.toFixed(0)} events/s end to end; the bare insert stored ${bareRate.toFixed(0)} rows/s)`,
    );
    const cpuPerThousand = (batches.cpuSeconds * 1_000_000) / events;
    const bareCpuPerThousand = (bare.cpuSeconds * 1_000_000) / stored;
    console.log(`workerd CPU per 1,000 events: ${cpuPerThousand.toFixed(1)} ms recording them and running the pipeline, ${bareCpuPerThousand.toFixed(1)} ms storing them bare`);
    const d1 = batches.d1Per(events / 1000);
    console.log(`D1 per 1,000 events (recording and pipeline): ${d1.statements.toFixed(1)} statements in ${d1.roundTrips.toFixed(1)} round trips`);
    const perEvent = (one: SliceFigures) => one.wallSeconds / (one.requests * batchSize);
    const bareCpu = (one: SliceFigures) => one.cpuSeconds / (one.requests * batchSize);
    figures.push(
      {
        figure: "pipeline end to end, time per event (vs bare batched insert)",
        service: `${endToEnd.toFixed(0)} ev/s`,
        baseline: `${bareRate.toFixed(0)} rows/s`,
        ratio: times(bareRate, endToEnd),
        spread: sliceSpread(batches, bare, perEvent, times),
        goal: "<= 1.5x",
        met: bareRate <= 1.5 * endToEnd,
      },
      {
        figure: "pipeline workerd CPU ms per 1,000 events (vs bare batched insert)",
        service: cpuPerThousand.toFixed(1),
        baseline: bareCpuPerThousand.toFixed(1),
        ratio: times(cpuPerThousand, bareCpuPerThousand),
        spread: sliceSpread(batches, bare, bareCpu, times),
        goal: "<= 1.5x",
        met: cpuPerThousand <= 1.5 * bareCpuPerThousand,
      },
      { figure: "pipeline D1 statements (round trips) per 1,000 events", service: `${d1.statements.toFixed(1)} (${d1.roundTrips.toFixed(1)})`, baseline: "", ratio: "", goal: "", met: null },
    );
  }
  report("activity", figures);
} finally {
  await deployed.runtime.stop();
}
