import { pickWinner } from "../../domain/ab-test";
import { abGroupTallies, abTestsDue, completeCampaignIfDone, decideAbTest, unsentBatches } from "../../store/campaigns";
import type { ShardDb } from "../../store/shards";
import { enqueueSendBatches } from "./send";

/** Tests decided per cron minute and shard; the rest wait a minute. */
const DECIDE_PER_RUN = 20;

/**
 * The cron's decision step: each sending campaign whose test waited long enough gets its winner
 * (most unique opens or clicks among its test recipients, a tie to the first variant), and its
 * rest is released to it and nudged. The decision and the release are one transaction taken
 * once (decideAbTest); a crash before the nudges leaves batches the stalled-campaign sweep
 * nudges a minute later, and a repeated nudge finds nothing left to claim.
 */
export async function decideDueAbTests(env: Pick<Env, "SENDS">, db: ShardDb, now: number): Promise<number> {
  let decided = 0;
  for (const campaign of await abTestsDue(db, now, DECIDE_PER_RUN)) {
    const test = campaign.abTest!;
    const tallies = (await abGroupTallies(db, campaign.panelId, campaign.id)).filter((t) => t.group === "test").map((t) => ({ ...t, variant: t.variant! }));
    const winner = pickWinner(tallies, test.metric, test.variants.length);
    if (!(await decideAbTest(db, campaign.panelId, campaign.id, winner, now))) continue;
    decided++;
    const batches = await unsentBatches(db, campaign.id);
    if (batches.length) await enqueueSendBatches(env, campaign, batches);
    else await completeCampaignIfDone(db, campaign.panelId, campaign.id, now);
  }
  return decided;
}
