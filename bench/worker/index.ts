// The benchmark build: the service itself plus baseline routes that do one bare D1 operation
// and nothing else, so each benchmark compares the service with the platform's floor in the
// same runtime and the same run. Never deployed.
import service from "../../src/index";

export * from "../../src/index";

let baselineReady: Promise<unknown> | undefined;

function ensureBaselineTable(db: D1Database): Promise<unknown> {
  baselineReady ??= db
    .prepare(
      `CREATE TABLE IF NOT EXISTS bench_baseline (
         id INTEGER PRIMARY KEY AUTOINCREMENT, panel_id TEXT NOT NULL, pk_value TEXT NOT NULL,
         attrs TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, UNIQUE (panel_id, pk_value))`,
    )
    .run();
  return baselineReady;
}

export default {
  ...service,
  async fetch(request, env, exec) {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/insert") {
      await ensureBaselineTable(env.DB);
      const now = Date.now();
      await env.DB.prepare("INSERT INTO bench_baseline (panel_id, pk_value, attrs, created_at, updated_at) VALUES (?, ?, ?, ?, ?)")
        .bind("bench", url.searchParams.get("key") ?? crypto.randomUUID(), url.searchParams.get("attrs") ?? "{}", now, now)
        .run();
      return new Response("ok");
    }
    return service.fetch(request, env, exec);
  },
} satisfies ExportedHandler<Env>;
