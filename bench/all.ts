// npm run bench: every benchmark with short defaults, one after the other, then one table of
// their figures (service, baseline from the same run, ratio, goal) printed and written to
// docs/benchmarks.md with the commit measured. Each benchmark keeps its own script and knobs
// for longer runs (npm run bench:<name>); here their output goes to a log file per benchmark.
//
//   BENCH_ONLY=api,activity   run only these (the table is printed, docs/benchmarks.md is
//                             written only by a full run)
//   BENCH_LOGS=dir            where the logs go (default: a new directory under the system's tmp)
//   BENCH_TIMEOUT_S=300       a benchmark running longer is stopped and reported as failed
//   BENCH_RUNS=3              the whole run this many times in a row (issue 48 asks its goals of three
//                             consecutive runs): each run's table, then per goal the runs that met it
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { createWriteStream, mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { root, type BenchFigure } from "./lib.ts";

/**
 * Short defaults: the whole run stays under 15 minutes on a shared 2-core machine. api and
 * activity alternate service and baseline in slices of 3 s: with two or three rounds one run's
 * ratio moved by up to 16 points from the next one's minutes later (single posts 77 to 93%),
 * so they take five and four rounds, about 1.5 minutes more.
 */
const BENCHMARKS: Array<{ name: string; script: string; env: Record<string, string> }> = [
  { name: "api", script: "api.ts", env: { ROUNDS: "5", SLICE: "3" } },
  { name: "activity", script: "activity.ts", env: { ROUNDS: "4", SLICE: "3" } },
  { name: "forms", script: "forms.ts", env: { ROUNDS: "4", SLICE: "3" } },
  { name: "import", script: "import.ts", env: { ROWS: "1000000", REIMPORT: "0" } },
  { name: "broadcast", script: "broadcast.ts", env: { MESSAGES: "2000" } },
  { name: "webhooks", script: "webhooks.ts", env: { EVENTS: "10000", PACED_SECONDS: "5" } },
  { name: "journeys", script: "journeys.ts", env: { CONTACTS: "500", SECONDS: "3" } },
  { name: "simulate", script: "simulate.ts", env: { EVENTS: "200000", CONTACTS: "20000" } },
  { name: "panel", script: "panel.ts", env: { CONTACTS: "1000000", ROUNDS: "2", SLICE: "2" } },
  { name: "recovery", script: "recovery.ts", env: { SENDS: "1000", ENTRIES: "1000", PARTS: "crash" } },
  { name: "channels", script: "channels.ts", env: { MESSAGES: "1000", ROUNDS: "3" } },
  { name: "render", script: "render.ts", env: { RENDERS: "100000", ROUNDS: "3" } },
  // About 1.5 minutes: a panel on 2 partitions beside 1 (issue 42), small lists and files. Part e
  // (campaign publish, behaviour segment) runs on its own (docs/benchmarks.md: a full run's publish
  // would walk the contacts parts a-d left on the shard): `PARTS=e npm run bench:bigpanel`. Its
  // pipeline rounds hold 80 batches each, so the queue's delivery window that ends a drained round
  // (about 1 s) is a small part of it: at 20 batches it was most of a round on a fast machine.
  { name: "bigpanel", script: "bigpanel.ts", env: { CONTACTS: "50000", EVENTS: "160000", ROWS: "50000", ROUNDS: "2", SLICE: "2", PARTS: "a,b,c,d" } },
];
/** A benchmark still running after this long is stopped and reported as failed. */
const TIMEOUT_MS = Number(process.env.BENCH_TIMEOUT_S ?? 300) * 1000;

const only = process.env.BENCH_ONLY?.split(",").map((name) => name.trim());
const selected = BENCHMARKS.filter((b) => !only || only.includes(b.name));
const runs = Number(process.env.BENCH_RUNS ?? 1);
if (!Number.isInteger(runs) || runs < 1 || runs > 10) throw new Error(`BENCH_RUNS must be a whole number from 1 to 10, not ${process.env.BENCH_RUNS}`);
const logs = process.env.BENCH_LOGS ?? mkdtempSync(join(tmpdir(), "apiv2-bench-logs-"));
const reportFile = join(logs, "figures.jsonl");
writeFileSync(reportFile, "");

/** A benchmark's log file; with BENCH_RUNS past 1, one per run (`api.2.log`). */
const logOf = (name: string, pass: number) => join(logs, runs > 1 ? `${name}.${pass}.log` : `${name}.log`);

function run(benchmark: (typeof BENCHMARKS)[number], pass: number): Promise<{ code: number; seconds: number }> {
  const log = createWriteStream(logOf(benchmark.name, pass));
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, "bench", benchmark.script)], {
      cwd: root,
      env: { ...process.env, ...benchmark.env, BENCH_REPORT: reportFile },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const timer = setTimeout(() => {
      log.write(`\nstopped by npm run bench after ${TIMEOUT_MS / 1000} s\n`);
      child.kill("SIGTERM");
    }, TIMEOUT_MS);
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.on("close", (code) => {
      clearTimeout(timer);
      log.end();
      resolve({ code: code ?? 1, seconds: (performance.now() - started) / 1000 });
    });
  });
}

const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
const commit = git("rev-parse", "--short", "HEAD");
const dirty = git("status", "--porcelain", "--", "src", "bench", "migrations", "wrangler.toml") !== "";
const measured = `${commit}${dirty ? " with uncommitted changes" : ""}`;

interface SuiteRun {
  figures: Array<BenchFigure & { benchmark: string }>;
  outcomes: string[];
  seconds: number;
  at: string;
}

