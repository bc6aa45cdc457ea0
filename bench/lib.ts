// Shared pieces of the benchmarks: the benchmark build in a local workerd with every binding
// of wrangler.toml, admin calls, and a closed-loop load generator with latency percentiles.
//
// The runtime is Miniflare driven directly, not `wrangler dev`: wrangler's dev proxy costs more
// per request than the Worker itself here, which would hide what the service does.
import { build } from "esbuild";
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { convertV4MiniflareOptions, Log, LogLevel, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions, unstable_splitSqlQuery } from "wrangler";
import { idFloorStatements, shardIndexOf } from "../src/store/id-ranges.ts";
import { childCpuSeconds } from "./cpu.ts";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const ADMIN_TOKEN = "bench-admin-token";

export interface BenchRuntime {
  origin: string;
  miniflare: Miniflare;
  stop(): Promise<void>;
}

async function applyMigrations(db: D1DatabaseLike, dir: string): Promise<void> {
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".sql")).sort()) {
    const statements = unstable_splitSqlQuery(readFileSync(join(dir, file), "utf8"));
    await db.batch(statements.map((sql) => db.prepare(sql)));
  }
}

interface D1DatabaseLike {
  prepare(sql: string): unknown;
  batch(statements: unknown[]): Promise<unknown>;
}

export interface RuntimeOptions {
  port?: number;
  vars?: Record<string, string>;
  /**
   * Queues whose consumer is left out, e.g. to measure an endpoint without its queue consumer
   * sharing workerd's one thread (in production consumers run in invocations of their own).
   */
  withoutConsumersOf?: string[];
  /**
   * Keeps D1 and R2 in this directory, so a later runtime started on it sees the same data: a
   * restart after a crash. Queue messages do not survive it, as with `npm start`. Migrations
   * are applied only when the directory is new.
   */
  stateDir?: string;
  /** Opens workerd's inspector (Chrome DevTools protocol) on this port, for bench/profile.ts. */
  inspectorPort?: number;
  /**
   * Binds at least this many shards, SHARD_0 … SHARD_{shards-1}: local D1 databases past the
   * ones wrangler.toml binds, migrated and given their id floors as those are (the service finds
   * shards by binding name, so nothing else declares them). bench:bigpanel's PARTITIONS.
   */
  shards?: number;
}

/** wrangler.toml's D1 bindings (Miniflare's form, binding → { id }) with SHARD_n added up to `count` shards, each its own local database. */
function withShards(databases: Record<string, unknown>, count: number): Record<string, unknown> {
  const all = { ...databases };
  for (let n = 0; n < count; n++) {
    // A local id of its own (the persisted database's name), apart from wrangler.toml's preview ids.
    all[`SHARD_${n}`] ??= { id: `00000000-0000-4000-8000-${String(900_000_000_000 + n).padStart(12, "0")}` };
  }
  return all;
}

