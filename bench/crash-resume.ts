// npm run bench:crash-resume: how soon a bulk upload moves again after the service is killed
// (SIGKILL to every process of `npm start`, as a crash or a pulled plug would) in the middle of
// the job, and that nothing is lost or doubled. Two crashes, each on its own job:
//
//   download  the CSV host trickles SLOW_ROWS (default 20,000) rows over SLOW_S (default 60)
//             seconds; the service is killed once a third of them are sent
//   import    the CSV host serves BIG_ROWS (default 300,000) rows at once; the service is
//             killed once the job has written some of them
//
// Each time the service restarts on the same state and port, as `npm start` would, and the
// figures are: seconds from the kill until the service answers again (its own start-up, the
// baseline), and from the kill until the job moves again (the CSV host sees a new download;
// the job's `created` grows). Afterwards the job must end `completed` with every row counted once.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { startService } from "../test/e2e/service.ts";

const slowRows = Number(process.env.SLOW_ROWS ?? 20_000);
const slowSeconds = Number(process.env.SLOW_S ?? 60);
const bigRows = Number(process.env.BIG_ROWS ?? 300_000);

type Service = Awaited<ReturnType<typeof startService>>;

interface CsvHost {
  origin: string;
  /** Times (ms) at which each request for a path arrived. */
  requests: Map<string, number[]>;
  /** Rows of the slow file sent so far, per path (the latest request's). */
  sentRows: Map<string, number>;
  server: Server;
}

const row = (prefix: string, n: number) => `${prefix}${n}@example.com,Person ${n}\n`;

async function startCsvHost(): Promise<CsvHost> {
  const requests = new Map<string, number[]>();
  const sentRows = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = req.url ?? "/";
    requests.set(path, [...(requests.get(path) ?? []), Date.now()]);
    res.writeHead(200, { "content-type": "text/csv" });
    res.write("EMAIL,NAME\n");
    if (path.startsWith("/big.csv")) {
      const lines: string[] = [];
      for (let n = 1; n <= bigRows; n++) lines.push(row("big", n));
      res.end(lines.join(""));
      return;
    }
    // Slow: equal slices every 200 ms over slowSeconds.
    const slices = Math.max(1, Math.round((slowSeconds * 1000) / 200));
    const perSlice = Math.ceil(slowRows / slices);
    let sent = 0;
    const timer = setInterval(() => {
      const lines: string[] = [];
      for (let i = 0; i < perSlice && sent < slowRows; i++) lines.push(row("slow", ++sent));
      res.write(lines.join(""));
      sentRows.set(path, sent);
      if (sent >= slowRows) {
        clearInterval(timer);
        res.end();
      }
    }, 200);
    res.on("close", () => clearInterval(timer));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, sentRows, server };
}

interface Job {
  status: string;
  total: number;
  created: number;
  updated: number;
  failed: number;
  progress?: { bytes_done: number; bytes_total: number | null };
}

async function job(service: Service, jobId: string): Promise<Job | null> {
  try {
    const response = await fetch(`${service.origin}/admin/v1/panels/${service.printed["demo panel"]}/jobs/${jobId}`, {
      headers: { authorization: `Bearer ${service.adminToken}` },
    });
    return response.ok ? ((await response.json()) as Job) : null;
  } catch {
    return null;
  }
}

async function startUpload(service: Service, url: string): Promise<string> {
  const envelope = `${service.origin}/apiv2?type=contact&activity=bulkupload&apikey=${encodeURIComponent(service.printed["API key"] ?? "")}`;
  const response = await fetch(envelope, { method: "POST", body: new URLSearchParams({ path: url }) });
  const body = (await response.json()) as { jobid?: string };
  if (!body.jobid) throw new Error(`bulkupload refused: ${JSON.stringify(body)}`);
  return body.jobid;
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | null | undefined | false>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface Figures {
  kind: string;
  restartS: number;
  movesS: number;
  rows: number;
  counted: number;
  status: string;
}

/** Kills the service, starts it again on the same state and port; seconds from the kill to answering again. */
async function crashAndRestart(service: Service): Promise<{ restarted: Service; killedAt: number; restartS: number }> {
  const killedAt = Date.now();
  service.crash();
  const restarted = await startService({ stateDir: service.stateDir, port: service.port });
  return { restarted, killedAt, restartS: (Date.now() - killedAt) / 1000 };
}

async function finish(service: Service, jobId: string): Promise<Job> {
  return until(`job ${jobId} to end`, 20 * 60_000, async () => {
    const seen = await job(service, jobId);
    return seen && (seen.status === "completed" || seen.status === "failed") ? seen : null;
  });
}

async function midDownload(service: Service, host: CsvHost): Promise<{ service: Service; figures: Figures }> {
  const path = `/slow.csv?run=${Date.now()}`;
  const jobId = await startUpload(service, `${host.origin}${path}`);
  await until("a third of the slow file to be sent", 5 * 60_000, async () => (host.sentRows.get(path) ?? 0) >= slowRows / 3);
  const { restarted, killedAt, restartS } = await crashAndRestart(service);
  const retakenAt = await until("the download to be taken up again", 10 * 60_000, async () => host.requests.get(path)?.find((at) => at > killedAt));
  const done = await finish(restarted, jobId);
  return {
    service: restarted,
    figures: { kind: "download", restartS, movesS: (retakenAt - killedAt) / 1000, rows: slowRows, counted: done.created + done.updated + done.failed, status: done.status },
  };
}

async function midImport(service: Service, host: CsvHost): Promise<{ service: Service; figures: Figures }> {
  const jobId = await startUpload(service, `${host.origin}/big.csv?run=${Date.now()}`);
  const before = await until("rows to be written", 10 * 60_000, async () => {
    const seen = await job(service, jobId);
    return seen && seen.created > 0 && seen.created < bigRows / 2 ? seen : null;
  });
  const { restarted, killedAt, restartS } = await crashAndRestart(service);
  // The rows a step committed before the kill may show only now; moving means past those.
  const atRestart = (await job(restarted, jobId))?.created ?? before.created;
  const movedAt = await until("the import to write rows again", 10 * 60_000, async () => {
    const seen = await job(restarted, jobId);
    return seen && (seen.created > atRestart || seen.status === "completed") ? Date.now() : null;
  });
  const done = await finish(restarted, jobId);
  return {
    service: restarted,
    figures: { kind: "import", restartS, movesS: (movedAt - killedAt) / 1000, rows: bigRows, counted: done.created + done.updated + done.failed, status: done.status },
  };
}

const host = await startCsvHost();
let service = await startService();
const results: Figures[] = [];
try {
  for (const part of [midDownload, midImport]) {
    const outcome = await part(service, host);
    service = outcome.service;
    results.push(outcome.figures);
    console.log(`${outcome.figures.kind}: ${JSON.stringify(outcome.figures)}`);
  }
} finally {
  await service.stop();
  host.server.close();
}

console.log("\nkilled during   service answers again   job moves again   rows   counted   status");
for (const r of results) {
  console.log(
    `${r.kind.padEnd(15)} ${`${r.restartS.toFixed(1)} s`.padStart(21)}   ${`${r.movesS.toFixed(1)} s`.padStart(15)}   ${String(r.rows).padStart(6)}   ${String(r.counted).padStart(7)}   ${r.status}`,
  );
}
console.log("\n(seconds from the kill; the job moves again once its lease ran out and a cron tick re-drove it)");
if (results.some((r) => r.counted !== r.rows || r.status !== "completed")) process.exitCode = 1;
