// Starts the service exactly as `npm start` does (scripts/start.ts: migrations, wrangler dev with
// the panel's assets, the demo panel) on a free port and fresh local state, so the end-to-end
// tests meet neither a developer's running service nor another run's data.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { prepareLocalDatabases } from "../../scripts/local-databases.ts";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** Every file under `dir` (relative to root), sorted. */
function filesUnder(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: "utf8" })
    .map((name) => join(dir, name))
    .filter((path) => statSync(join(root, path)).isFile())
    .sort();
}

/**
 * Fresh local state with the default region's D1 databases made and noted as up to date, as
 * start.ts's first step (scripts/local-databases.ts) leaves it. Making them starts a runtime:
 * seconds on a quiet machine, half a minute on a loaded one, for each of the ~20 files. So they
 * are made once, into a directory named after everything they are made of (migrations, schema
 * snapshots, the code that makes them, wrangler.toml's databases, Miniflare's version), and each
 * service starts on a copy; start.ts then finds them up to date, as on any restart.
 */
async function templateState(): Promise<string> {
  const hash = createHash("sha256");
  const miniflare = createRequire(import.meta.url).resolve("miniflare/package.json", { paths: [root] });
  const inputs = [...filesUnder("migrations"), "wrangler.toml", "scripts/local-databases.ts", "scripts/migrate.ts", "scripts/schema-snapshot.ts", "src/store/id-ranges.ts"];
  for (const path of inputs) hash.update(path).update(readFileSync(join(root, path)));
  hash.update(readFileSync(miniflare));
  const template = join(tmpdir(), `apiv2-e2e-state-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(template)) return template;
  // Made aside and renamed into place, so a file started at the same time never copies a half-made one.
  const making = mkdtempSync(join(tmpdir(), "apiv2-e2e-state-making-"));
  try {
    await prepareLocalDatabases("", making);
    renameSync(making, template);
  } catch (error) {
    rmSync(making, { recursive: true, force: true });
    // Another file made it first.
    if (!existsSync(template)) throw error;
  }
  return template;
}

export interface Service {
  origin: string;
  /** What start.ts printed once ready: demo panel id, API key, owner email and password... */
  printed: Record<string, string>;
  /** Everything start.ts printed so far. */
  output(): string;
  adminToken: string;
  stop(): Promise<void>;
  /** Kills every process of the service at once (SIGKILL), as a crash would; its state stays for a restart. */
  crash(): void;
}

export interface StartOptions {
  /** Local state to start on (a restart after crash()); a fresh directory when absent. */
  stateDir?: string;
  port?: number;
  /** Environment variables start.ts reads (EMAIL_PROVIDER, DOH_URL). */
  env?: Record<string, string>;
}

/**
 * A port free now, held until released: a second one taken meanwhile is another. Drawn below
 * Linux's ephemeral range (32768 up), from which the system hands ports to every listen(0) and
 * outgoing connection, the other service's workerd among them, in the seconds before wrangler
 * binds this one.
 */
async function freePort(): Promise<{ port: number; release: () => Promise<void> }> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = createServer();
    const bound = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => resolve(true));
    });
    if (bound) return { port, release: () => new Promise((done) => server.close(() => done())) };
  }
}

/** Free ports for the service and its devtools inspector, distinct from each other. */
async function freePorts(port: number | undefined): Promise<{ port: number; inspectorPort: number }> {
  const held = [await freePort(), await freePort()];
  await Promise.all(held.map((one) => one.release()));
  return { port: port ?? held[0]!.port, inspectorPort: held[1]!.port };
}

/** The lines `  label   value` of start.ts's ready message. */
function readyDetails(output: string): Record<string, string> {
  const details: Record<string, string> = {};
  const start = output.indexOf("Service ready at");
  for (const line of output.slice(start).split("\n")) {
    const found = /^ {2}([A-Za-z][A-Za-z ]*?) {2,}(\S+)\s*$/.exec(line);
    if (found) details[found[1]!] = found[2]!;
  }
  return details;
}

/**
 * A service on fresh state is started a second time when the first start fails, the first
 * failure written to stderr: a start is the tests' set-up, not what they test, and a rare failed
 * start (ports, a loaded machine) would otherwise fail a whole file. A restart on given state is
 * never repeated: what it finds is what the test is about.
 */
export async function startService(options: StartOptions = {}): Promise<Service & { stateDir: string; port: number }> {
  if (options.stateDir) return startOnce(options);
  try {
    return await startOnce(options);
  } catch (error) {
    console.error(`starting the service failed once; starting it again on fresh state:\n${(error as Error).message}`);
    return startOnce(options);
  }
}

async function startOnce(options: StartOptions): Promise<Service & { stateDir: string; port: number }> {
  const { port, inspectorPort } = await freePorts(options.port);
  let stateDir = options.stateDir;
  if (!stateDir) {
    const template = await templateState();
    stateDir = mkdtempSync(join(tmpdir(), "apiv2-e2e-"));
    cpSync(template, stateDir, { recursive: true });
  }
  // npm test builds the panel before running these tests; a lone run builds it if missing.
  const args = [join(root, "scripts", "start.ts"), ...(existsSync(join(root, "web", "dist", "index.html")) ? ["--no-build"] : [])];
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: root,
    env: { ...process.env, ...options.env, PORT: String(port), INSPECTOR_PORT: String(inspectorPort), STATE_DIR: stateDir, CI: "1" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  const stop = async () => {
    if (child.exitCode === null && child.pid) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      process.kill(-child.pid, "SIGTERM");
      // Cleared once the service has exited: a pending timer would keep this file's process
      // alive for the rest of the 5 seconds, and node --test waits for it before the next file.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
      clearTimeout(timer);
      if (child.exitCode === null) process.kill(-child.pid, "SIGKILL");
    }
    rmSync(stateDir, { recursive: true, force: true });
  };
  const crash = () => {
    if (child.exitCode === null && child.pid) process.kill(-child.pid, "SIGKILL");
  };
  // Migrations of the control database and both shards, a panel build and wrangler dev: minutes on a loaded machine.
  const deadline = Date.now() + 300_000;
  while (!/Service ready at[\s\S]*\n\n/.test(output)) {
    if (child.exitCode !== null || Date.now() > deadline) {
      // start.ts sends wrangler's output to the log in the state directory, which stop() removes.
      const logFile = join(stateDir, "dev.log");
      const log = existsSync(logFile) ? readFileSync(logFile, "utf8").slice(-4000) : "";
      await stop();
      throw new Error(`the service did not start:\n${output.slice(-4000)}\n--- ${logFile}:\n${log}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const printed = readyDetails(output);
  return { origin: `http://127.0.0.1:${port}`, printed, output: () => output, adminToken: printed["admin token"] ?? "", stop, crash, stateDir, port };
}

/** An admin API caller with the service's admin token; a refusal fails the test with its answer. */
export function adminCaller(service: Pick<Service, "origin" | "adminToken">) {
  return async (method: string, path: string, body?: unknown): Promise<any> => {
    const response = await fetch(`${service.origin}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${service.adminToken}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response.status === 204 ? null : response.json();
  };
}
