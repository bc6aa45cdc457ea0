export interface EmailEventRecord {
  id: string;
  panelId: string;
  event: string;
  msgid: string;
  campaignId: string | null;
  contactId: number | null;
  address: string | null;
  detail: Record<string, unknown> | null;
  at: number;
}

export async function insertEmailEvents(db: D1Database, events: readonly EmailEventRecord[]): Promise<void> {
  if (events.length === 0) return;
  const insert = db.prepare(
    `INSERT INTO email_events (id, panel_id, event, msgid, campaign_id, contact_id, address, detail, at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
  );
  await db.batch(
    events.map((e) => insert.bind(e.id, e.panelId, e.event, e.msgid, e.campaignId, e.contactId, e.address, e.detail ? JSON.stringify(e.detail) : null, e.at)),
  );
}

export async function listEmailEvents(db: D1Database, panelId: string, limit: number): Promise<EmailEventRecord[]> {
  const { results } = await db
    .prepare("SELECT * FROM email_events WHERE panel_id = ? ORDER BY at DESC, rowid DESC LIMIT ?")
    .bind(panelId, limit)
    .all<{ id: string; panel_id: string; event: string; msgid: string; campaign_id: string | null; contact_id: number | null; address: string | null; detail: string | null; at: number }>();
  return results.map((r) => ({
    id: r.id,
    panelId: r.panel_id,
    event: r.event,
    msgid: r.msgid,
    campaignId: r.campaign_id,
    contactId: r.contact_id,
    address: r.address,
    detail: r.detail ? (JSON.parse(r.detail) as Record<string, unknown>) : null,
    at: r.at,
  }));
}
