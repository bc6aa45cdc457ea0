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
