// npm run bench:profile: where the service's CPU goes. Starts the benchmark build with
// workerd's inspector open (PARTITIONS=4: the bench panel spread over four shards, as bench:bigpanel lays it), loads one path (PROFILE=api: contact add; PROFILE=insert: its baseline, one bare D1 insert; PROFILE=floor: its floor on shard 0; PROFILE=single: single activity posts; PROFILE=forms: signup form submissions as bench:forms sends them; PROFILE=pipeline: event
// batches through the batch endpoint and the EVENTS consumer; PROFILE=upload: the same events through Activity API v2's
// upload endpoint (named, unprefixed, ISO timestamps, Bearer key), the consumer detached; PROFILE=import: one bulk upload of
// ROWS (200,000) rows of bench:import's file, from the call to `completed`), records a V8 CPU profile of the
// service's isolate meanwhile, and prints the functions with the most self time and with the
// most total time (themselves and what they call); HEAP=1 adds the bytes each function allocated per unit (V8's sampling heap profiler). SECONDS (default 10) of load; the raw profile is written
// to OUT (default: the system's tmp) for Chrome DevTools.
import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { childCpuSeconds } from "./cpu.ts";
import { asUploadEvent, BENCH_ACTIVITY, benchEvent } from "./activity-events.ts";
import { adminCall, BENCH_SHARD, createBenchPanel, load, startRuntime, type LoadResult } from "./lib.ts";
import { CSV_HEADER, csvRow } from "./worker/import-rows.ts";
import { createBenchForm, startSiteverify } from "./signup-form.ts";

const kind = process.env.PROFILE ?? "api";
const seconds = Number(process.env.SECONDS ?? 10);
const inspectorPort = Number(process.env.INSPECTOR_PORT ?? 9300 + Math.floor(Math.random() * 600));
const heap = process.env.HEAP === "1";
// One file per run (by process id), so runs side by side do not overwrite each other's profile.
const out = process.env.OUT ?? join(tmpdir(), `apiv2-${kind}-${process.pid}.cpuprofile`);

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

/** A minimal Chrome DevTools protocol client over the inspector's WebSocket. */
async function connect(url: string) {
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", reject, { once: true });
  });
  let nextId = 1;
  const pending = new Map<number, (value: any) => void>();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data));
    if (message.id !== undefined) pending.get(message.id)?.(message.result ?? message.error);
  });
  return {
    send(method: string, params: Record<string, unknown> = {}): Promise<any> {
      const id = nextId++;
      socket.send(JSON.stringify({ id, method, params }));
      return new Promise((resolve) => pending.set(id, resolve));
    },
    close: () => socket.close(),
  };
}

/** A node of V8's sampling heap profile: bytes allocated by the function itself (`selfSize`) at this stack. */
interface HeapNode {
  callFrame: ProfileNode["callFrame"];
  selfSize: number;
  children: HeapNode[];
}

/** HEAP=1: the functions that allocated the most bytes, per unit of work. */
function printAllocations(head: HeapNode, units: number, unit: string): void {
  const bySite = new Map<string, number>();
  let total = 0;
  const visit = (node: HeapNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const name = `${functionName || "(anonymous)"} ${url.split("/").pop()}:${lineNumber + 1}`;
    bySite.set(name, (bySite.get(name) ?? 0) + node.selfSize);
    total += node.selfSize;
    node.children.forEach(visit);
  };
  visit(head);
  console.log(`\nallocated: ${(total / units / 1024).toFixed(1)} KiB per ${unit} (sampled); by function:`);
  for (const [name, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 40))) {
    console.log(`${((bytes / total) * 100).toFixed(1).padStart(5)}%  ${(bytes / units).toFixed(0).padStart(7)} B  ${name}`);
  }
}

