// npm run bench:webhooks: EVENTS (100,000) events handed to one webhook through the admin
// `events` route (CHUNK events per call, HANDOVER_CONCURRENCY calls at a time) and delivered by
// its WebhookDispatcher to an HTTP receiver running in this process on loopback. Beside it, in
// the same runtime and run, the baseline: the same batches posted by a bare loop (one
// /__bench/webhook-post call per batch, one at a time), with no storage, batching or retry.
// Then paced runs (RATES events/s, PACED_SECONDS each) show the hand-over-to-delivery latency
// while the endpoint keeps up. Goals (issue 5): >= 50% of the baseline's events/s; paced p99
// under the batch window + 1 s.
import { createServer, type Server } from "node:http";
import { childCpuSeconds } from "./cpu.ts";
import { adminCall, createBenchPanel, report, share, startRuntime, times } from "./lib.ts";

const EVENTS = Number(process.env.EVENTS ?? 100_000);
const CHUNK = Number(process.env.CHUNK ?? 100);
const HANDOVER_CONCURRENCY = Number(process.env.HANDOVER_CONCURRENCY ?? 1);
// Paced runs: a rate that fills batches at once, and one so slow the 5 s window cuts them.
const RATES = (process.env.RATES ?? "1000,20").split(",").map(Number);
const PACED_SECONDS = Number(process.env.PACED_SECONDS ?? 10);
const DEADLINE_MS = Number(process.env.DEADLINE_SECONDS ?? 600) * 1000;
const WINDOW_MS = 5_000;

interface Receipt {
  at: number;
  numbers: number[];
}

