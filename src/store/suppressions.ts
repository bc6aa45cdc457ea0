export type SuppressionReason = "unsubscribe" | "hard_bounce";

/** Stops campaign email to the address in this panel; the first reason recorded stays. */
export async function suppressAddress(
  db: D1Database,
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