// PROFILE=upload profiles the endpoint alone, as bench:activity's part 2b runs it: the EVENTS consumer detached.
const siteverify = kind === "forms" ? await startSiteverify() : undefined;
/** PARTITIONS=4: the panel's buckets split evenly over SHARD_0…SHARD_3 (bench:bigpanel's layout) before the load. */
const partitions = Number(process.env.PARTITIONS ?? 1);
const runtime = await startRuntime({
  inspectorPort,
  ...(partitions > 1 ? { shards: partitions } : {}),
  withoutConsumersOf: kind === "upload" ? ["apiv2-events-default"] : [],
  // LOG_LINES=false as bench:api takes it: the inspector receives every console call, so the line's share here overstates it.
  vars: { ...(siteverify ? { TURNSTILE_SITEVERIFY_URL: siteverify.url } : {}), ...(process.env.LOG_LINES ? { LOG_LINES: process.env.LOG_LINES } : {}) },
});
try {
  const { origin } = runtime;
  const panel = await createBenchPanel(origin);
  if (partitions > 1) {
    const shards = Array.from({ length: partitions }, (_, i) => i).join(",");
    const mapped = await fetch(`${origin}/__bench/partition-map?panel=${panel.id}&shards=${shards}`, { method: "POST" });
    if (!mapped.ok) throw new Error(`partition map: ${mapped.status} ${await mapped.text()}`);
  }
  let send: (i: number) => Promise<Response>;
  let concurrency = 16;
  let drain = async () => {};
  /** The profiled work when it is one job rather than a load of requests (PROFILE=import), counted in `unit`s. */
  let job: { warmUp(): Promise<unknown>; run(): Promise<LoadResult> } | undefined;
  let unit = "request";
  if (kind === "import") {
    const rows = Number(process.env.ROWS ?? 200_000);
    const file = (count: number) => Buffer.from([CSV_HEADER, ...Array.from({ length: count }, (_, i) => csvRow(i))].join(""));
    const files: Record<string, Buffer> = { "/warm.csv": file(2_000), "/contacts.csv": file(rows) };
    const server = createServer((request, response) => {
      const body = files[request.url ?? ""];
      if (!body) return void response.writeHead(404).end();
      response.writeHead(200, { "content-type": "text/csv", "content-length": body.length }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    server.unref();
    const address = server.address();
    const fileUrl = (path: string) => `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}${path}`;
    const importFile = async (path: string) => {
      const started = performance.now();
      const call = await fetch(`${origin}/apiv2?type=contact&activity=bulkupload&apikey=${panel.apiKey}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ path: fileUrl(path) }),
      });
      const { jobid } = (await call.json()) as { jobid?: string };
      if (!jobid) throw new Error("bulkupload refused the call");
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        const { job } = (await (await fetch(`${origin}/apiv2?type=contact&activity=bulkstatus&apikey=${panel.apiKey}&data=${jobid}`)).json()) as { job: { status: string } };
        if (job.status === "completed" || job.status === "failed") return (performance.now() - started) / 1000;
      }
    };
    unit = "row";
    job = {
      warmUp: () => importFile("/warm.csv"),
      run: async () => {
        const seconds = await importFile("/contacts.csv");
        return { requests: rows, failures: 0, seconds, perSecond: rows / seconds, p50: 0, p99: 0 };
      },
    };
  } else if (kind === "api") {
    send = (i) =>
      fetch(`${origin}/apiv2?type=contact&activity=add&apikey=${panel.apiKey}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ data: JSON.stringify({ EMAIL: `user${i}@example.com`, NAME: `User ${i}`, AGE: 20 + (i % 50), CITY: "Pune" }) }),
      });
  } else if (kind === "insert") {
    // bench:api's baseline, one bare D1 insert: the same profile of the floor, to read the contact add's against.
    send = (i) =>
      fetch(`${origin}/__bench/insert?key=k${i}&attrs=${encodeURIComponent(JSON.stringify({ EMAIL: `user${i}@example.com`, NAME: `User ${i}`, AGE: 20 + (i % 50), CITY: "Pune" }))}`);
  } else if (kind === "floor") {
    // The contact add's floor (bench/worker/baseline-add-floor.ts, on shard 0): what of the add's profile is the service's own work.
    send = (i) =>
      fetch(`${origin}/__bench/add-floor?apikey=${panel.apiKey}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ data: JSON.stringify({ EMAIL: `user${i}@example.com`, NAME: `User ${i}`, AGE: 20 + (i % 50), CITY: "Pune" }) }),
      });
  } else if (kind === "forms") {
    send = await createBenchForm(origin, panel, true);
  } else if (kind === "single") {
    const activity = await adminCall(origin, "POST", `/panels/${panel.id}/activities`, { name: "add_to_cart", params: { name: "string", prid: "integer", price: "float", prqt: "integer" } });
    send = (i) =>
      fetch(`${origin}/v1/activity/singleactivity/${panel.clientId}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ activityid: activity.activityid, identity: `user${i % 5000}@example.com`, activity_params: { "s^name": "Kettle", "i^prid": 1000 + (i % 100), "f^price": 29.5, "i^prqt": 1 } }),
      });
  } else {
    const activity = await adminCall(origin, "POST", `/panels/${panel.id}/activities`, BENCH_ACTIVITY);
    const event = (i: number) => benchEvent(activity.activityid, i);
    // PROFILE=upload: the same events as Activity API v2 sends them (bench:activity's part 2b),
    // the key as a Bearer header.
    const named = (i: number) => asUploadEvent(event(i));
    concurrency = 2;
    unit = "1,000-event call";
    send =
      kind === "upload"
        ? (i) =>
            fetch(`${origin}/v1/activity/upload`, {
              method: "POST",
              headers: { "content-type": "application/json", authorization: `Bearer ${panel.apiKey}` },
              body: JSON.stringify(Array.from({ length: 1000 }, (_, j) => named(i * 1000 + j))),
            })
        : (i) =>
            fetch(`${origin}/v1/activity/batch/${panel.clientId}`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(Array.from({ length: 1000 }, (_, j) => event(i * 1000 + j))),
            });
    const db = await runtime.miniflare.getD1Database(BENCH_SHARD);
    if (kind !== "upload") drain = async () => {
      while ((await db.prepare("SELECT COUNT(*) AS n FROM event_batches WHERE state = 'pending'").first<{ n: number }>())!.n > 0) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    };
  }
  const offset = 1_000_000;
  const work = job ?? { warmUp: () => load(send, { concurrency, seconds: 2 }), run: () => load((i) => send(offset + i), { concurrency, seconds }) };
  // Warm up, so compilation stays out of the profile.
  await work.warmUp();
  await drain();

  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as Array<{ id: string; webSocketDebuggerUrl: string }>;
  const target = targets.find((t) => t.id === "core:user:apiv2");
  if (!target) throw new Error("the service's isolate is not among the inspector's targets");
  const inspector = await connect(target.webSocketDebuggerUrl);
  await inspector.send("Profiler.enable");
  await inspector.send("Profiler.setSamplingInterval", { interval: 200 });
  await inspector.send("Profiler.start");
  // HEAP=1: V8's sampling heap profiler beside it, counting what was allocated (collected or not).
  if (heap) {
    await inspector.send("HeapProfiler.enable");
    await inspector.send("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  }
  const cpu = childCpuSeconds();
  const result = await work.run();
  await drain();
  const cpuSeconds = childCpuSeconds() - cpu;
  const allocations = heap ? ((await inspector.send("HeapProfiler.stopSampling")) as { profile: { head: HeapNode } }).profile : undefined;
  const { profile } = (await inspector.send("Profiler.stop")) as { profile: { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[] } };
  inspector.close();
  writeFileSync(out, JSON.stringify(profile));

  const total = profile.samples.length;
  const nameOf = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    return `${functionName || "(anonymous)"} ${url.split("/").pop()}:${lineNumber + 1}`;
  };
  const byFunction = new Map<string, number>();
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits) byFunction.set(nameOf(node), (byFunction.get(nameOf(node)) ?? 0) + hits);
  }
  // Total time: every sample counted once for each distinct function on its stack.
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const inclusive = new Map<string, number>();
  const walk = (id: number, onStack: Set<string>): number => {
    const node = nodes.get(id)!;
    const name = nameOf(node);
    const fresh = !onStack.has(name);
    if (fresh) onStack.add(name);
    let hits = node.hitCount ?? 0;
    for (const child of node.children ?? []) hits += walk(child, onStack);
    if (fresh) {
      onStack.delete(name);
      inclusive.set(name, (inclusive.get(name) ?? 0) + hits);
    }
    return hits;
  };
  walk(profile.nodes[0]!.id, new Set());
  const top = (map: Map<string, number>, n: number) =>
    [...map].sort((a, b) => b[1] - a[1]).slice(0, n).map(([name, hits]) => `${((hits / total) * 100).toFixed(1).padStart(5)}%  ${name}`);
  console.log(`\n${kind}: ${result.requests} ${unit}s in ${result.seconds.toFixed(1)} s; ${total} samples; profile written to ${out}`);
  console.log(`workerd CPU (every isolate and D1, from /proc): ${((cpuSeconds * 1000) / result.requests).toFixed(unit === "row" ? 4 : 2)} ms per ${unit}`);
  console.log("\nself time by function:");
  console.log(top(byFunction, Number(process.env.TOP ?? 40)).join("\n"));
  console.log("\ntotal time by function:");
  console.log(top(inclusive, Number(process.env.TOP ?? 40)).join("\n"));
  if (allocations) printAllocations(allocations.head, result.requests, unit);
} finally {
  await runtime.stop();
  siteverify?.close();
}
