import { panelShards, type PanelShards } from "../../access/partitions";
import { panelHome } from "../../access/shards";
import type { ShardDb } from "../../../store/shards";
import { suppressAddressStatement, type SuppressionReason } from "../../../store/suppressions";

/** One stop by address, as suppressAddressStatement writes it. */
export interface AddressStop {
  panelId: string;
  address: string;
  reason: SuppressionReason;
  campaignId: string | null;
}

/**
 * A stop by address the panel's home records is written on each of the panel's other shards too
 * (decision 0038, "Stops by address"). Every send of a contact off the home reads its own shard's
 * stops and the home's, but a saved segment's or a segment journey's `reachable: email` is one
 * statement on one shard and reads that shard's alone: a stop held on the home only (another
 * contact's of the same address, an operator's change of a home contact's preferences) left the
 * contact in the segment while every send skipped it. A stop recorded on another shard needs no
 * copy: only that shard's sends and statements read it. None for a panel on one shard.
 *
 * The caller runs this before its own batch on the home: each write is idempotent (the stricter
 * reason kept), and should the home's batch fail, its retry writes both again; the reverse order
 * could leave the home's stop without its copies, which no later write would bring.
 */
export async function copyHomeStops(shards: PanelShards, own: ShardDb, stops: readonly AddressStop[], now: number): Promise<void> {
  if (own !== shards[0] || shards.length === 1 || stops.length === 0) return;
  await Promise.all(shards.slice(1).map((shard) => shard.batch(stops.map((s) => suppressAddressStatement(shard, s.panelId, s.address, s.reason, s.campaignId, now)))));
}

/** copyHomeStops for a caller holding the panel's id, not its shards (one directory read, cached). */
export async function copyHomeStopsOf(env: Env, own: ShardDb, stops: readonly AddressStop[], now: number): Promise<void> {
  if (stops.length === 0) return;
  const { panel, db: home } = await panelHome(env, stops[0]!.panelId);
  await copyHomeStops(panelShards(env, panel, home), own, stops, now);
}
