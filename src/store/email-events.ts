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