/** One pass over the selected benchmarks, their figures read from this pass's report file. */
async function runSuite(pass: number): Promise<SuiteRun> {
  writeFileSync(reportFile, "");
  const at = new Date().toISOString().slice(0, 16).replace("T", " ");
  const started = performance.now();
  const outcomes: string[] = [];
  for (const benchmark of selected) {
    process.stdout.write(`${runs > 1 ? `run ${pass} of ${runs}: ` : ""}${benchmark.name} ... `);
    const { code, seconds } = await run(benchmark, pass);
    const outcome = `${benchmark.name} ${code === 0 ? "ok" : `FAILED (exit ${code}, see ${logOf(benchmark.name, pass)})`} in ${seconds.toFixed(0)} s`;
    console.log(outcome.slice(benchmark.name.length + 1));
    outcomes.push(outcome);
  }
  const figures = readFileSync(reportFile, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as BenchFigure & { benchmark: string });
  return { figures, outcomes, seconds: (performance.now() - started) / 1000, at };
}

const header = ["benchmark", "figure", "service", "baseline", "ratio", "spread over slices", "goal", "met"];
const rowsOf = (suite: SuiteRun) => suite.figures.map((f) => [f.benchmark, f.figure, f.service, f.baseline, f.ratio, f.spread ?? "", f.goal, f.met === null ? "" : f.met ? "yes" : "NO"]);
/** "N of M goals met" for one run. */
const goalsMet = (suite: SuiteRun) => {
  const goals = suite.figures.filter((f) => f.met !== null);
  return `${goals.filter((f) => f.met).length} of ${goals.length} goals met`;
};
const summaryOf = (suite: SuiteRun) => `${goalsMet(suite)}; ${suite.seconds.toFixed(0)} s in all (${suite.outcomes.join("; ")})`;

console.log(`npm run bench: ${selected.map((b) => b.name).join(", ")} at ${measured}${runs > 1 ? `, ${runs} consecutive runs` : ""}; logs in ${logs}`);
const suites: SuiteRun[] = [];
for (let pass = 1; pass <= runs; pass++) {
  const suite = await runSuite(pass);
  suites.push(suite);
  const rows = rowsOf(suite);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  console.log(`\n${[header, ...rows].map((r) => r.map((cell, i) => cell.padEnd(widths[i]!)).join("  ")).join("\n")}`);
  console.log(`\n${runs > 1 ? `run ${pass} of ${runs}: ` : ""}${summaryOf(suite)}`);
}

/**
 * A goal held over consecutive runs (issue 48: "each in three consecutive runs"): per figure with
 * a goal, the runs that met it. A figure missing from a run (its benchmark failed) counts as not met.
 */
function heldOverRuns(): { lines: string[]; held: number; of: number } {
  const keys = [...new Map(suites.flatMap((s) => s.figures.filter((f) => f.met !== null).map((f) => [`${f.benchmark}\u0000${f.figure}`, f] as const))).values()];
  const lines = keys.map((f) => {
    const each = suites.map((s) => s.figures.find((g) => g.benchmark === f.benchmark && g.figure === f.figure));
    const metIn = each.filter((g) => g?.met).length;
    return `| ${f.benchmark} | ${f.figure.replaceAll("|", "\\|")} | ${each.map((g) => g?.ratio ?? "missing").join(" / ")} | ${f.goal} | ${metIn} of ${runs} |`;
  });
  const held = keys.filter((f) => suites.every((s) => s.figures.find((g) => g.benchmark === f.benchmark && g.figure === f.figure)?.met)).length;
  return { lines, held, of: keys.length };
}

if (runs > 1) {
  const { held, of } = heldOverRuns();
  console.log(`\n${held} of ${of} goals met in every one of the ${runs} runs`);
}
if (only) {
  console.log("docs/benchmarks.md left as it is: BENCH_ONLY ran a part of the benchmarks");
} else {
  const tableOf = (suite: SuiteRun, pass: number) => [
    `${runs > 1 ? `**Run ${pass} of ${runs}**, ` : ""}measured at \`${measured}\` on ${suite.at} UTC in ${(suite.seconds / 60).toFixed(1)} minutes ` +
      `(short defaults; ${goalsMet(suite)}; ${suite.outcomes.join("; ")}).`,
    "",
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...rowsOf(suite).map((r) => `| ${r.map((cell) => cell.replaceAll("|", "\\|")).join(" | ")} |`),
  ];
  const held = runs > 1 ? heldOverRuns() : null;
  const markdown = [
    "<!-- npm run bench writes this section; edits inside it are overwritten -->",
    ...(held
      ? [
          `${runs} consecutive runs at \`${measured}\`: **${held.held} of ${held.of} goals met in every run**.`,
          "",
          "| benchmark | figure | ratio in each run | goal | met in |",
          "|---|---|---|---|---|",
          ...held.lines,
          "",
        ]
      : []),
    ...suites.flatMap((suite, i) => [...tableOf(suite, i + 1), ...(i < suites.length - 1 ? [""] : [])]),
    "<!-- end of npm run bench -->",
  ].join("\n");
  const docs = join(root, "docs", "benchmarks.md");
  const text = existsSync(docs) ? readFileSync(docs, "utf8") : "# Benchmarks\n";
  const section = /<!-- npm run bench writes this section[^]*?<!-- end of npm run bench -->/;
  writeFileSync(docs, section.test(text) ? text.replace(section, () => markdown) : text.replace(/\n*$/, `\n\n## Last \`npm run bench\`\n\n${markdown}\n`));
  console.log(`written to docs/benchmarks.md`);
}
if (suites.some((s) => s.outcomes.some((o) => o.includes("FAILED")))) process.exitCode = 1;
