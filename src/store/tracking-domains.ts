import type { ShardDb } from "./shards";
/** A panel's tracking domain: the host its email's links use once the CNAME was found. */
export interface TrackingDomain {
  panelId: string;
  domain: string;
  verified: boolean;
  checkedAt: number | null;
  createdAt: number;
}

interface Row {
  panel_id: string;
  domain: string;
  verified: number;
  checked_at: number | null;
  created_at: number;
}

const fromRow = (row: Row): TrackingDomain => ({ panelId: row.panel_id, domain: row.domain, verified: row.verified === 1, checkedAt: row.checked_at, createdAt: row.created_at });

/** Sets the panel's tracking domain; a new domain starts unverified, the same one keeps its state. */
export async function putTrackingDomain(db: ShardDb, panelId: string, domain: string, now: number): Promise<TrackingDomain> {
  const row = await db
    .prepare(
      `INSERT INTO tracking_domains (panel_id, domain, verified, created_at) VALUES (?1, ?2, 0, ?3)
       ON CONFLICT (panel_id) DO UPDATE SET
         verified = CASE WHEN domain = excluded.domain THEN verified ELSE 0 END,
         checked_at = CASE WHEN domain = excluded.domain THEN checked_at ELSE NULL END,
         created_at = CASE WHEN domain = excluded.domain THEN created_at ELSE excluded.created_at END,
         domain = excluded.domain
       RETURNING *`,
    )
    .bind(panelId, domain, now)
    .first<Row>();
  return fromRow(row!);
}

export async function getTrackingDomain(db: ShardDb, panelId: string): Promise<TrackingDomain | null> {
  const row = await db.prepare("SELECT * FROM tracking_domains WHERE panel_id = ?").bind(panelId).first<Row>();
  return row ? fromRow(row) : null;
}

export async function recordTrackingDomainCheck(db: ShardDb, panelId: string, domain: string, verified: boolean, now: number): Promise<TrackingDomain | null> {
  const row = await db
    .prepare("UPDATE tracking_domains SET verified = ?, checked_at = ? WHERE panel_id = ? AND domain = ? RETURNING *")
    .bind(verified ? 1 : 0, now, panelId, domain)
    .first<Row>();
  return row ? fromRow(row) : null;
}

export async function deleteTrackingDomain(db: ShardDb, panelId: string): Promise<boolean> {
  return (await db.prepare("DELETE FROM tracking_domains WHERE panel_id = ?").bind(panelId).run()).meta.changes > 0;
}

/** Whether another panel on this shard uses `domain` as its verified tracking domain. */
export async function trackingDomainHeldElsewhere(db: ShardDb, domain: string, panelId: string): Promise<boolean> {
  const row = await db.prepare("SELECT 1 AS held FROM tracking_domains WHERE domain = ?1 AND panel_id != ?2 AND verified = 1 LIMIT 1").bind(domain, panelId).first();
  return row !== null;
}
