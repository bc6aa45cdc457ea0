import { publishDueBroadcasts } from "../../src/services/broadcasts/publish";

/**
 * Baseline for bench:segments: one hand-written SQL query answering what the benchmark's
 * three-condition segment asks (CITY is Pune, in the list, purchased at least twice in 30
 * days), exact-match and without the compiler's generality, through the same D1.
 */
export async function baselineSegmentCount(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const panel = url.searchParams.get("panel") ?? "";
  const list = Number(url.searchParams.get("list"));
  const activity = url.searchParams.get("activity") ?? "";
  const since = Date.now() - 30 * 86_400_000;
  const row = await env.SHARD_0.prepare(
    `SELECT COUNT(*) AS n FROM contacts c
     WHERE c.panel_id = ?1 AND json_extract(c.attrs, '$.CITY') = 'Pune'
       AND c.id IN (SELECT contact_id FROM list_members WHERE list_id = ?2)
       AND c.id IN (SELECT contact_id FROM events WHERE panel_id = ?1 AND channel = 'custom_activity' AND name = ?3 AND occurred_at >= ?4
                    GROUP BY contact_id HAVING COUNT(*) >= 2)`,
  )
    .bind(panel, list, activity, since)
    .first<{ n: number }>();
  return Response.json({ count: row!.n });
}

/**
 * Runs the publish cron task once, as the per-minute trigger would (at `?at=`, epoch ms, when
 * given: the next minute's tick, for a campaign sent now), and says how long it took.
 */
export async function benchPublishDue(request: Request, env: Env): Promise<Response> {
  const started = Date.now();
  const at = new URL(request.url).searchParams.get("at");
  await publishDueBroadcasts(env, at ? Number(at) : Date.now());
  return Response.json({ ms: Date.now() - started });
}
