// `npm test`'s two long suites at once: vitest (every test inside workerd) and the browser tests
// (test:e2e, each file against a service started as `npm start` starts it). Either alone left
// half of a 2-core machine idle (a clean-clone CI used 30 CPU-minutes in 30 minutes of wall
// time: both wait on timers, queues, services starting and the browser), so side by side they
// take about as long as the longer one. vitest streams its output; the browser tests' output is
// kept and printed whole when they end, so neither interleaves with the other. Exits non-zero
// when either suite fails.
import { spawn } from "node:child_process";

interface Outcome {
  name: string;
  code: number;
  seconds: number;
}

function run(name: string, command: string, args: string[], buffered: boolean): Promise<Outcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: buffered ? ["ignore", "pipe", "pipe"] : "inherit", shell: false });
    const chunks: Buffer[] = [];
    if (buffered) {
      child.stdout!.on("data", (chunk: Buffer) => chunks.push(chunk));
      child.stderr!.on("data", (chunk: Buffer) => chunks.push(chunk));
    }
    child.on("close", (code, signal) => {
      const seconds = (performance.now() - started) / 1000;
      if (buffered) {
        process.stdout.write(`\n===== ${name} (${seconds.toFixed(0)} s) =====\n`);
        process.stdout.write(Buffer.concat(chunks));
      }
      resolve({ name, code: code ?? (signal ? 1 : 0), seconds });
    });
  });
}

const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const outcomes = await Promise.all([run("vitest", npm, ["exec", "--", "vitest", "run"], false), run("browser tests (test:e2e)", npm, ["run", "-s", "test:e2e"], true)]);
for (const { name, code, seconds } of outcomes) console.log(`${name}: ${code === 0 ? "passed" : `FAILED (exit ${code})`} in ${seconds.toFixed(0)} s`);
process.exit(outcomes.some((o) => o.code !== 0) ? 1 : 0);
