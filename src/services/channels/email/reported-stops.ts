import { panelShards } from "../../access/partitions";
import { panelHome } from "../../access/shards";
import type { ShardDb } from "../../../store/shards";
import { suppressAddressStatement, type SuppressionReason } from "../../../store/suppressions";

/**
 * Stops the addresses a provider's bounce or complaint names (campaign and journey email alike).
 * `db` holds the message and its contact: its own address is stopped there, where that
 * contact's sends read it. A report may name other addresses too, whose contacts may be on
 * any shard of a partitioned panel (decision 0038): those are stopped on every shard of the
 * panel, as an SMS STOP is, so each shard's sends, pages and segment conditions (a
 * `reachable: email` reads its own shard's stops) see them there. When `db` is the home, the
 * message's own address is too: every shard's sends read the home's stops, so its segment
 * conditions must hold them as well (home-stop-copies.ts). A panel without a map writes `db`
 * alone, as before.
 */
export async function stopReportedAddresses(
  env: Env,
  db: ShardDb,
  message: { panelId: string; address: string | null; campaignId: string | null },
  addresses: Iterable<string>,
  reason: SuppressionReason,
  now: number,
): Promise<void> {
  const all = [...new Set([...addresses].map((address) => address.toLowerCase()))];
  if (all.length === 0) return;
  const own = message.address?.toLowerCase();
  const home = await panelHome(env, message.panelId);
  const spread = home.db === db ? all : all.filter((address) => address !== own);
  const elsewhere = spread.length ? panelShards(env, home.panel, home.db).filter((shard) => shard !== db) : [];
  const stops = (on: ShardDb, list: readonly string[]) => on.batch(list.map((address) => suppressAddressStatement(on, message.panelId, address, reason, message.campaignId, now)));
  await Promise.all([stops(db, all), ...elsewhere.map((shard) => stops(shard, spread))]);
}
