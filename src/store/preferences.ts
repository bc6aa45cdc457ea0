import type { ShardDb } from "./shards";

export async function pushOptedOut(db: ShardDb, panelId: string, contactId: number): Promise<boolean> {
  return (await db.prepare("SELECT 1 AS x FROM push_optouts WHERE panel_id = ? AND contact_id = ?").bind(panelId, contactId).first()) !== null;
}

export async function setPushOptOut(db: ShardDb, panelId: string, contactId: number, optedOut: boolean, now: number): Promise<void> {
  await setPushOptOutStatement(db, panelId, contactId, optedOut, now).run();
}

/** setPushOptOut as a statement for the caller's batch. */
export function setPushOptOutStatement(db: ShardDb, panelId: string, contactId: number, optedOut: boolean, now: number): D1PreparedStatement {
  return optedOut
    ? db
        // The contact's bucket (decision 0038), read in the same statement.
        .prepare(
          `INSERT INTO push_optouts (panel_id, contact_id, created_at, bucket)
           VALUES (?1, ?2, ?3, COALESCE((SELECT bucket FROM contacts WHERE panel_id = ?1 AND id = ?2), 0)) ON CONFLICT DO NOTHING`,
        )
        .bind(panelId, contactId, now)
    : db.prepare("DELETE FROM push_optouts WHERE panel_id = ? AND contact_id = ?").bind(panelId, contactId);
}

/** Which of these contacts turned push notifications off, in one read (a simulation's page of contacts). */
export async function pushOptedOutOf(db: ShardDb, panelId: string, contactIds: readonly number[]): Promise<Map<number, true>> {
  if (contactIds.length === 0) return new Map();
  const { results } = await db
    .prepare("SELECT contact_id FROM push_optouts WHERE panel_id = ? AND contact_id IN (SELECT value FROM json_each(?))")
    .bind(panelId, JSON.stringify(contactIds))
    .all<{ contact_id: number }>();
  return new Map(results.map((r) => [r.contact_id, true]));
}
