import { panelHome } from "../../access/shards";
import type { ShardDb } from "../../../store/shards";
import { suppressAddressStatement, type SuppressionReason } from "../../../store/suppressions";

/**
 * Stops the addresses a provider's bounce or complaint names (campaign and journey email alike).
 * `db` holds the message and its contact: its own address is stopped there, where that
 * contact's sends read it. A report may name other addresses too, whose contacts may be on
 * another shard of a partitioned panel (decision 0038); every shard's sends read the home's
 * stops beside their own (broadcasts/send.ts, journeys/messages.ts), so those are stopped on the
 * home as well. A panel without a map, or a message on the home, writes `db` alone, as before.
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
  const others = all.filter((address) => address !== own);
  const home = others.length ? (await panelHome(env, message.panelId)).db : db;
  const stops = (on: ShardDb, list: readonly string[]) => on.batch(list.map((address) => suppressAddressStatement(on, message.panelId, address, reason, message.campaignId, now)));
  await Promise.all([stops(db, all), ...(home !== db ? [stops(home, others)] : [])]);
}