/** Starts the benchmark build (bench/worker) on fresh local state with the migrations applied. */
export async function startRuntime({ port = 0, vars = {}, withoutConsumersOf = [], stateDir, inspectorPort, shards = 0 }: RuntimeOptions = {}): Promise<BenchRuntime> {
  const workDir = mkdtempSync(join(tmpdir(), "apiv2-bench-"));
  const persistRoot = stateDir ?? join(workDir, "state");
  const fresh = !existsSync(persistRoot);
  await build({
    entryPoints: [join(root, "bench", "worker", "index.ts")],
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["module", "main"],
    external: ["cloudflare:*", "node:*"],
    outfile: join(workDir, "worker.js"),
    logLevel: "error",
  });
  const { workerOptions } = unstable_getMiniflareWorkerOptions(join(root, "wrangler.toml"), "");
  // rootPath and modulesRules describe wrangler's own bundling, already done above. The panel's
  // static assets are left out: benchmarks call the Worker (and /__bench/ baselines) directly.
  const { rootPath: _rootPath, modulesRules: _modulesRules, assets: _assets, ...worker } = workerOptions as Record<string, any>;
  worker.queueConsumers = Object.fromEntries(
    Object.entries((worker.queueConsumers ?? {}) as Record<string, unknown>).filter(([queue]) => !withoutConsumersOf.includes(queue)),
  );
  worker.d1Databases = withShards((worker.d1Databases ?? {}) as Record<string, unknown>, shards);
  const miniflare = new Miniflare(
    convertV4MiniflareOptions({
      workers: [
        {
          ...worker,
          name: "apiv2",
          modules: true,
          scriptPath: join(workDir, "worker.js"),
          modulesRoot: workDir,
          bindings: {
            ...worker.bindings,
            ADMIN_TOKEN,
            // 32 bytes, as SECRETS_KEY must be (encrypted settings are read with it).
            SECRETS_KEY: "YmVuY2gtc2VjcmV0cy1rZXktLTMyLWJ5dGVzLWxvbmc=",
            ALLOW_PRIVATE_FETCH: "true",
            ...vars,
          },
        },
      ],
      host: "127.0.0.1",
      port,
      // BENCH_LOG=1 shows workerd's own output (uncaught errors, console.error of the Worker).
      ...(process.env.BENCH_LOG ? { log: new Log(LogLevel.INFO) } : {}),
      ...(inspectorPort ? { inspectorPort } : {}),
      resourcePersistencePath: persistRoot,
    } as never),
  );
  const url = await miniflare.ready;
  if (fresh) {
    // The control database, then every shard bound (wrangler.toml's and `shards`' extra ones), each with its id floors (decision 0030).
    await applyMigrations((await miniflare.getD1Database("DB")) as unknown as D1DatabaseLike, join(root, "migrations"));
    for (const name of Object.keys(worker.d1Databases as Record<string, unknown>).filter((b) => shardIndexOf(b) !== null)) {
      const db = (await miniflare.getD1Database(name)) as unknown as D1DatabaseLike;
      await applyMigrations(db, join(root, "migrations", "shard"));
      const floors = idFloorStatements(shardIndexOf(name)!);
      if (floors.length) await db.batch(floors.map((sql) => db.prepare(sql)));
    }
  }
  return {
    origin: url.origin,
    miniflare,
    async stop() {
      await miniflare.dispose();
      rmSync(workDir, { recursive: true, force: true });
    },
  };
}

