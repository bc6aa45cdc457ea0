import type { ShardDb } from "./shards";

export async function pushOptedOut(db: ShardDb, panelId: string, contactId: number): Promise<boolean> {
  return (await db.prepare("SELECT 1 AS x FROM push_optouts WHERE panel_id = ? AND contact_id = ?").bind(panelId, contactId).first()) !== null;
}

export async function setPushOptOut(db: ShardDb, panelId: string, contactId: number, optedOut: boolean, now: number): Promise<void> {
  const statement = optedOut
    ? db.prepare("INSERT INTO push_optouts (panel_id, contact_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING").bind(panelId, contactId, now)
    : db.prepare("DELETE FROM push_optouts WHERE panel_id = ? AND contact_id = ?").bind(panelId, contactId);
  await statement.run();
}