/** The customer's endpoint: answers 200 at once and notes when each event arrived. */
function startReceiver(): Promise<{ server: Server; url: string; receipts: Receipt[]; received: () => number }> {
  const receipts: Receipt[] = [];
  let received = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const at = performance.now();
      response.writeHead(200, { "content-type": "text/plain" }).end("ok");
      const data = new URLSearchParams(Buffer.concat(chunks).toString("utf8")).get("data") ?? "{}";
      const [events = []] = Object.values(JSON.parse(data) as Record<string, Array<{ custom_params: { n: number } }>>);
      const numbers = events.map((event) => event.custom_params.n);
      receipts.push({ at, numbers });
      received += numbers.length;
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}/hook`, receipts, received: () => received });
    });
  });
}

function eventObject(n: number) {
  return {
    channel: "email",
    event: "open",
    msgid: `msg-${n}`,
    journey_name: "Cart reminder",
    custom_params: { n, Action: "reminded" },
    att_params: { EMAIL: `user${n}@example.com`, FIRSTNAME: "Jane", LASTNAME: "Doe", CITY: "Pune" },
    event_params: { foreignkey: `user${n}@example.com`, ip_addr: "203.0.113.9", useragent: "Mozilla/5.0 (X11; Linux x86_64)" },
  };
}

/** The same event as the service delivers it (2.0), for the baseline's batches. */
function deliveredObject(n: number) {
  const { event_params, ...rest } = eventObject(n);
  return {
    ...rest,
    webhook_name: "Bench hook",
    udt_params: {},
    event_params: { ...event_params, timestamp: "2026-11-22T10:15:30", ts: 261122101530, guid: crypto.randomUUID() },
  };
}

function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]! : NaN;
}

interface RunResult {
  events: number;
  delivered: number;
  /** workerd CPU per delivered event, in µs: steadier than events/s on a shared machine. */
  cpuMicros: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
}

/** Events/s from the first hand-over to the last arrival; latency per event from its hand-over to its arrival. */
function summarise(handedAt: Map<number, number>, receipts: Receipt[], start: number, total: number, cpuSeconds: number): RunResult {
  const latencies: number[] = [];
  let last = start;
  for (const receipt of receipts) {
    for (const n of receipt.numbers) {
      const handed = handedAt.get(n);
      if (handed !== undefined) latencies.push(receipt.at - handed);
    }
    last = Math.max(last, receipt.at);
  }
  latencies.sort((a, b) => a - b);
  const seconds = (last - start) / 1000;
  return { events: total, delivered: latencies.length, cpuMicros: (cpuSeconds * 1e6) / latencies.length, seconds, perSecond: latencies.length / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

async function waitFor(done: () => boolean, deadline: number): Promise<void> {
  while (!done() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

const receiver = await startReceiver();
const runtime = await startRuntime();
try {
  const panel = await createBenchPanel(runtime.origin);
  const hook = await adminCall(runtime.origin, "POST", `/panels/${panel.id}/webhooks`, { label: "Bench hook", url: receiver.url });
  const tested = await adminCall(runtime.origin, "POST", `/panels/${panel.id}/webhooks/${hook.id}/test`);
  if (tested.state !== "operational") throw new Error(`webhook test failed: ${JSON.stringify(tested)}`);
  const eventsPath = `${runtime.origin}/admin/v1/panels/${panel.id}/webhooks/${hook.id}/events`;
  const handOver = async (from: number, count: number) => {
    const response = await fetch(eventsPath, {
      method: "POST",
      headers: { authorization: "Bearer bench-admin-token", "content-type": "application/json" },
      body: JSON.stringify({ events: Array.from({ length: count }, (_, i) => eventObject(from + i)) }),
    });
    if (response.status !== 202) throw new Error(`hand-over refused: ${response.status} ${await response.text()}`);
    await response.arrayBuffer();
  };
  const postBaseline = async (from: number, count: number) => {
    const response = await fetch(`${runtime.origin}/__bench/webhook-post`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: receiver.url, key: "Bench", events: Array.from({ length: count }, (_, i) => deliveredObject(from + i)) }),
    });
    if (!response.ok) throw new Error(`baseline post failed: ${response.status}`);
    await response.arrayBuffer();
  };

  // Warm both paths (compilation, connections); numbers below 0 are not counted.
  for (let i = 0; i < 5; i++) await postBaseline(-1_000_000 - i * CHUNK, CHUNK);
  await handOver(-2_000_000, CHUNK);
  await waitFor(() => receiver.received() >= 6 * CHUNK, performance.now() + 30_000);
  receiver.receipts.length = 0;

  // Baseline: a bare loop posting the same batches, one after the other.
  const baselineHanded = new Map<number, number>();
  const baselineCpu = childCpuSeconds();
  const baselineStart = performance.now();
  for (let from = 0; from < EVENTS; from += CHUNK) {
    const now = performance.now();
    for (let n = from; n < Math.min(EVENTS, from + CHUNK); n++) baselineHanded.set(n, now);
    await postBaseline(from, Math.min(CHUNK, EVENTS - from));
  }
  const baseline = summarise(baselineHanded, receiver.receipts.splice(0), baselineStart, EVENTS, childCpuSeconds() - baselineCpu);

  // The service: hand-over through the admin route; delivery by the webhook's Durable Object.
  const offset = 10_000_000;
  const handed = new Map<number, number>();
  const serviceCpu = childCpuSeconds();
  const serviceStart = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: HANDOVER_CONCURRENCY }, async () => {
      while (next < EVENTS) {
        const from = next;
        next += CHUNK;
        const count = Math.min(CHUNK, EVENTS - from);
        const now = performance.now();
        for (let n = from; n < from + count; n++) handed.set(offset + n, now);
        await handOver(offset + from, count);
      }
    }),
  );
  const handOverSeconds = (performance.now() - serviceStart) / 1000;
  const expected = () => receiver.receipts.reduce((sum, r) => sum + r.numbers.filter((n) => n >= offset).length, 0);
  await waitFor(() => expected() >= EVENTS, performance.now() + DEADLINE_MS);
  const service = summarise(handed, receiver.receipts.splice(0), serviceStart, EVENTS, childCpuSeconds() - serviceCpu);

  // Paced: RATE events/s in small hand-overs, so the endpoint keeps up; latency is the point.
  const pacedRun = async (rate: number, pacedOffset: number): Promise<RunResult> => {
    const pacedHanded = new Map<number, number>();
    const pacedCpu = childCpuSeconds();
    const tick = Math.max(50, Math.round(1000 / rate));
    const perTick = Math.max(1, Math.round((rate * tick) / 1000));
    const pacedTotal = perTick * Math.floor((PACED_SECONDS * 1000) / tick);
    const pacedStart = performance.now();
    const inFlight: Promise<void>[] = [];
    for (let sent = 0, i = 0; sent < pacedTotal; sent += perTick, i++) {
      const wait = pacedStart + i * tick - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const now = performance.now();
      for (let n = sent; n < sent + perTick; n++) pacedHanded.set(pacedOffset + n, now);
      inFlight.push(handOver(pacedOffset + sent, perTick));
    }
    await Promise.all(inFlight);
    const arrived = () => receiver.receipts.reduce((sum, r) => sum + r.numbers.filter((n) => n >= pacedOffset).length, 0);
    await waitFor(() => arrived() >= pacedTotal, performance.now() + 60_000);
    return summarise(pacedHanded, receiver.receipts.splice(0), pacedStart, pacedTotal, childCpuSeconds() - pacedCpu);
  };
  const paced: Array<[number, RunResult]> = [];
  for (const [i, rate] of RATES.entries()) paced.push([rate, await pacedRun(rate, 20_000_000 + i * 1_000_000)]);

  const webhook = await adminCall(runtime.origin, "GET", `/panels/${panel.id}/webhooks/${hook.id}`);
  const row = (name: string, r: RunResult, vs: string) =>
    console.log(
      name.padEnd(46),
      `${r.delivered}/${r.events}`.padStart(15),
      r.perSecond.toFixed(0).padStart(9),
      r.p50.toFixed(0).padStart(9),
      r.p99.toFixed(0).padStart(9),
      r.cpuMicros.toFixed(0).padStart(13),
      vs.padStart(18),
    );
  console.log(`\nwebhook delivery: ${EVENTS} events, ${CHUNK} per hand-over, receiver in this process on loopback`);
  console.log("case".padEnd(46), "delivered".padStart(15), "events/s".padStart(9), "p50 ms".padStart(9), "p99 ms".padStart(9), "CPU µs/event".padStart(13), "vs baseline".padStart(18));
  row("baseline: bare loop posting the same batches", baseline, "100%");
  row(`service: hand-over x${HANDOVER_CONCURRENCY} -> Durable Object -> POST`, service, `${((service.perSecond / baseline.perSecond) * 100).toFixed(0)}% (goal 50%)`);
  for (const [rate, result] of paced) row(`service paced at ${rate} events/s for ${PACED_SECONDS}s`, result, `p99 goal <${WINDOW_MS + 1000}`);
  report("webhooks", [
    { figure: `delivery of ${EVENTS} events, events/s`, service: service.perSecond.toFixed(0), baseline: baseline.perSecond.toFixed(0), ratio: share(service.perSecond, baseline.perSecond), goal: ">= 50%", met: service.perSecond >= 0.5 * baseline.perSecond && service.delivered === EVENTS },
    { figure: "delivery workerd CPU µs/event", service: service.cpuMicros.toFixed(0), baseline: baseline.cpuMicros.toFixed(0), ratio: times(service.cpuMicros, baseline.cpuMicros), goal: "", met: null },
    ...paced.map(([rate, result]) => ({
      figure: `paced ${rate} events/s, hand-over to delivery p99 ms`,
      service: result.p99.toFixed(0),
      baseline: "",
      ratio: "",
      goal: `< ${WINDOW_MS + 1000}`,
      met: result.p99 < WINDOW_MS + 1000 && result.delivered === result.events,
    })),
  ]);
  console.log(`hand-over of ${EVENTS} events took ${handOverSeconds.toFixed(1)} s (${(EVENTS / handOverSeconds).toFixed(0)} events/s accepted); backlog after: ${webhook.backlog}`);
} finally {
  await runtime.stop();
  receiver.server.close();
}
