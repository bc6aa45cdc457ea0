import type { ShardDb } from "../../store/shards";

/** A lift of one address's or number's stop on one shard, by the lift's reasons rule; null: nothing to lift. */
export type StopLift = (shard: ShardDb) => D1PreparedStatement | null;

/**
 * A contact's stop lifted on a panel whose partitions span shards (decision 0047, 2026-11-30).
 * A stop (email_suppressions, sms_suppressions) is keyed by address and may be held on several
 * of the panel's shards: a split copies its source's to the target and the source keeps them, a
 * STOP reply or an operator's stop is written on each; and more than the contact's shard reads
 * them (a campaign's part reads the home's too; a simulation and the SMS stops list read every
 * shard). So the lift written on the contact's own shard, in its caller's batch, is made on each
 * of the panel's other `shards` (panelShards) too, by the same statement (the same reasons rule:
 * a stop nobody may lift stays everywhere). None for a panel on one shard: nothing is run.
 *
 * The caller runs this before its own batch. Each delete is idempotent, and every send of the
 * contact reads its own shard: should a delete here or the batch fail, the contact's shard still
 * holds the stop, so the contact stays stopped, its pages show it, and its next try lifts it
 * everywhere. Done after the batch, a failure here could leave a stop the pages do not show
 * (they read the contact's shard and the home: not a third shard's), which no later try
 * would reach. True when one was lifted.
 */
export async function liftOnOtherShards(shards: readonly ShardDb[], own: ShardDb, lifts: readonly StopLift[]): Promise<boolean> {
  const lifted = await Promise.all(
    shards
      .filter((shard) => shard !== own)
      .map(async (shard) => {
        const statements = lifts.flatMap((lift) => lift(shard) ?? []);
        return statements.length > 0 && (await shard.batch(statements)).some((result) => result.meta.changes > 0);
      }),
  );
  return lifted.some(Boolean);
}
