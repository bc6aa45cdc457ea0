// npm run bench:pass: the event pipeline's first stage (finishEventBatches: contacts, anonymous-
// profile links, event rows, day counts, the batches removed) timed statement by statement in
// node:sqlite, on a file database in WAL with the shard migrations applied, beside a bare insert
// of the same events as rows (one prepared INSERT per event, in one transaction) in a database
// set up alike (issue 15). No workerd and no HTTP: SQLite's own share of the pipeline, which in
// workerd swings with the machine's speed (bench:activity part 3), is steadier here; passes
// alternate with the baseline's so drift hits both. The store's own code runs, bundled from
// src/ behind a minimal D1 stand-in. PASSES (40, the first 5 not counted) of PER_PASS (5) batches
// of 1,000 of bench:activity's events, over 5,000 identities that exist from the start.
// AGAINST=<another checkout> runs that checkout's store and migrations too, in a database of its
// own, its passes alternating with this one's: an A/B of a change to the pass in one process.
import { build } from "esbuild";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
import { pathToFileURL } from "node:url";
import { report, root, times } from "./lib.ts";

const passes = Number(process.env.PASSES ?? 40);
const perPass = Number(process.env.PER_PASS ?? 5);
const WARM_UP = 5;
const BATCH = 1000;
const PANEL = "bench-panel";

/** What this benchmark calls of src/store/event-batches.ts (loaded from a bundle). */
interface EventBatchesModule {
  appendEventBatches(db: unknown, panelId: string, events: readonly object[], now: number): Promise<{ batchIds: number[] }>;
  finishEventBatches(db: unknown, panel: { id: string; primaryKey: string }, ids: readonly number[], lease: string, now: number, until: number): Promise<void>;
}

async function loadStore(checkout: string, outfile: string): Promise<EventBatchesModule> {
  await build({ entryPoints: [join(checkout, "src", "store", "event-batches.ts")], bundle: true, format: "esm", platform: "node", outfile, logLevel: "error" });
  return (await import(pathToFileURL(outfile).href)) as EventBatchesModule;
}

