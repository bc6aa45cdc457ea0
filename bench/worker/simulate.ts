// Routes for bench:simulate (issue 46 item 1): a panel's custom activities written straight into
// its shard, the bare read of them as a simulation pages them (the baseline), and where a
// simulation's time goes (D1 per kind of read, R2, the steps' own time) measured around the
// bindings of the benchmark build, so src/ stays as it is.
import { shardOf } from "../../src/store/shards";

/**
 * POST /__bench/seed-sim-events?panel=&shard=&from=&count=&total=&start=&end=&names=a,b: events
 * `from`…`from + count − 1` of `total`, spread evenly in time over [start, end) (in id order, so
 * occurred_at order is id order), each of a name of `names` and of one of the panel's contacts
 * on that shard, both chosen by a fixed hash of the event's number, with a `price` parameter
 * (0–19): as the pipeline records a custom activity (identity, contact, bucket).
 */
export async function seedSimEvents(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const n = (name: string) => Number(url.searchParams.get(name) ?? "0");
  const db = shardOf(env, { shard: n("shard") });
  const panelId = url.searchParams.get("panel") ?? "";
  const names = (url.searchParams.get("names") ?? "").split(",").filter(Boolean);
  const range = (await db.prepare("SELECT MIN(id) AS first, COUNT(*) AS n FROM contacts WHERE panel_id = ?").bind(panelId).first<{ first: number; n: number }>())!;
  // Contacts are seeded in one run of ids (seed-partitioned), so id = first + k picks the k-th.
  const inserted = await db
    .prepare(
      // Bound numbers arrive as REAL: cast, so ids, names' indexes and times are whole.
      `WITH RECURSIVE args(first, count, total, contact0, contacts, t0, t1) AS (SELECT CAST(?2 AS INTEGER), CAST(?3 AS INTEGER), CAST(?4 AS INTEGER), CAST(?5 AS INTEGER), CAST(?6 AS INTEGER), CAST(?7 AS INTEGER), CAST(?8 AS INTEGER)),
       seq(i) AS (SELECT first FROM args UNION ALL SELECT i + 1 FROM seq, args WHERE i < first + count - 1),
       picked AS (SELECT i, contact0 + ((i * 2654435761) % 4294967291) % contacts AS contact, json_extract(?9, '$[' || (((i * 40503) % 65521) % json_array_length(?9)) || ']') AS name,
                         t0 + (i * (t1 - t0)) / total AS at FROM seq, args)
       INSERT INTO events (panel_id, guid, channel, name, contact_id, identity, source, params, occurred_at, received_at, bucket)
       SELECT ?1, 'sim-' || p.i, 'custom_activity', p.name, c.id, c.pk_value, 'web', json_object('price', (p.i * 7919) % 20, 'prid', p.i % 100), p.at, p.at, c.bucket
       FROM picked p JOIN contacts c ON c.id = p.contact`,
    )
    .bind(panelId, n("from"), n("count"), n("total"), range.first, range.n, n("start"), n("end"), JSON.stringify(names))
    .run();
  return Response.json({ events: inserted.meta.changes });
}

/**
 * GET /__bench/read-sim-events?panel=&shard=&from=&to=&page=5000&names=a,b: the baseline of a
 * simulation's event reads: the panel's custom activities of each name in [from, to) read bare
 * from the shard on their index (events_by_name: panel, channel, name, occurred_at, id) in
 * (occurred_at, id) pages of `page`, each event's contact tallied; the names are not merged.
 */
export async function readSimEvents(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const n = (name: string) => Number(url.searchParams.get(name) ?? "0");
  const db = shardOf(env, { shard: n("shard") });
  const statement = db.prepare(
    `SELECT * FROM events WHERE panel_id = ?1 AND channel = 'custom_activity' AND name = ?5 AND occurred_at >= ?2 AND occurred_at < ?3 AND (occurred_at, id) > (?2, ?4)
     ORDER BY occurred_at, id LIMIT ?6`,
  );
  const seen = new Map<number, number>();
  let read = 0;
  let pages = 0;
  for (const name of new Set((url.searchParams.get("names") ?? "").split(",").filter(Boolean))) {
    for (let at = n("from"), id = 0; ; pages++) {
      const { results } = await statement.bind(url.searchParams.get("panel"), at, n("to"), id, name, n("page")).all<{ id: number; occurred_at: number; contact_id: number }>();
      for (const row of results) seen.set(row.contact_id, (seen.get(row.contact_id) ?? 0) + 1);
      read += results.length;
      if (results.length < n("page")) break;
      ({ occurred_at: at, id } = results.at(-1)!);
    }
  }
  return Response.json({ events: read, contacts: seen.size, pages });
}

