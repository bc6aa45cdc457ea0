-- Issue 42, decision 0038 step 4: an A/B test on a panel spread over shards splits and sends
-- each shard's recipients there, so each shard's rows hold its share of the test's figures.
-- Before housekeeping prunes a part's recipient rows, their tallies are kept here (as
-- campaigns.ab_results keeps the home's, migration 0073), for the report to sum them after.
ALTER TABLE campaign_parts ADD COLUMN ab_results TEXT;