export async function adminCall(origin: string, method: string, path: string, body?: unknown): Promise<any> {
  const response = await fetch(`${origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

/** The shard benchmark panels are placed on; scripts and /__bench/ baselines read and write its database. */
export const BENCH_SHARD = "SHARD_0";

export async function createBenchPanel(origin: string): Promise<{ id: string; apiKey: string; clientId: string }> {
  const panel = await adminCall(origin, "POST", "/panels", { name: "Bench", shard: 0 });
  await adminCall(origin, "PATCH", `/panels/${panel.id}`, { api_mode: true });
  const user = await adminCall(origin, "POST", `/panels/${panel.id}/users`, { email: "bench@example.com" });
  return { id: panel.id, apiKey: user.api_key, clientId: panel.client_id };
}

export interface LoadResult {
  requests: number;
  failures: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Closed-loop load: `concurrency` workers each send requests back to back for `seconds`. */
export async function load(
  send: (i: number) => Promise<Response>,
  { concurrency, seconds }: { concurrency: number; seconds: number },
): Promise<LoadResult> {
  const latencies: number[] = [];
  let failures = 0;
  let next = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) {
        const i = next++;
        const t0 = performance.now();
        const response = await send(i);
        await response.arrayBuffer();
        latencies.push(performance.now() - t0);
        if (!response.ok) failures++;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    requests: latencies.length,
    failures,
    seconds: elapsed,
    perSecond: latencies.length / elapsed,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/** The D1 statements and round trips the benchmark build counted (bench/worker/d1-count.ts); `reset` starts them again. */
export async function d1Counts(origin: string, reset = false): Promise<{ statements: number; roundTrips: number }> {
  const response = await fetch(`${origin}/__bench/d1${reset ? "?reset=1" : ""}`);
  return (await response.json()) as { statements: number; roundTrips: number };
}

/**
 * Sums slices of one case into one result; percentiles from every request's latency. Each
 * slice also counts workerd's CPU and, given the runtime's origin, D1 statements and round trips.
 */
export class Tally {
  private readonly latencies: number[] = [];
  /** Each slice on its own, in the order run: a benchmark pairs them with its baseline's to show the spread. */
  readonly slices: SliceFigures[] = [];
  cpuSeconds = 0;
  d1Statements = 0;
  d1RoundTrips = 0;
  requests = 0;
  private failures = 0;
  private seconds = 0;

  private readonly origin: string | undefined;

  constructor(origin?: string) {
    this.origin = origin;
  }

  timed(send: (i: number) => Promise<Response>) {
    return async (i: number) => {
      const t0 = performance.now();
      const response = await send(i);
      await response.clone().arrayBuffer();
      this.latencies.push(performance.now() - t0);
      return response;
    };
  }

  /** Runs one slice (and what must follow it, e.g. draining the pipeline), counting workerd CPU and D1. */
  async slice(run: () => Promise<LoadResult>, after: () => Promise<unknown> = async () => {}) {
    if (this.origin) await d1Counts(this.origin, true);
    const cpu = childCpuSeconds();
    const firstLatency = this.latencies.length;
    const started = performance.now();
    const result = await run();
    this.add(result);
    await after();
    const cpuSeconds = childCpuSeconds() - cpu;
    this.cpuSeconds += cpuSeconds;
    const latencies = this.latencies.slice(firstLatency).sort((a, b) => a - b);
    this.slices.push({
      requests: result.requests,
      seconds: result.seconds,
      wallSeconds: (performance.now() - started) / 1000,
      cpuSeconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
    });
    if (this.origin) {
      const d1 = await d1Counts(this.origin, true);
      this.d1Statements += d1.statements;
      this.d1RoundTrips += d1.roundTrips;
    }
  }

  cpuMsPer(count = this.requests): string {
    return ((this.cpuSeconds * 1000) / count).toFixed(2);
  }

  /** D1 statements and round trips per request (or per `count`). */
  d1Per(count = this.requests): { statements: number; roundTrips: number } {
    return { statements: this.d1Statements / count, roundTrips: this.d1RoundTrips / count };
  }

  add(result: LoadResult) {
    this.requests += result.requests;
    this.failures += result.failures;
    this.seconds += result.seconds;
  }

  result(): LoadResult {
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
    return { requests: this.requests, failures: this.failures, seconds: this.seconds, perSecond: this.requests / this.seconds, p50: at(50), p99: at(99) };
  }
}

export function printComparison(title: string, rows: Array<[string, LoadResult]>, baseline: LoadResult): void {
  console.log(`\n${title}`);
  console.log("case".padEnd(34), "req/s".padStart(9), "p50 ms".padStart(8), "p99 ms".padStart(8), "failed".padStart(7), "vs baseline req/s".padStart(19), "p99 ratio".padStart(10));
  for (const [name, r] of rows) {
    console.log(
      name.padEnd(34),
      r.perSecond.toFixed(0).padStart(9),
      r.p50.toFixed(1).padStart(8),
      r.p99.toFixed(1).padStart(8),
      String(r.failures).padStart(7),
      `${((r.perSecond / baseline.perSecond) * 100).toFixed(0)}%`.padStart(19),
      `${(r.p99 / baseline.p99).toFixed(2)}x`.padStart(10),
    );
  }
}

/** What one slice of a Tally measured: `wallSeconds` includes what followed the load (a drain). */
export interface SliceFigures {
  requests: number;
  seconds: number;
  wallSeconds: number;
  cpuSeconds: number;
  p50: number;
  p99: number;
}

/**
 * The lowest and highest ratio of one figure over the slices a case and its baseline ran in
 * turn (slice i of each), as `ratio` prints it ("78–93%", "1.10–1.42x"): the noise of the run
 * beside the ratio of its totals.
 */
export function sliceSpread(
  service: Tally,
  baseline: Tally,
  figure: (slice: SliceFigures) => number,
  ratio: (service: number, baseline: number) => string,
): string {
  const pairs = Math.min(service.slices.length, baseline.slices.length);
  return spreadOf(
    Array.from({ length: pairs }, (_, i) => figure(service.slices[i]!) / figure(baseline.slices[i]!)),
    ratio,
  );
}

/** The lowest and highest of some ratios, written as `ratio` writes one ("78–93%"); empty for fewer than two. */
export function spreadOf(ratios: readonly number[], ratio: (service: number, baseline: number) => string): string {
  const values = ratios.filter(Number.isFinite);
  if (values.length < 2) return "";
  const [lowText, highText] = [ratio(Math.min(...values), 1), ratio(Math.max(...values), 1)];
  const unit = lowText.replace(/[\d.]+/, "");
  return `${lowText.slice(0, lowText.length - unit.length)}–${highText}`;
}

/** Requests per second of a slice. */
export const rate = (slice: SliceFigures) => slice.requests / slice.seconds;

/** One line of the table `npm run bench` prints: a figure of the service beside its baseline's. */
export interface BenchFigure {
  figure: string;
  service: string;
  baseline: string;
  ratio: string;
  /** The lowest and highest ratio over the run's alternating slices (sliceSpread); empty when the figure has none. */
  spread?: string;
  goal: string;
  /** Whether the goal was met; null when the figure has no goal. */
  met: boolean | null;
}

/** The median of some figures (rounds' rates or ratios), in any order. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** service/baseline as a share ("87%"), for rates where more is better. */
export function share(service: number, baseline: number): string {
  return `${((service / baseline) * 100).toFixed(0)}%`;
}

/**
 * The pace of works done one after the other on one thread, each at its own rate (per second): a
 * baseline that is two bare works in turn (a contact add then a siteverify call; the download of
 * a file then its upserts).
 */
export function inTurn(...perSecond: number[]): number {
  return 1 / perSecond.reduce((sum, rate) => sum + 1 / rate, 0);
}

/** service/baseline as a factor ("1.42x"), for latencies and costs. */
export function times(service: number, baseline: number): string {
  return `${(service / baseline).toFixed(2)}x`;
}

/**
 * Hands a benchmark's figures to `npm run bench` (bench/all.ts), which names a file in
 * BENCH_REPORT; run alone, a benchmark only prints its own output.
 */
export function report(benchmark: string, figures: BenchFigure[]): void {
  const file = process.env.BENCH_REPORT;
  if (!file) return;
  appendFileSync(file, figures.map((figure) => JSON.stringify({ benchmark, ...figure })).join("\n") + "\n");
}

/** Seconds the benchmark build takes to download `url` bare into R2 (`/__bench/download`): what every import does before its rows. */
export async function bareDownloadSeconds(origin: string, url: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${origin}/__bench/download?url=${encodeURIComponent(url)}`, { method: "POST" });
  if (!response.ok) throw new Error(`download baseline failed: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
  return (performance.now() - started) / 1000;
}

/**
 * A loopback host of one CSV file at `${host}/contacts.csv` for bulkupload, whose import
 * callbacks `${host}/done/<mark>` resolve `finished(mark)` with the time they arrived.
 */
export async function startCsvHost(file: Buffer): Promise<{ host: string; finished(mark: string): Promise<number>; close(): void }> {
  const callbacks = new Map<string, () => void>();
  const server = createServer((request, response) => {
    const done = /^\/done\/([\w-]+)$/.exec(request.url ?? "");
    if (request.method === "POST" && done) {
      callbacks.get(done[1]!)?.();
      return void request.resume().on("end", () => response.writeHead(204).end());
    }
    if (request.url !== "/contacts.csv") return void response.writeHead(404).end();
    response.writeHead(200, { "content-type": "text/csv", "content-length": file.length }).end(file);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return {
    host: `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`,
    finished: (mark) => new Promise<number>((resolve) => callbacks.set(mark, () => resolve(performance.now()))),
    close: () => server.close(),
  };
}
