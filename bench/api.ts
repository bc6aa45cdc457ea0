// npm run bench:api: contact add through the envelope under concurrent load, beside a bare
// one-insert D1 route in the same runtime and run (issue: throughput >= 70% of the baseline,
// p99 <= 2x the baseline's).
import { createBenchPanel, load, printComparison, startRuntime } from "./lib.ts";

const concurrency = Number(process.env.CONCURRENCY ?? 16);
const seconds = Number(process.env.SECONDS ?? 10);

const runtime = await startRuntime();
try {
  const panel = await createBenchPanel(runtime.origin);
  const attrs = (i: number) => JSON.stringify({ EMAIL: `user${i}@example.com`, NAME: `User ${i}`, AGE: 20 + (i % 50), CITY: "Pune" });

  // Warm both paths so neither pays for first-request compilation.
  await load((i) => fetch(`${runtime.origin}/__bench/insert?key=warm${i}`), { concurrency, seconds: 2 });
  await load(
    (i) => fetch(`${runtime.origin}/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ data: attrs(1_000_000 + i) }),
    }),
    { concurrency, seconds: 2 },
  );

  const baseline = await load(
    (i) => fetch(`${runtime.origin}/__bench/insert?key=k${i}&attrs=${encodeURIComponent(attrs(i))}`),
    { concurrency, seconds },
  );
  const contactAdd = await load(
    (i) =>
      fetch(`${runtime.origin}/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ data: attrs(i) }),
      }),
    { concurrency, seconds },
  );
  printComparison(`contact add via the envelope, ${concurrency} concurrent clients, ${seconds}s each`, [
    ["baseline: one bare D1 insert", baseline],
    ["envelope contact/add", contactAdd],
  ], baseline);
} finally {
  await runtime.stop();
}
