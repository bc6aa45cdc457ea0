import { erasedIdentifier } from "../domain/erasure";
import { SUPPRESSION_REASONS, type SuppressionReason } from "../domain/preferences";
import { jsonArrays } from "./json-arrays";
import type { ShardDb } from "./shards";
export type { SuppressionReason };

/** How strict a stored reason is (SUPPRESSION_REASONS is mildest first), as SQL over `column`. */
const strictness = (column: string) => `CASE ${column} ${SUPPRESSION_REASONS.map((reason, rank) => `WHEN '${reason}' THEN ${rank}`).join(" ")} END`;

/**
 * Stops campaign and journey email to the address in this panel. A stricter reason replaces a
 * milder one (a complaint after an unsubscribe must not be lifted as an unsubscribe); otherwise
 * the first reason recorded stays.
 */
export async function suppressAddress(
  db: ShardDb,
  panelId: string,
  address: string,
  reason: SuppressionReason,
  campaignId: string | null,
  now: number,
): Promise<void> {
  await suppressAddressStatement(db, panelId, address, reason, campaignId, now).run();
}

/** suppressAddress as a statement, for a caller that writes it in one batch with its consent record. */
export function suppressAddressStatement(db: ShardDb, panelId: string, address: string, reason: SuppressionReason, campaignId: string | null, now: number): D1PreparedStatement {
  return db
    .prepare(
      `INSERT INTO email_suppressions (panel_id, address, reason, campaign_id, created_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (panel_id, address) DO UPDATE SET reason = excluded.reason, campaign_id = excluded.campaign_id, created_at = excluded.created_at
       WHERE ${strictness("excluded.reason")} > ${strictness("email_suppressions.reason")}`,
    )
    .bind(panelId, address.toLowerCase(), reason, campaignId, now);
}

/**
 * Whether email to the address is stopped in this panel (unsubscribed, complained or hard-bounced). Campaign
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

/**
 * Why email to the address is stopped for a contact kept on `db`: that shard's stop, else the
 * panel's `home`'s. On a partitioned panel (decision 0038) a contact's own unsubscribes and
 * bounces are kept on its shard, stops by address written elsewhere (a bounce or complaint
 * naming it on another contact's message, a split's source, an erased address) on the home;
 * the home is read only when it is another database and `db` has none.
 */
export async function suppressionHereOrHome(db: ShardDb, home: ShardDb, panelId: string, address: string): Promise<SuppressionReason | null> {
  return (await suppressionOf(db, panelId, address)) ?? (home === db ? null : await suppressionOf(home, panelId, address));
}

/**
 * Takes back the address's suppression when its reason is one of `reasons` (who may lift which:
 * domain/preferences.ts LIFTABLE_SUPPRESSIONS); any other stays. True when one was lifted.
 */
export async function liftSuppression(db: ShardDb, panelId: string, address: string, reasons: readonly SuppressionReason[]): Promise<boolean> {
  const statement = liftSuppressionStatement(db, panelId, address, reasons);
  return statement ? (await statement.run()).meta.changes > 0 : false;
}

/** liftSuppression as a statement for the caller's batch; null when no reason may be lifted. */
export function liftSuppressionStatement(db: ShardDb, panelId: string, address: string, reasons: readonly SuppressionReason[]): D1PreparedStatement | null {
  if (!reasons.length) return null;
  return db
    .prepare(`DELETE FROM email_suppressions WHERE panel_id = ? AND address = ? AND reason IN (${reasons.map(() => "?").join(", ")})`)
    .bind(panelId, address.toLowerCase(), ...reasons);
}

/** The panel's suppressed email addresses, counted up to `cap`. */
export async function suppressionsUpTo(db: ShardDb, panelId: string, cap: number): Promise<number> {
  const row = await db.prepare("SELECT COUNT(*) AS n FROM (SELECT 1 FROM email_suppressions WHERE panel_id = ?1 LIMIT ?2)").bind(panelId, cap).first<{ n: number }>();
  return row!.n;
}

/**
 * The suppressions of these addresses (already trimmed and lowercased): address to reason. One
 * read, or one per JSON array when they do not fit one bound value (store/json-arrays.ts).
 */
export async function suppressionsOf(db: ShardDb, panelId: string, addresses: readonly string[]): Promise<Map<string, SuppressionReason>> {
  const found = new Map<string, SuppressionReason>();
  for (const { json } of jsonArrays(addresses)) {
    const { results } = await db
      .prepare("SELECT address, reason FROM email_suppressions WHERE panel_id = ? AND address IN (SELECT value FROM json_each(?))")
      .bind(panelId, json)
      .all<{ address: string; reason: SuppressionReason }>();
    for (const r of results) found.set(r.address, r.reason);
  }
  return found;
}
