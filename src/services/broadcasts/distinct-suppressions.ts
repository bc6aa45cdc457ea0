import type { ShardDb } from "../../store/shards";
import { suppressedAddressesUpTo, suppressionsOf, suppressionsUpTo } from "../../store/suppressions";

/** How far distinctSuppressions reads. */
export interface DistinctSuppressionsBounds {
  /** Each shard's stops are counted up to this many (more reads as this many). */
  countUpTo: number;
  /** Each shard past the first compares at most this many of its addresses with the shards before it. */
  compareUpTo: number;
}

/**
 * The panel's stopped email addresses over its `shards` (the home first), each address counted
 * once. An address is often stopped on several shards (decision 0038, "Stops by address": a stop
 * the home records is written on every shard, a report's other addresses too, a split's target
 * takes its source's), so summing each shard's count took it several times. Each shard after the
 * first counts only its addresses no shard before it holds: it reads its first `compareUpTo`
 * addresses and looks them up on each shard before it (one read each, store/json-arrays.ts).
 * Exact when a shard holds at most that many; past it, that shard's share of addresses held
 * before is taken from those first ones (in address order, so not a random sample) and applied
 * to its count. So a request reads at most `compareUpTo` addresses a shard, never a whole table.
 */
export async function distinctSuppressions(shards: readonly ShardDb[], panelId: string, bounds: DistinctSuppressionsBounds): Promise<number> {
  const counts = await Promise.all(shards.map((shard) => suppressionsUpTo(shard, panelId, bounds.countUpTo)));
  const shares = await Promise.all(
    shards.map(async (shard, i) => {
      if (i === 0 || counts[i] === 0) return counts[i]!;
      const compared = await suppressedAddressesUpTo(shard, panelId, bounds.compareUpTo);
      const heldBefore = new Set<string>();
      for (const before of await Promise.all(shards.slice(0, i).map((earlier) => suppressionsOf(earlier, panelId, compared)))) for (const address of before.keys()) heldBefore.add(address);
      const fresh = compared.length - heldBefore.size;
      if (compared.length === counts[i] || compared.length === 0) return fresh;
      return Math.round((counts[i]! * fresh) / compared.length);
    }),
  );
  return shares.reduce((a, b) => a + b, 0);
}
