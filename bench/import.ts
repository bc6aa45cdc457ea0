// npm run bench:import: a generated CSV (NAME, EMAIL, MOBILE, AGE, CITY) served by a Node HTTP
// server on loopback, imported through contact/bulkupload, timed from the call to the job's
// callback (the contract's word that it completed; polling bulkstatus every 50 ms ran on the
// core the import runs on), beside a baseline in the same runtime and run: the same rows
// upserted with bare multi-row D1 statements, once before the import and once after it (fresh
// keys), their mean the baseline: on this shared machine one run of the same upserts took from
// 20% less to 13% more time than the other (ten runs), and the import ran between them. Each file
// size runs in a fresh runtime; the runtime's memory (workerd's RSS, sampled from /proc) is
// reported per case, to show it does not grow with the file's size.
// Issue 48 goal: import rows/s >= 90% of the baseline's; the spread printed beside it is the
// import against each of the two baseline runs.
//
// LIST=1 imports into a list (no journey): the cost of memberships alone.
// LIST_JOURNEY=1 imports into a list with a running list journey (one sms step): the import's
// own figures then include writing the journey entries, and the time until every imported
// contact entered the journey is reported too (entering runs the journey's steps: use a
// smaller file, ROWS=50000).
//
// The isolates get a 128 MB V8 old space, as a deployed Worker has 128 MB: an import that held
// the file in memory would fail here rather than merely show a large RSS. Without the cap V8
// collects lazily and RSS says more about the collector than about the import.
//
//   ROWS=1000000,250000 (file sizes, default)   BASELINE_CALL_ROWS=20000 (rows per baseline request)
//   LIST=1 (import into a list)   LIST_JOURNEY=1 (import into a list with a running list journey)
//   REIMPORT=0 (skip the second import of the same file, all updates)
//   MINIFLARE_WORKERD_V8_FLAGS (default "--max-old-space-size=128")
import { readdirSync, readFileSync } from "node:fs";
import { childCpuSeconds } from "./cpu.ts";
import { adminCall, bareDownloadSeconds, startCsvHost, createBenchPanel, report, share, spreadOf, startRuntime, times, type BenchFigure } from "./lib.ts";
import { CSV_HEADER, csvRow } from "./worker/import-rows.ts";

process.env.MINIFLARE_WORKERD_V8_FLAGS ??= "--max-old-space-size=128";
const sizes = (process.env.ROWS ?? "1000000,250000").split(",").map(Number);
const baselineCallRows = Number(process.env.BASELINE_CALL_ROWS ?? 20_000);
const listJourney = process.env.LIST_JOURNEY === "1";
const reimport = process.env.REIMPORT !== "0";
const intoList = listJourney || process.env.LIST === "1";

function generateCsv(rows: number): Buffer {
  const parts = [CSV_HEADER];
  for (let i = 0; i < rows; i++) parts.push(csvRow(i));
  return Buffer.from(parts.join(""));
}

/** The workerd processes Miniflare started (children of this process), for their memory. */
function workerdPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (comm.startsWith("workerd") && ppid === process.pid) pids.push(Number(entry));
    } catch {
      // the process ended between listing and reading
    }
  }
  return pids;
}

interface Memory {
  rss: number;
  /** Anonymous memory: JS heaps, buffers, malloc (SQLite's page cache included). */
  anon: number;
  /** File-backed pages: the local D1 and R2 files mapped by workerd. */
  file: number;
}

function memory(pids: number[]): Memory {
  const total: Memory = { rss: 0, anon: 0, file: 0 };
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0) * 1024;
      total.rss += kb("VmRSS");
      total.anon += kb("RssAnon");
      total.file += kb("RssFile") + kb("RssShmem");
    } catch {
      // gone
    }
  }
  return total;
}

function maxMemory(a: Memory, b: Memory): Memory {
  return { rss: Math.max(a.rss, b.rss), anon: Math.max(a.anon, b.anon), file: Math.max(a.file, b.file) };
}

