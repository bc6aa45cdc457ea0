import { erasedIdentifier } from "../domain/erasure";
import type { ShardDb } from "./shards";
export type SuppressionReason = "unsubscribe" | "hard_bounce";

/** Stops campaign email to the address in this panel; the first reason recorded stays. */
export async function suppressAddress(
  db: ShardDb,
  panelId: string,
  address: string,
  reason: SuppressionReason,
  campaignId: string | null,
  now: number,
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO email_suppressions (panel_id, address, reason, campaign_id, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (panel_id, address) DO NOTHING`,
    )
    .bind(panelId, address.toLowerCase(), reason, campaignId, now)
    .run();
}

/**
 * Whether email to the address is stopped in this panel (unsubscribed or hard-bounced). Campaign
 * sends ask the same in their recipients query (store/campaigns.ts), for a whole batch at once.
 */
export async function isAddressSuppressed(db: ShardDb, panelId: string, address: string): Promise<boolean> {
  return (await suppressionOf(db, panelId, address)) !== null;
}

/** Why email to the address is stopped in this panel; null when it is not. */
export async function suppressionOf(db: ShardDb, panelId: string, address: string): Promise<SuppressionReason | null> {
  const plain = address.toLowerCase();
  // An erased contact's stop is kept under a hash of its address (domain/erasure.ts).
  const row = await db
    .prepare("SELECT reason FROM email_suppressions WHERE panel_id = ? AND address IN (?, ?) LIMIT 1")
    .bind(panelId, plain, await erasedIdentifier(panelId, plain))
    .first<{ reason: SuppressionReason }>();
  return row?.reason ?? null;
}

/** Takes back an unsubscribe (the recipient subscribed again); a hard bounce is not lifted. */
export async function liftUnsubscribe(db: ShardDb, panelId: string, address: string): Promise<boolean> {
  const result = await db.prepare("DELETE FROM email_suppressions WHERE panel_id = ? AND address = ? AND reason = 'unsubscribe'").bind(panelId, address.toLowerCase()).run();
  return result.meta.changes > 0;
}
