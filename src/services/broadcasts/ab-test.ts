import { decisionAt, variantLabel, type AbGroupFigures, type AbTest, type AbTestInput, type AbTestResults, type AbTestView } from "../../domain/ab-test";
import { refused } from "../../lib/problems";
import { abWaitFrom, setCampaignAbTest, type AbGroupTally } from "../../store/campaigns/ab-tests";
import { type Campaign } from "../../store/campaigns/definitions";
import { isoTime } from "../../store/sql";
import { recordAudit, type Auditor } from "../audit/record";
import { answer, freshBodyKey, fromStates, load, raced, type CampaignOutcome, type LifecycleContext } from "./lifecycle";
import { abTalliesAcross, share, type CampaignShards } from "./report";

// A campaign's A/B test (issue 43, item 7; domain/ab-test.ts). Set or removed while the campaign
// may be edited; at publication its recipients are split (store/campaigns/publish.ts abRankStep, in steps: decision 0055),
// the test share goes out, the rest is held; after the wait the cron's decision step (ab-decision.ts) picks the
// winner and releases the rest to it. The campaign stays `sending` through the wait, so pause
// and cancel work as for any campaign: a paused one is decided after its resume, a cancelled
// one never (its held rest is settled as skipped with the other queued recipients).
// A panel spread over shards (decision 0038 step 4): each shard splits its own recipients, the
// decision sums every shard's figures, and the results shown are summed the same way.

/** Sets (or replaces) the campaign's test; each variant's own body is stored under a fresh key. */
export async function setAbTest(ctx: LifecycleContext, id: string, input: AbTestInput, by: Auditor): Promise<CampaignOutcome> {
  const { env, db, panel, now } = ctx;
  const loaded = await load(ctx, id, "edit");
  if (!loaded.ok) return loaded;
  const campaign = loaded.value;
  const variants: AbTest["variants"] = [];
  for (const variant of input.variants) {
    let bodyKey: string | null = null;
    if (variant.html !== undefined) {
      bodyKey = freshBodyKey(campaign);
      await env.FILES.put(bodyKey, variant.html, { httpMetadata: { contentType: "text/html; charset=utf-8" } });
    }
    variants.push({ subject: variant.subject ?? null, body_key: bodyKey });
  }
  const test: AbTest = { variants, test_share: input.test_share, metric: input.metric, wait_minutes: input.wait_minutes };
  const set = await setCampaignAbTest(db, panel.id, id, fromStates("edit", campaign.status), test, now);
  if (!set) return raced(ctx, id, "edit");
  await recordAudit(db, panel.id, by, "campaign.ab_test_set", id, { variants: variants.length, test_share: test.test_share, metric: test.metric, wait_minutes: test.wait_minutes });
  return answer(ctx, set);
}

/** Removes the campaign's test: it sends its own subject and body to everyone. */
export async function removeAbTest(ctx: LifecycleContext, id: string, by: Auditor): Promise<CampaignOutcome> {
  const { db, panel, now } = ctx;
  const loaded = await load(ctx, id, "edit");
  if (!loaded.ok) return loaded;
  if (!loaded.value.abTest) return refused("not_found", [{ field: "ab_test", message: "the campaign has no A/B test" }], "The campaign has no A/B test");
  const set = await setCampaignAbTest(db, panel.id, id, fromStates("edit", loaded.value.status), null, now);
  if (!set) return raced(ctx, id, "edit");
  await recordAudit(db, panel.id, by, "campaign.ab_test_removed", id, {});
  return answer(ctx, set);
}

function figures(tally: AbGroupTally | undefined): AbGroupFigures {
  const t = tally ?? { recipients: 0, sent: 0, opens: 0, unique_opens: 0, clicks: 0, unique_clicks: 0 };
  return {
    recipients: t.recipients,
    sent: t.sent,
    opens: t.opens,
    unique_opens: t.unique_opens,
    clicks: t.clicks,
    unique_clicks: t.unique_clicks,
    open_rate: share(t.unique_opens, t.sent),
    click_rate: share(t.unique_clicks, t.sent),
  };
}

/** When the winner is (or was) due: unknown while recipients are still inserted (on the home, or on any other shard of a spread panel's campaign). */
async function decideAt(shards: CampaignShards, campaign: Campaign, test: AbTest): Promise<string | null> {
  if (campaign.publishedAt === null || campaign.publishing) return null;
  if (shards.length === 1) return isoTime(decisionAt(campaign.publishedEndAt ?? campaign.publishedAt, test));
  const from = await abWaitFrom(shards[0], campaign.id);
  return from === null ? null : isoTime(decisionAt(from, test));
}

/** The test's variants side by side (each one's test recipients), the rest, and the winner, summed over the campaign's shards (the home first); null without a test. */
export async function abTestResults(shards: CampaignShards, campaign: Campaign): Promise<AbTestResults | null> {
  const test = campaign.abTest;
  if (!test) return null;
  const tallies = campaign.publishedAt === null ? [] : await abTalliesAcross(shards, campaign.panelId, campaign.id);
  const rest = tallies.filter((t) => t.group === "rest");
  const restSum = rest.reduce<AbGroupTally | undefined>(
    (sum, t) =>
      sum
        ? { ...sum, recipients: sum.recipients + t.recipients, sent: sum.sent + t.sent, opens: sum.opens + t.opens, unique_opens: sum.unique_opens + t.unique_opens, clicks: sum.clicks + t.clicks, unique_clicks: sum.unique_clicks + t.unique_clicks }
        : t,
    undefined,
  );
  const winner = campaign.abWinner;
  return {
    metric: test.metric,
    test_share: test.test_share,
    wait_minutes: test.wait_minutes,
    // Counted from the end of publication (its last step).
    decide_at: await decideAt(shards, campaign, test),
    winner: winner === null ? null : variantLabel(winner),
    variants: test.variants.map((variant, index) => ({
      label: variantLabel(index),
      subject: variant.subject ?? campaign.subject,
      own_html: variant.body_key !== null,
      winner: winner === index,
      ...figures(tallies.find((t) => t.group === "test" && t.variant === index)),
    })),
    rest: { variant: winner === null ? null : variantLabel(winner), ...figures(restSum) },
  };
}

/** The test as set, with each variant's own body, and its results so far; null without a test. */
export async function abTestOf(files: R2Bucket, shards: CampaignShards, campaign: Campaign): Promise<AbTestView | null> {
  const test = campaign.abTest;
  const results = await abTestResults(shards, campaign);
  if (!test || !results) return null;
  const variants = await Promise.all(
    test.variants.map(async (variant, index) => ({
      label: variantLabel(index),
      subject: variant.subject,
      html: variant.body_key === null ? null : ((await (await files.get(variant.body_key))?.text()) ?? null),
    })),
  );
  return { variants, test_share: test.test_share, metric: test.metric, wait_minutes: test.wait_minutes, results };
}
