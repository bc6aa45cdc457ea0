// Seeding and baseline for bench:panel's audience estimate: list memberships written straight
// into D1 (the counter trigger keeps the list's member_count as a real add does), and a bare
// COUNT of one list's members, the least an audience count can cost.

/** Puts the panel's contacts from the `from`-th (0-based, by id) on, `count` of them, into list `list`. */
export async function seedListMembers(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const panel = url.searchParams.get("panel") ?? "";
  const first = await env.SHARD_0.prepare("SELECT MIN(id) AS id FROM contacts WHERE panel_id = ?").bind(panel).first<{ id: number }>();
  const from = first!.id + Number(url.searchParams.get("from") ?? "0");
  const count = Number(url.searchParams.get("count") ?? "0");
  const result = await env.SHARD_0.prepare(
    "INSERT INTO list_members (list_id, contact_id, panel_id, added_at) SELECT ?1, id, panel_id, 0 FROM contacts WHERE panel_id = ?2 AND id >= ?3 AND id < ?4",
  )
    .bind(Number(url.searchParams.get("list")), panel, from, from + count)
    .run();
  return Response.json({ inserted: result.meta.changes });
}

/** Baseline: a bare COUNT of a list's members. */
export async function baselineListCount(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const row = await env.SHARD_0.prepare("SELECT COUNT(*) AS n FROM list_members WHERE list_id = ?1 AND panel_id = ?2")
    .bind(Number(url.searchParams.get("list")), url.searchParams.get("panel") ?? "")
    .first<{ n: number }>();
  return Response.json({ count: row!.n });
}
