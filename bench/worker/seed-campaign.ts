// Seeding for bench:panel's campaign report: a sent campaign to the panel's contacts, written
// straight into D1. Its messages are inserted queued and then marked sent, opened and clicked
// by UPDATEs, so the aggregates are built by their trigger as a real send builds them.

/** Creates the campaign `campaign` (status sent) with `recipients` recipients. */
export async function seedCampaign(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const panel = url.searchParams.get("panel") ?? "";
  const campaign = url.searchParams.get("campaign") ?? "";
  const recipients = Number(url.searchParams.get("recipients") ?? "0");
  await env.SHARD_0.prepare(
    `INSERT INTO campaigns (id, panel_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key, status, recipients, request_id, created_at, published_at, finished_at, updated_at, audience)
     VALUES (?2, ?1, 'Bench report', 'News', 'Shop', 'shop@example.com', '[]', '2026-01-01 10:00:00', 0, 'bench', 'sent', ?3, 'req', 0, 0, 0, 0,
       '{"lists":[],"segments":[],"exclude_lists":[],"exclude_segments":[]}')`,
  )
    .bind(panel, campaign, recipients)
    .run();
  return new Response(JSON.stringify({ campaign }));
}

/** Adds the panel's contacts from the `from`-th (0-based, by id) on as recipients, `count` of them, then sends, opens and clicks some. */
export async function seedCampaignMessages(request: Request, env: Env): Promise<Response> {
  const url = new URL(request.url);
  const panel = url.searchParams.get("panel") ?? "";
  const campaign = url.searchParams.get("campaign") ?? "";
  const first = await env.SHARD_0.prepare("SELECT MIN(id) AS id FROM contacts WHERE panel_id = ?").bind(panel).first<{ id: number }>();
  const from = first!.id + Number(url.searchParams.get("from") ?? "0");
  const count = Number(url.searchParams.get("count") ?? "0");
  const now = Date.now();
  const range = "campaign_id = ?1 AND contact_id >= ?2 AND contact_id < ?3";
  const results = await env.SHARD_0.batch([
    env.SHARD_0.prepare(
      `INSERT INTO campaign_messages (campaign_id, contact_id, panel_id, batch, status, address)
       SELECT ?1, id, panel_id, id / 1000, 'queued', pk_value FROM contacts WHERE panel_id = ?4 AND id >= ?2 AND id < ?3`,
    ).bind(campaign, from, from + count, panel),
    env.SHARD_0.prepare(`UPDATE campaign_messages SET status = 'sent', sent_at = ?4 WHERE ${range}`).bind(campaign, from, from + count, now),
    env.SHARD_0.prepare(`UPDATE campaign_messages SET opens = opens + 1, first_open_at = ?4 WHERE ${range} AND contact_id % 3 = 0`).bind(campaign, from, from + count, now),
    env.SHARD_0.prepare(`UPDATE campaign_messages SET clicks = clicks + 1, first_click_at = ?4 WHERE ${range} AND contact_id % 10 = 0`).bind(campaign, from, from + count, now),
    env.SHARD_0.prepare(
      `INSERT INTO campaign_link_clicks (campaign_id, url, panel_id, clicks) VALUES (?1, 'https://shop.example.com/sale', ?2, ?3)
       ON CONFLICT (campaign_id, url) DO UPDATE SET clicks = clicks + excluded.clicks`,
    ).bind(campaign, panel, Math.floor(count / 10)),
  ]);
  return new Response(JSON.stringify({ inserted: results[0]!.meta.changes }));
}
