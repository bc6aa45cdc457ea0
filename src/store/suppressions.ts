import { erasedIdentifier } from "../domain/erasure";
import { stricterStop, SUPPRESSION_REASONS, type SuppressionReason } from "../domain/preferences";
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
 * sends ask the same in their recipients query (store/campaigns/sends.ts), for a whole batch at once.
 */
export async function isAddressSuppressed(db: ShardDb, panelId: string, address: string): Promise<boolean> {
  return (await suppressionOf(db, panelId, address)) !== null;
}

/** An address's stop as stored: the reason, the campaign it came from, when. */
export interface SuppressionRow {
  reason: SuppressionReason;
  campaign_id: string | null;
  created_at: number;
}

/** The keys an address's stop may be kept under: as written, and hashed once its contact was erased (domain/erasure.ts). */
export interface AddressStopKeys {
  plain: string;
  erased: string;
}

/** Hashes once what a read of the address's stop on one or more shards needs. */
export async function addressStopKeys(panelId: string, address: string): Promise<AddressStopKeys> {
  const plain = address.toLowerCase();
  return { plain, erased: await erasedIdentifier(panelId, plain) };
}

/** The address's stop in this panel on `db` (a SuppressionRow, or no row): the stricter when it is kept under both keys. */
export function suppressionRowStatement(db: ShardDb, panelId: string, keys: AddressStopKeys): D1PreparedStatement {
  return db
    .prepare(`SELECT reason, campaign_id, created_at FROM email_suppressions WHERE panel_id = ? AND address IN (?, ?) ORDER BY ${strictness("reason")} DESC LIMIT 1`)
    .bind(panelId, keys.plain, keys.erased);
}

/** Why email to the address is stopped in this panel; null when it is not. */
export async function suppressionOf(db: ShardDb, panelId: string, address: string): Promise<SuppressionReason | null> {
  return (await suppressionRowStatement(db, panelId, await addressStopKeys(panelId, address)).first<SuppressionRow>())?.reason ?? null;
}

/**
 * Why email to the address is stopped for a contact kept on `db`: the stricter of that shard's
 * stop and the panel's `home`'s. On a partitioned panel (decision 0038) a contact's own
 * unsubscribes and bounces are kept on its shard, stops by address written elsewhere (a split's
 * source, an erased address's hash) may be on the home alone; a milder stop of its own (a
 * one-click unsubscribe) must not hide a bounce the home holds. The home is read, beside `db`,
 * only when it is another database.
 */
export async function suppressionHereOrHome(db: ShardDb, home: ShardDb, panelId: string, address: string): Promise<SuppressionReason | null> {
  if (home === db) return suppressionOf(db, panelId, address);
  const keys = await addressStopKeys(panelId, address);
  const [here, there] = await Promise.all([db, home].map((on) => suppressionRowStatement(on, panelId, keys).first<SuppressionRow>()));
  return stricterStop(here, there)?.reason ?? null;
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

/** The panel's first `limit` stopped email addresses on `db`, in address order (its primary key's: no sort). */
export async function suppressedAddressesUpTo(db: ShardDb, panelId: string, limit: number): Promise<string[]> {
  const rows = await db.prepare("SELECT address FROM email_suppressions WHERE panel_id = ? ORDER BY address LIMIT ?").bind(panelId, limit).raw<[string]>();
  return rows.map((row) => row[0]);
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
