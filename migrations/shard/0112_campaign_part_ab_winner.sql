-- Issue 42 item 2, decision 0056: an A/B test's rest is released by a one-row write per shard,
-- not by writing the winner to every rest row. On the home the campaign's ab_winner says it; on
-- another shard of a spread panel (decision 0038 step 4) its part carries the winner the home
-- picked, written by the release nudge. A rest row keeps variant NULL until its batch is claimed,
-- which writes the winner with the claim (store/campaigns.ts abWinnerSql). Rests released before
-- this migration already hold their variant: nothing to back-fill.
ALTER TABLE campaign_parts ADD COLUMN ab_winner INTEGER;