/** Samples the runtime's memory every 100 ms while `work` runs; returns its result, the peaks and the start. */
/** Runs `work`, sampling workerd's memory; also the workerd CPU seconds it took. */
async function withMemory<T>(pids: number[], work: () => Promise<T>): Promise<{ result: T; peak: Memory; before: Memory; cpuSeconds: number }> {
  const before = memory(pids);
  let peak = before;
  const timer = setInterval(() => (peak = maxMemory(peak, memory(pids))), 100);
  const cpu = childCpuSeconds();
  try {
    const result = await work();
    peak = maxMemory(peak, memory(pids));
    return { result, peak, before, cpuSeconds: childCpuSeconds() - cpu };
  } finally {
    clearInterval(timer);
  }
}

interface CaseResult {
  rows: number;
  seconds: number;
  rowsPerSecond: number;
  /** workerd CPU seconds from the first call to the last answer. */
  cpuSeconds: number;
  before: Memory;
  peak: Memory;
}

/** A list, and (with LIST_JOURNEY) a running journey it triggers; returns the list id and the journey's admin path. */
async function benchList(origin: string, panel: { id: string; apiKey: string }): Promise<{ listId: number; journeyPath: string | null }> {
  const list = (await (await fetch(`${origin}/apiv2?type=lists&activity=add&apikey=${panel.apiKey}&listname=Bench`)).json()) as { listid: number };
  if (!listJourney) return { listId: list.listid, journeyPath: null };
  const journey = await adminCall(origin, "POST", `/panels/${panel.id}/journeys`, {
    name: "Bench list journey",
    trigger: { type: "list", listid: list.listid },
    steps: [{ id: "hi", type: "sms", text: "Welcome" }],
  });
  const journeyPath = `/panels/${panel.id}/journeys/${journey.id}`;
  await adminCall(origin, "POST", `${journeyPath}/status`, { status: "running" });
  return { listId: list.listid, journeyPath };
}