/** CPU milliseconds (user and system) that `work` took. */
function cpuMs(work: () => void): number {
  const start = process.cpuUsage();
  work();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/**
 * A D1Database as far as the store uses it, over node:sqlite: `batch` runs its statements in one
 * transaction; while `timing.on`, each statement's CPU time is added to `spent` under the start of its SQL.
 */
function d1Over(sqlite: DatabaseSync, spent: Map<string, number>, timing: { on: boolean }) {
  const prepared = new Map<string, StatementSync>();
  const statementOf = (sql: string) => prepared.get(sql) ?? prepared.set(sql, sqlite.prepare(sql)).get(sql)!;
  class Statement {
    readonly sql: string;
    readonly values: SQLInputValue[];
    constructor(sql: string, values: SQLInputValue[] = []) {
      this.sql = sql;
      this.values = values;
    }
    bind(...values: SQLInputValue[]) {
      return new Statement(this.sql, values);
    }
    execute() {
      let results: unknown[] = [];
      const ms = cpuMs(() => (results = statementOf(this.sql).all(...this.values)));
      if (timing.on) {
        const name = this.sql.replace(/\s+/g, " ").trim().slice(0, 60);
        spent.set(name, (spent.get(name) ?? 0) + ms);
      }
      return { results, meta: {} };
    }
  }
  return {
    prepare: (sql: string) => new Statement(sql),
    async batch(statements: Statement[]) {
      sqlite.exec("BEGIN");
      try {
        const results = statements.map((statement) => statement.execute());
        sqlite.exec("COMMIT");
        return results;
      } catch (error) {
        sqlite.exec("ROLLBACK");
        throw error;
      }
    },
  };
}

function openShard(checkout: string, file: string): DatabaseSync {
  const sqlite = new DatabaseSync(file);
  sqlite.exec("PRAGMA journal_mode = WAL");
  const migrations = join(checkout, "migrations", "shard");
  for (const name of readdirSync(migrations).filter((f) => f.endsWith(".sql")).sort()) sqlite.exec(readFileSync(join(migrations, name), "utf8"));
  sqlite.exec(`INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at)
    WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 4999)
    SELECT '${PANEL}', 'user' || i || '@example.com', '{}', 1, 1 FROM n`);
  return sqlite;
}

/** bench:activity's event, as the pipeline records it (NewEvent with its guid). */
function eventAt(i: number) {
  return {
    guid: `g-${i}-${Math.random().toString(36).slice(2)}`,
    claimed: false,
    channel: "custom_activity",
    name: "add_to_cart",
    activityId: 7,
    identity: `user${i % 5000}@example.com`,
    uniqueid: `visitor-${i % 5000}`,
    source: "web",
    params: { name: "Kettle", prid: 1000 + (i % 100), price: 29.5, prqt: 1 + (i % 3) },
    occurredAt: Date.UTC(2024, 0, 31, 12, 35),
  };
}

/** One checkout's store code on a database of its own, and the CPU its passes took. */
async function setUp(label: string, checkout: string, workDir: string) {
  const store = await loadStore(checkout, join(workDir, `${label}.mjs`));
  const sqlite = openShard(checkout, join(workDir, `${label}.db`));
  const spent = new Map<string, number>();
  const timing = { on: false };
  return { label, store, sqlite, spent, timing, db: d1Over(sqlite, spent, timing), passMs: 0, sequence: 0 };
}
type Side = Awaited<ReturnType<typeof setUp>>;

/** Records PER_PASS batches on `side` and times the pass that stores them (when `counted`). */
async function runPass(side: Side, pass: number, counted: boolean): Promise<void> {
  const ids: number[] = [];
  for (let b = 0; b < perPass; b++) {
    const events = Array.from({ length: BATCH }, () => eventAt(side.sequence++));
    ids.push(...(await side.store.appendEventBatches(side.db, PANEL, events, Date.now())).batchIds);
  }
  // Recording is bench:activity's part 2; only the pass is timed here.
  side.timing.on = counted;
  const before = process.cpuUsage();
  await side.store.finishEventBatches(side.db, { id: PANEL, primaryKey: "EMAIL" }, ids, `lease-${pass}`, Date.now(), Date.now() + 60_000);
  const used = process.cpuUsage(before);
  side.timing.on = false;
  if (counted) side.passMs += (used.user + used.system) / 1000;
}

const workDir = mkdtempSync(join(tmpdir(), "apiv2-bench-pass-"));
try {
  const sides = [await setUp("this", root, workDir)];
  if (process.env.AGAINST) sides.push(await setUp("against", process.env.AGAINST, workDir));
  // The baseline's rows go to a database of their own: in a side's they would grow its tables
  // twice as fast as the other side's.
  const sqlite = openShard(root, join(workDir, "baseline.db"));
  const bareInsert = sqlite.prepare(
    `INSERT INTO events (panel_id, batch_id, guid, channel, name, activity_id, contact_id, uniqueid, identity, source, params, occurred_at, received_at)
     VALUES (?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  let baselineMs = 0;
  let baselineSequence = 0;
  for (let pass = 0; pass < passes; pass++) {
    const counted = pass >= WARM_UP;
    for (const side of sides) await runPass(side, pass, counted);
    const first = baselineSequence;
    const rows = Array.from({ length: perPass * BATCH }, () => eventAt(baselineSequence++));
    const now = Date.now();
    const ms = cpuMs(() => {
      sqlite.exec("BEGIN");
      // The contacts were seeded in key order: user<i % 5000> has id 1 + i % 5000.
      rows.forEach((e, k) => {
        bareInsert.run(PANEL, `bare-${e.guid}`, e.channel, e.name, e.activityId, 1 + ((first + k) % 5000), e.uniqueid, e.identity, e.source, JSON.stringify(e.params), e.occurredAt, now);
      });
      sqlite.exec("COMMIT");
    });
    if (counted) baselineMs += ms;
  }
  const thousands = ((passes - WARM_UP) * perPass * BATCH) / 1000;
  const perThousand = (ms: number) => ms / thousands;
  console.log(`pipeline pass in node:sqlite ${String(sqlite.prepare("SELECT sqlite_version() AS v").get()?.v)}, ${passes - WARM_UP} passes of ${perPass} x ${BATCH} events`);
  for (const side of sides) {
    console.log(`${side.label}: CPU ms per 1,000 events, by statement of the pass:`);
    for (const [name, ms] of [...side.spent].sort((a, b) => b[1] - a[1])) console.log(`${perThousand(ms).toFixed(2).padStart(8)}  ${name}`);
    console.log(`${side.label}: pass ${perThousand(side.passMs).toFixed(2)} ms per 1,000 events; bare insert of the same rows ${perThousand(baselineMs).toFixed(2)} ms: ${times(side.passMs, baselineMs)}`);
  }
  const [current, against] = sides;
  if (against) console.log(`this checkout's pass: ${times(current!.passMs, against.passMs)} the CPU of ${process.env.AGAINST}'s`);
  report("pass", [
    { figure: "pipeline pass in node:sqlite, CPU ms per 1,000 events", service: perThousand(current!.passMs).toFixed(2), baseline: perThousand(baselineMs).toFixed(2), ratio: times(current!.passMs, baselineMs), goal: "", met: null },
  ]);
  for (const side of sides) side.sqlite.close();
  sqlite.close();
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