/** Where a simulation's time went: milliseconds with some of each kind of I/O in flight, and the steps' own. */
const spans = new Map<string, { ms: number; calls: number; inFlight: number; since: number }>();

/** Runs `work` as a span of `kind`: time counts once while any of that kind is in flight (concurrent reads overlap). */
export async function timed<T>(kind: string, work: () => Promise<T>): Promise<T> {
  // workerd's clock stands still while code runs and moves on at I/O: a timer's turn brings it up
  // to now, so the CPU spent before this call is not counted in the span.
  await new Promise((resolve) => setTimeout(resolve, 0));
  let span = spans.get(kind);
  if (!span) spans.set(kind, (span = { ms: 0, calls: 0, inFlight: 0, since: 0 }));
  span.calls++;
  if (span.inFlight++ === 0) span.since = performance.now();
  try {
    return await work();
  } finally {
    if (--span.inFlight === 0) span.ms += performance.now() - span.since;
  }
}

/** GET /__bench/sim-timings[?reset=1]: the spans so far, by kind. */
export async function simTimings(request: Request): Promise<Response> {
  const answer = Object.fromEntries([...spans].map(([kind, s]) => [kind, { ms: Math.round(s.ms), calls: s.calls }]));
  if (new URL(request.url).searchParams.get("reset") === "1") spans.clear();
  return Response.json(answer);
}

/** The kind of a statement's read, by its SQL, for the simulation's breakdown. */
function kindOf(binding: string, sql: string): string {
  if (binding === "DB") return "d1 control";
  if (/\bevents e\b|event_archive_parts/.test(sql)) return "d1 events";
  if (/journey_simulations/.test(sql)) return "d1 simulation row (the status polls' reads too)";
  if (/\bjourneys\b|journey_versions/.test(sql) && !/contacts/.test(sql)) return "d1 journey";
  return "d1 contacts (attributes, sends, topics, suppressions, devices)";
}

function timedStatement(statement: D1PreparedStatement, kind: string): D1PreparedStatement {
  return new Proxy(statement, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name === "bind") return (...values: unknown[]) => timedStatement(target.bind(...values), kind);
      if (name === "first" || name === "all" || name === "run" || name === "raw") return (...args: unknown[]) => timed(kind, () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function timedDatabase(db: D1Database, binding: string): D1Database {
  return new Proxy(db, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name === "prepare") return (sql: string) => timedStatement(target.prepare(sql), kindOf(binding, sql));
      if (name === "batch") return (statements: D1PreparedStatement[]) => timed(`${binding === "DB" ? "d1 control" : "d1 batch"}`, () => target.batch(statements));
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

function timedBucket(bucket: R2Bucket): R2Bucket {
  return new Proxy(bucket, {
    get(target, name) {
      const value = Reflect.get(target, name, target);
      if (name === "get")
        return (...args: unknown[]) =>
          timed("r2 get", async () => {
            const object = await (value as (...a: unknown[]) => Promise<R2ObjectBody | null>).apply(target, args);
            if (!object) return null;
            // The body is read here, so its time counts (the simulation's state is read whole).
            const text = await object.text();
            return new Proxy(object, { get: (o, key) => (key === "json" ? async () => JSON.parse(text) : key === "text" ? async () => text : Reflect.get(o, key, o)) });
          });
      if (name === "put" || name === "delete") return (...args: unknown[]) => timed(`r2 ${name}`, () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const envs = new WeakMap<Env, Env>();

/** The same bindings, D1 and FILES timed by kind into the spans; one wrapper per env object. */
export function timingEnv(env: Env): Env {
  let wrapped = envs.get(env);
  if (!wrapped) {
    const overrides: Record<string, unknown> = { FILES: timedBucket(env.FILES) };
    for (const [name, value] of Object.entries(env)) if (name === "DB" || /^SHARD_\d+$/.test(name)) overrides[name] = timedDatabase(value as D1Database, name);
    wrapped = { ...env, ...overrides } as Env;
    envs.set(env, wrapped);
  }
  return wrapped;
}
