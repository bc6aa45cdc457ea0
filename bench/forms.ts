// npm run bench:forms: signup form submissions through the JSON endpoint `/f/{form}.json`
// (Turnstile on, its siteverify answered by a loopback stand-in; one list joined, single
// opt-in) beside contact adds through the apiv2 envelope, in the same runtime and run (issue 45
// goal: submissions/s >= 80% of contact adds/s). Cases alternate in short slices (ROUNDS x
// SLICE seconds each) so load from other processes hits both alike; the ratio of each round's
// pair of slices gives the spread, workerd CPU and D1 statements per call are printed beside.
//
// Every submission comes from an address and a client IP of its own (bench/signup-form.ts): the
// per-IP and per-address limits (30 and 5 per 10 minutes) are recorded for each, never reached.
import { createBenchForm, startSiteverify } from "./signup-form.ts";
import { createBenchPanel, load, printComparison, report, share, spreadOf, startRuntime, Tally, times, type LoadResult } from "./lib.ts";

const concurrency = Number(process.env.CONCURRENCY ?? 16);
const rounds = Number(process.env.ROUNDS ?? 5);
const slice = Number(process.env.SLICE ?? 4);
/** TURNSTILE=0 leaves Turnstile off, to see its share. */
const turnstile = process.env.TURNSTILE !== "0";

const siteverify = await startSiteverify();
const runtime = await startRuntime({ vars: { TURNSTILE_SITEVERIFY_URL: siteverify.url } });
try {
  const panel = await createBenchPanel(runtime.origin);
  const submitAs = await createBenchForm(runtime.origin, panel, turnstile);

  let sequence = 0;
  const attrs = (i: number) => JSON.stringify({ EMAIL: `user${i}@example.com`, NAME: `User ${i}`, AGE: 20 + (i % 50), CITY: "Pune" });
  const add = () =>
    fetch(`${runtime.origin}/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ data: attrs(sequence++) }),
    });
  const submit = () => submitAs(sequence++);

  // A first submission must pass end to end, or the figures would measure refusals.
  const first = await submit();
  const firstBody = await first.text();
  if (!first.ok || !firstBody.includes('"subscribed"')) throw new Error(`form submission refused: ${first.status} ${firstBody}`);

  // Warm both paths so neither pays for first-request compilation.
  await load(add, { concurrency, seconds: 2 });
  await load(submit, { concurrency, seconds: 2 });

  const adds = new Tally(runtime.origin);
  const submissions = new Tally(runtime.origin);
  // Work a call left to waitUntil is counted with its slice.
  const settle = () => new Promise((resolve) => setTimeout(resolve, 200));
  const ratios: number[] = [];
  const verifiedBefore = siteverify.verifications();
  for (let round = 0; round < rounds; round++) {
    let added: LoadResult | undefined;
    let submitted: LoadResult | undefined;
    await adds.slice(async () => (added = await load(adds.timed(add), { concurrency, seconds: slice })), settle);
    await submissions.slice(async () => (submitted = await load(submissions.timed(submit), { concurrency, seconds: slice })), settle);
    ratios.push(submitted!.perSecond / added!.perSecond);
  }
  const base = adds.result();
  const service = submissions.result();
  if (service.failures > 0) console.warn(`${service.failures} form submissions failed`);
  printComparison(`signup form submissions vs contact adds, ${concurrency} concurrent clients, ${rounds} alternating slices of ${slice}s each`, [
    ["baseline: envelope contact/add", base],
    ["form submission /f/{form}.json", service],
  ], base);
  const spread = spreadOf(ratios, share);
  console.log(`ratio per round: ${ratios.map((r) => `${(r * 100).toFixed(0)}%`).join(", ")} (spread ${spread})`);
  const d1 = submissions.d1Per();
  console.log(
    `workerd CPU per request: contact add ${adds.cpuMsPer()} ms, form submission ${submissions.cpuMsPer()} ms; ` +
      `D1 per form submission: ${d1.statements.toFixed(2)} statements in ${d1.roundTrips.toFixed(2)} round trips (contact add ${adds.d1Per().statements.toFixed(2)}); ` +
      `siteverify asked ${siteverify.verifications() - verifiedBefore} times for ${service.requests} submissions`,
  );
  report("forms", [
    { figure: "form submissions/s", service: service.perSecond.toFixed(0), baseline: base.perSecond.toFixed(0), ratio: share(service.perSecond, base.perSecond), spread, goal: ">= 80%", met: service.perSecond >= 0.8 * base.perSecond },
    { figure: "form submission workerd CPU ms/request", service: submissions.cpuMsPer(), baseline: adds.cpuMsPer(), ratio: times(Number(submissions.cpuMsPer()), Number(adds.cpuMsPer())), goal: "", met: null },
    { figure: "form submission D1 statements (round trips)/call", service: `${d1.statements.toFixed(2)} (${d1.roundTrips.toFixed(2)})`, baseline: adds.d1Per().statements.toFixed(2), ratio: "", goal: "", met: null },
  ]);
} finally {
  await runtime.stop();
  siteverify.close();
}
