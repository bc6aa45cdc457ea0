-- Issue 43, item 7: A/B tests of a campaign (domain/ab-test.ts).
-- campaigns.ab_test: JSON {"variants":[{"subject","body_key"}],"test_share","metric","wait_minutes"};
-- NULL for a campaign without a test. ab_winner: the index of the variant the rest got, set
-- once (the decision's guard) by the cron's decision step after the wait.
-- ab_results: the test's tallies (store/campaigns.ts abGroupTallies) as JSON, kept when the
-- campaign's messages are pruned (CAMPAIGN_MESSAGES_DAYS), so its report still shows them.
-- campaign_messages.ab_group: 'pending' (held while the publish steps insert them), 'test' (one variant each, spread evenly) or 'rest' (held queued
-- until the winner is known); NULL outside a test. variant: the content the message got; a
-- 'rest' row has none until the winner is picked, and is not claimed before.
ALTER TABLE campaigns ADD COLUMN ab_test TEXT;
ALTER TABLE campaigns ADD COLUMN ab_winner INTEGER;
ALTER TABLE campaigns ADD COLUMN ab_results TEXT;
ALTER TABLE campaign_messages ADD COLUMN ab_group TEXT CHECK (ab_group IN ('pending', 'test', 'rest'));
ALTER TABLE campaign_messages ADD COLUMN variant INTEGER;
