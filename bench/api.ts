// npm run bench:api: contact add through the envelope under concurrent load, beside a bare
// one-insert D1 route in the same runtime and run (issue 48 goals: throughput >= 90% of the
// baseline, p50 <= 1.15x and p99 <= 1.3x the baseline's). Cases alternate in short slices (ROUNDS x SLICE
// seconds each) so load from other processes hits both alike; workerd CPU and D1 statements
// per call are printed beside them. LOG_LINES=false runs the service without its request log
// line (the default writes it, as deployed; its local cost is in docs/benchmarks.md).
import { createBenchPanel, load, printComparison, rate, report, share, sliceSpread, startRuntime, Tally, times } from "./lib.ts";

const concurrency = Number(process.env.CONCURRENCY ?? 16);
const rounds = Number(process.env.ROUNDS ?? 5);
const slice = Number(process.env.SLICE ?? 4);

const runtime = await startRuntime({ vars: process.env.LOG_LINES ? { LOG_LINES: process.env.LOG_LINES } : {} });
try {
  const panel = await createBenchPanel(runtime.origin);
  const attrs = (i: number) => JSON.stringify({ EMAIL: `user${i}@example.com`, NAME: `User ${i}`, AGE: 20 + (i % 50), CITY: "Pune" });
  let sequence = 0;
  const insert = () => {
    const i = sequence++;
    return fetch(`${runtime.origin}/__bench/insert?key=k${i}&attrs=${encodeURIComponent(attrs(i))}`);
  };
  const add = () =>
    fetch(`${runtime.origin}/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ data: attrs(sequence++) }),
    });

  // The floor of a contact add (bench/worker/baseline-add-floor.ts): the same request, the work it cannot do without.
  const floor = () =>
    fetch(`${runtime.origin}/__bench/add-floor?apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ data: attrs(sequence++) }),
    });

  // Warm every path so neither pays for first-request compilation.
  await load(insert, { concurrency, seconds: 2 });
  await load(add, { concurrency, seconds: 2 });
  await load(floor, { concurrency, seconds: 2 });

  const baseline = new Tally(runtime.origin);
  const adds = new Tally(runtime.origin);
  const floors = new Tally(runtime.origin);
  // Work a call left to waitUntil is counted with its slice.
  const settle = () => new Promise((resolve) => setTimeout(resolve, 200));
  for (let round = 0; round < rounds; round++) {
    await baseline.slice(() => load(baseline.timed(insert), { concurrency, seconds: slice }), settle);
    await adds.slice(() => load(adds.timed(add), { concurrency, seconds: slice }), settle);
    await floors.slice(() => load(floors.timed(floor), { concurrency, seconds: slice }), settle);
  }
  const base = baseline.result();
  const service = adds.result();
  const least = floors.result();
  printComparison(`contact add via the envelope, ${concurrency} concurrent clients, ${rounds} alternating slices of ${slice}s each`, [
    ["baseline: one bare D1 insert", base],
    ["envelope contact/add", service],
    ["floor: the add's least work", least],
  ], base);
  const d1 = adds.d1Per();
  console.log(
    `workerd CPU per request: baseline ${baseline.cpuMsPer()} ms, contact add ${adds.cpuMsPer()} ms, floor ${floors.cpuMsPer()} ms; ` +
      `D1 per contact add: ${d1.statements.toFixed(2)} statements in ${d1.roundTrips.toFixed(2)} round trips (baseline ${baseline.d1Per().statements.toFixed(2)})`,
  );
  report("api", [
    { figure: "contact add req/s", service: service.perSecond.toFixed(0), baseline: base.perSecond.toFixed(0), ratio: share(service.perSecond, base.perSecond), spread: sliceSpread(adds, baseline, rate, share), goal: ">= 90%", met: service.perSecond >= 0.9 * base.perSecond },
    { figure: "contact add p50 ms", service: service.p50.toFixed(1), baseline: base.p50.toFixed(1), ratio: times(service.p50, base.p50), spread: sliceSpread(adds, baseline, (s) => s.p50, times), goal: "<= 1.15x", met: service.p50 <= 1.15 * base.p50 },
    { figure: "contact add p99 ms", service: service.p99.toFixed(1), baseline: base.p99.toFixed(1), ratio: times(service.p99, base.p99), spread: sliceSpread(adds, baseline, (s) => s.p99, times), goal: "<= 1.3x", met: service.p99 <= 1.3 * base.p99 },
    { figure: "contact add workerd CPU ms/request", service: adds.cpuMsPer(), baseline: baseline.cpuMsPer(), ratio: times(Number(adds.cpuMsPer()), Number(baseline.cpuMsPer())), spread: sliceSpread(adds, baseline, (s) => s.cpuSeconds / s.requests, times), goal: "", met: null },
    { figure: "contact add's floor req/s (its least work, no goal)", service: least.perSecond.toFixed(0), baseline: base.perSecond.toFixed(0), ratio: share(least.perSecond, base.perSecond), spread: sliceSpread(floors, baseline, rate, share), goal: "", met: null },
    { figure: "contact add req/s vs its floor (no goal)", service: service.perSecond.toFixed(0), baseline: least.perSecond.toFixed(0), ratio: share(service.perSecond, least.perSecond), spread: sliceSpread(adds, floors, rate, share), goal: "", met: null },
    { figure: "contact add D1 statements (round trips)/call", service: `${d1.statements.toFixed(2)} (${d1.roundTrips.toFixed(2)})`, baseline: baseline.d1Per().statements.toFixed(2), ratio: "", goal: "", met: null },
  ]);
} finally {
  await runtime.stop();
}
