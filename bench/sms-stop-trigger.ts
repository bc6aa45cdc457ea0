// npm run bench:sms-stops: what the triggers on sms_suppressions that mark the segments reading
// `reachable: sms` for a build (shard migrations 0121, 0124; decision 0063) cost a burst of
// stops, as the cron's stop copies or a bulk STOP write it. In node:sqlite (in memory), on the
// shard schema before (BEFORE, a git revision: default the one before migration 0124 was added)
// and after (this checkout's migrations/schema/shard.sql), and once with the triggers dropped
// (the bare inserts): one panel with SEGMENTS saved segments (default 50), READING of them
// (default 5) reading `reachable: sms`, all built; STOPS stops (default 5,000) inserted in
// INSERT ... SELECT statements of PAGE rows (default 500). ROUNDS (default 3) alternate the three.
//
//   node_modules/.bin/node --disable-warning=ExperimentalWarning bench/sms-stop-trigger.ts
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { root } from "./lib.ts";

const SEGMENTS = Number(process.env.SEGMENTS ?? 50);
const READING = Number(process.env.READING ?? 5);
const STOPS = Number(process.env.STOPS ?? 5_000);
const PAGE = Number(process.env.PAGE ?? 500);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const PANEL = "bench-panel";
const MIGRATION = "migrations/shard/0124_sms_stops_mark_flagged_segments.sql";

const git = (...args: string[]) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
/** The revision before migration 0124, or HEAD while it is not committed. */
const added = git("log", "--diff-filter=A", "--format=%H", "-1", "--", MIGRATION);
const before = process.env.BEFORE ?? (added ? `${added}~` : "HEAD");
const schemas = {
  before: git("show", `${before}:migrations/schema/shard.sql`),
  after: readFileSync(join(root, "migrations", "schema", "shard.sql"), "utf8"),
};

/** A definition of the size an operator saves: a few attribute and behaviour conditions; `sms` adds `reachable: sms`. */
function definition(i: number, sms: boolean): string {
  const conditions: object[] = [
    { attribute: "CITY", op: "eq", value: `City ${i}` },
    { any: [{ attribute: "PLAN", op: "in", value: ["gold", "silver"] }, { attribute: "SIGNED_UP", op: "within_last_days", value: 30 }] },
    { activity: "add_to_cart", op: "performed", min: 2, within_days: 14, where: [{ param: "price", op: "gt", value: 20 }] },
  ];
  if (sms) conditions.push({ reachable: "sms" });
  return JSON.stringify({ all: conditions });
}

/** A shard with the given schema (`bare`: its stop triggers dropped), the panel's segments saved and built. */
function shard(schema: string, bare: boolean): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  db.exec(schema);
  if (bare) db.exec("DROP TRIGGER sms_stop_rebuilds_segments; DROP TRIGGER sms_lift_rebuilds_segments");
  const flagged = db.prepare("SELECT 1 FROM pragma_table_info('segments') WHERE name = 'on_sms_stops'").get() !== undefined;
  const insert = db.prepare(
    `INSERT INTO segments (id, panel_id, name, definition, on_attributes, on_events, slides, build_cursor, checked_at, created_at, updated_at${flagged ? ", on_sms_stops" : ""})
     VALUES (?, ?, ?, ?, 1, 1, 1, NULL, 1, 1, 1${flagged ? ", ?" : ""})`,
  );
  // The segments reading it spread among the others, as saved over time.
  for (let i = 0; i < SEGMENTS; i++) {
    const sms = i % Math.ceil(SEGMENTS / READING) === 0;
    insert.run(`seg_${i}`, PANEL, `Segment ${i}`, definition(i, sms), ...(flagged ? [Number(sms)] : []));
  }
  return db;
}

/** Milliseconds the stops' inserts took, a page a statement (as many 500-row pages as the cron's copies read a run). */
function stopBurst(db: DatabaseSync): number {
  const page = db.prepare(
    `INSERT INTO sms_suppressions (panel_id, phone, reason, created_at)
     WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?) SELECT ?, 919800000000 + i, 'stop', 1 FROM n WHERE true
     ON CONFLICT DO NOTHING`,
  );
  const started = performance.now();
  for (let from = 0; from < STOPS; from += PAGE) page.run(from, Math.min(from + PAGE, STOPS) - 1, PANEL);
  return performance.now() - started;
}

const sides = [
  { name: `before (${before})`, schema: schemas.before, bare: false },
  { name: "after", schema: schemas.after, bare: false },
  { name: "bare inserts (no trigger)", schema: schemas.after, bare: true },
];
const results = new Map(sides.map((s) => [s.name, [] as number[]]));
console.log(`${STOPS} stops in statements of ${PAGE}, 1 panel, ${SEGMENTS} segments, ${READING} reading reachable: sms; ${ROUNDS} rounds`);
for (let round = 0; round < ROUNDS; round++) {
  for (const side of sides) {
    const db = shard(side.schema, side.bare);
    const ms = stopBurst(db);
    const marked = db.prepare("SELECT COUNT(*) AS n FROM segments WHERE build_cursor IS NOT NULL").get() as { n: number };
    db.close();
    results.get(side.name)!.push(ms);
    console.log(`  round ${round + 1} ${side.name}: ${ms.toFixed(1)} ms (${marked.n} segments marked)`);
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const [name, values] of results) console.log(`${name}: median ${median(values).toFixed(1)} ms, ${((median(values) * 1000) / STOPS).toFixed(2)} µs a stop`);
