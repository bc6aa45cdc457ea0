// Baseline for bench:panel: one bare indexed D1 lookup of a contact by primary-key value.
export async function baselineContactLookup(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const row = await env.SHARD_0.prepare("SELECT id, pk_value, attrs FROM contacts WHERE panel_id = ? AND pk_value = ?")
    .bind(url.searchParams.get("panel") ?? "", url.searchParams.get("key") ?? "")
    .first();
  return new Response(JSON.stringify(row));
}

/** Fills a panel with `count` contacts (c0000001@example.com..., with NAME and EMAIL) in one statement, for the benchmark. */
export async function seedContacts(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const count = Number(url.searchParams.get("count") ?? "0");
  const from = Number(url.searchParams.get("from") ?? "1");
  const result = await env.SHARD_0.prepare(
    `INSERT INTO contacts (panel_id, pk_value, attrs, created_at, updated_at)
     WITH RECURSIVE seq(n) AS (SELECT ? UNION ALL SELECT n + 1 FROM seq WHERE n < ?)
     SELECT ?, 'c' || printf('%07d', n) || '@example.com', json_object('NAME', 'Contact ' || n, 'EMAIL', 'c' || printf('%07d', n) || '@example.com'), 0, 0 FROM seq`,
  )
    .bind(from, from + count - 1, url.searchParams.get("panel") ?? "")
    .run();
  return new Response(JSON.stringify({ inserted: result.meta.changes }));
}

/**
 * Baseline for bench:panel's "contains" search (decision 0045): the bounded scan's two statements,
 * bare, as they were (`variant=parse`: every row of the window's JSON parsed) or with the stored
 * JSON text looked at first (`variant=raw`), over a window of `rows` contacts; A/B in one run.
 */
export async function baselineContainsScan(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const rows = Number(url.searchParams.get("rows") ?? "50000");
  const pattern = `%${(url.searchParams.get("q") ?? "").replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const raw = url.searchParams.get("variant") === "raw" ? "attrs LIKE ?2 ESCAPE '\\' AND " : "";
  const window = (columns: string) => `SELECT ${columns} FROM contacts WHERE panel_id = ?1 ORDER BY pk_value LIMIT ?3`;
  const [found, extent] = await env.SHARD_0.batch([
    env.SHARD_0.prepare(
      `SELECT id, pk_value, attrs, created_at, updated_at FROM (${window("id, pk_value, attrs, created_at, updated_at")})
       WHERE ${raw}json_extract(attrs, '$.NAME') LIKE ?2 ESCAPE '\\' ORDER BY pk_value LIMIT 26`,
    ).bind(url.searchParams.get("panel") ?? "", pattern, rows),
    env.SHARD_0.prepare(`SELECT count(*) AS scanned, max(pk_value) AS last FROM (${window("pk_value")})`).bind(url.searchParams.get("panel") ?? "", pattern, rows),
  ]);
  return new Response(JSON.stringify({ found: found!.results.length, extent: extent!.results[0] }));
}