/** Seconds from `since` until the journey counted `count` entered contacts. */
async function enteredAll(origin: string, journeyPath: string, count: number, since: number): Promise<number> {
  for (;;) {
    const { counters } = await adminCall(origin, "GET", journeyPath);
    if (counters.entered >= count) return (performance.now() - since) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function runSize(rows: number): Promise<{ baseline: CaseResult; baselineBefore: CaseResult; baselineAfter: CaseResult; downloadBefore: CaseResult; downloadAfter: CaseResult; importRun: CaseResult; reimportRun?: CaseResult; job: any; rejob?: any; enterSeconds?: number }> {
  const file = generateCsv(rows);
  const csvHost = await startCsvHost(file);
  const { host } = csvHost;
  const fileUrl = `${host}/contacts.csv`;
  const runtime = await startRuntime();
  try {
    const pids = workerdPids();
    const panel = await createBenchPanel(runtime.origin);
    // Warm both paths so neither pays for first-request compilation.
    await fetch(`${runtime.origin}/__bench/import-upsert?start=${rows + 1}&count=100`, { method: "POST" });
    await adminCall(runtime.origin, "GET", `/panels/${panel.id}`);

    /** The baseline's upserts of `rows` rows from key `first` on (fresh keys each run). */
    const runBaseline = (first: number) =>
      withMemory(pids, async () => {
        const started = performance.now();
        for (let start = 0; start < rows; start += baselineCallRows) {
          const response = await fetch(`${runtime.origin}/__bench/import-upsert?start=${first + start}&count=${Math.min(baselineCallRows, rows - start)}`, { method: "POST" });
          if (!response.ok) throw new Error(`baseline failed: ${response.status} ${await response.text()}`);
          await response.arrayBuffer();
        }
        return (performance.now() - started) / 1000;
      });
    /** The other half of the least an import does: the same file downloaded into R2, bare. */
    const runDownload = () => withMemory(pids, () => bareDownloadSeconds(runtime.origin, fileUrl));
    const baselineBefore = await runBaseline(0);
    const downloadBefore = await runDownload();

    const target = intoList ? await benchList(runtime.origin, panel) : null;
    let importStarted = 0;
    let imports = 0;
    const runImport = () => withMemory(pids, async () => {
      const mark = `import-${++imports}`;
      const called = csvHost.finished(mark);
      const started = (importStarted = performance.now());
      const call = await fetch(`${runtime.origin}/apiv2?type=contact&activity=bulkupload&apikey=${panel.apiKey}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ path: fileUrl, callback: `${host}/done/${mark}`, ...(target ? { listid: String(target.listId) } : {}) }),
      });
      const body = (await call.json()) as { jobid?: string; message?: string };
      if (!body.jobid) throw new Error(`bulkupload failed: ${JSON.stringify(body)}`);
      const finished = await called;
      const status = (await (
        await fetch(`${runtime.origin}/apiv2?type=contact&activity=bulkstatus&apikey=${panel.apiKey}&data=${body.jobid}`)
      ).json()) as { job: { status: string } };
      return { seconds: (finished - started) / 1000, job: status.job };
    });
    const imported = await runImport();
    const baselineAfter = await runBaseline(2 * rows + 1000);
    const downloadAfter = await runDownload();
    const baseline = {
      result: (baselineBefore.result + baselineAfter.result) / 2,
      // Memory as the first run used it: the second starts where the import left the runtime.
      peak: baselineBefore.peak,
      before: baselineBefore.before,
      cpuSeconds: (baselineBefore.cpuSeconds + baselineAfter.cpuSeconds) / 2,
    };
    const enterSeconds = target?.journeyPath ? await enteredAll(runtime.origin, target.journeyPath, rows, importStarted) : undefined;
    // The same file again: every row an update, so the database hardly grows and what memory
    // the import itself holds shows alone.
    const reimported = reimport ? await runImport() : undefined;

    const result = (seconds: number, m: { peak: Memory; before: Memory; cpuSeconds: number }): CaseResult => ({
      rows,
      seconds,
      rowsPerSecond: rows / seconds,
      cpuSeconds: m.cpuSeconds,
      before: m.before,
      peak: m.peak,
    });
    return {
      baseline: result(baseline.result, baseline),
      baselineBefore: result(baselineBefore.result, baselineBefore),
      baselineAfter: result(baselineAfter.result, baselineAfter),
      importRun: result(imported.result.seconds, imported),
      downloadBefore: result(downloadBefore.result, downloadBefore),
      downloadAfter: result(downloadAfter.result, downloadAfter),
      reimportRun: reimported && result(reimported.result.seconds, reimported),
      job: imported.result.job,
      rejob: reimported?.result.job,
      enterSeconds,
    };
  } finally {
    await runtime.stop();
    csvHost.close();
  }
}

const mb = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(0)} MiB`;
const lines: string[] = [];
const figures: BenchFigure[] = [];
const enterLines: string[] = [];
for (const rows of sizes) {
  const { baseline, baselineBefore, baselineAfter, downloadBefore, downloadAfter, importRun, reimportRun, job, rejob, enterSeconds } = await runSize(rows);
  if (job.status !== "completed" || job.total !== rows || job.created !== rows || (rejob && rejob.updated !== rows)) {
    console.error(`import did not complete as expected: ${JSON.stringify(job)} ${JSON.stringify(rejob)}`);
    process.exitCode = 1;
  }
  const cases: Array<readonly [string, CaseResult]> = [
    [`baseline before the import, ${rows} rows`, baselineBefore],
    [`baseline after the import, ${rows} rows`, baselineAfter],
    [`baseline: bare multi-row upserts (mean), ${rows} rows`, baseline],
    [`bare download of the file into R2, before`, downloadBefore],
    [`bare download of the file into R2, after`, downloadAfter],
    [`bulkupload ${rows} rows, call to callback`, importRun],
  ];
  if (reimportRun) cases.push([`bulkupload again (all updates), ${rows} rows`, reimportRun]);
  const mode = listJourney ? " into a list journey" : intoList ? " into a list" : "";
  // The least an import does: the file downloaded bare into R2 (the two runs' mean), then the bare upserts.
  const leastSeconds = baseline.seconds + (downloadBefore.seconds + downloadAfter.seconds) / 2;
  figures.push(
    {
      figure: `import${mode} ${rows} rows, rows/s`,
      service: importRun.rowsPerSecond.toFixed(0),
      baseline: baseline.rowsPerSecond.toFixed(0),
      ratio: share(importRun.rowsPerSecond, baseline.rowsPerSecond),
      spread: spreadOf([baselineBefore, baselineAfter].map((one) => importRun.rowsPerSecond / one.rowsPerSecond), share),
      goal: ">= 90%",
      met: importRun.rowsPerSecond >= 0.9 * baseline.rowsPerSecond,
    },
    {
      // Not a goal of issue 48's: what is left of the gap once the download the import cannot skip is in the baseline.
      figure: `import${mode} ${rows} rows, rows/s (vs bare download into R2 + bare upserts)`,
      service: importRun.rowsPerSecond.toFixed(0),
      baseline: (rows / leastSeconds).toFixed(0),
      ratio: share(leastSeconds, importRun.seconds),
      spread: spreadOf([[baselineBefore, downloadBefore], [baselineAfter, downloadAfter]].map(([upserts, download]) => (upserts!.seconds + download!.seconds) / importRun.seconds), share),
      goal: "",
      met: null,
    },
    { figure: `import${mode} ${rows} rows, seconds`, service: importRun.seconds.toFixed(1), baseline: baseline.seconds.toFixed(1), ratio: times(importRun.seconds, baseline.seconds), goal: "", met: null },
    { figure: `import${mode} ${rows} rows, workerd peak RSS MiB`, service: (importRun.peak.rss / 2 ** 20).toFixed(0), baseline: (baseline.peak.rss / 2 ** 20).toFixed(0), ratio: times(importRun.peak.rss, baseline.peak.rss), goal: "", met: null },
  );
  for (const [name, r] of cases) {
    lines.push(
      [
        name.padEnd(46),
        r.seconds.toFixed(1).padStart(8),
        r.rowsPerSecond.toFixed(0).padStart(10),
        `${((r.rowsPerSecond / baseline.rowsPerSecond) * 100).toFixed(0)}%`.padStart(12),
        r.cpuSeconds.toFixed(1).padStart(10),
        `${mb(r.before.rss)} -> ${mb(r.peak.rss)}`.padStart(20),
        `${mb(r.before.anon)} -> ${mb(r.peak.anon)}`.padStart(20),
        `${mb(r.before.file)} -> ${mb(r.peak.file)}`.padStart(20),
      ].join(" "),
    );
  }
  enterLines.push(`${rows} rows: the bare download into R2 and the bare upserts take ${leastSeconds.toFixed(1)} s together; the import ${importRun.seconds.toFixed(1)} s (${share(leastSeconds, importRun.seconds)} of that pace)`);
  if (enterSeconds !== undefined) {
    enterLines.push(`${rows} contacts entered the list journey ${enterSeconds.toFixed(1)} s after the upload call: ${(rows / enterSeconds).toFixed(0)} contacts/s (${((enterSeconds * 1000) / rows).toFixed(2)} ms each)`);
  }
}
console.log(`\nbulk upload${listJourney ? " into a list with a running list journey" : intoList ? " into a list" : ""} vs bare multi-row D1 upserts (same runtime, fresh runtime per file size; workerd flags: ${process.env.MINIFLARE_WORKERD_V8_FLAGS})`);
console.log(
  ["case".padEnd(46), "seconds".padStart(8), "rows/s".padStart(10), "vs baseline".padStart(12), "CPU s".padStart(10), "RSS start -> peak".padStart(20), "anon start -> peak".padStart(20), "file start -> peak".padStart(20)].join(" "),
);
for (const line of lines) console.log(line);
for (const line of enterLines) console.log(line);
report("import", figures);
