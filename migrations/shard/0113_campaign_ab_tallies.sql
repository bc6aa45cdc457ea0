-- Issue 42 (item 2: the figures screens read are kept, never a COUNT over a panel in a request):
-- an A/B test's figures per group, read by its report and by the winner's pick (decision 0057).
--
-- campaign_ab_tallies: per campaign, group ('test', 'rest') and variant, what this shard's
--   recipients of the group came to (store/campaigns.ts abGroupTallies, the sums the GROUP BY over
--   campaign_messages gave). The rest is one row, variant -1: it is the winner's whatever its rows
--   hold (a rest row keeps variant NULL until its claim writes the winner, decision 0056), so the
--   claim's write of the variant counts nothing. Kept by triggers on campaign_messages as
--   campaign_stats is: a row is counted when a ranking step gives it its group, then each change
--   of its status, opens, clicks, bounce or unsubscribe moves its group's counters. Only rows of an
--   A/B test pay anything: every trigger's WHEN starts with the row's group. No trigger on delete:
--   like campaign_stats, the counters outlive the rows housekeeping prunes (and the rows a
--   partition split takes away; decision 0047), so nothing has to be kept before a prune. Quiet
--   while the panel is in transit on the shard: a whole move copies these rows with the rest.
CREATE TABLE IF NOT EXISTS campaign_ab_tallies (
  campaign_id   TEXT NOT NULL,
  ab_group      TEXT NOT NULL CHECK (ab_group IN ('test', 'rest')),
  -- The test's variant; -1 for the rest (the winner's, once picked).
  variant       INTEGER NOT NULL,
  panel_id      TEXT NOT NULL,
  recipients    INTEGER NOT NULL DEFAULT 0,
  sent          INTEGER NOT NULL DEFAULT 0,
  failed        INTEGER NOT NULL DEFAULT 0,
  skipped       INTEGER NOT NULL DEFAULT 0,
  opens         INTEGER NOT NULL DEFAULT 0,
  unique_opens  INTEGER NOT NULL DEFAULT 0,
  clicks        INTEGER NOT NULL DEFAULT 0,
  unique_clicks INTEGER NOT NULL DEFAULT 0,
  bounces       INTEGER NOT NULL DEFAULT 0,
  unsubscribes  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (campaign_id, ab_group, variant)
) WITHOUT ROWID;

-- A recipient placed in its group (a ranking step: 'pending' to 'test' or 'rest'), counted once
-- with what its row holds then.
CREATE TRIGGER IF NOT EXISTS campaign_ab_tallies_grouped AFTER UPDATE OF ab_group ON campaign_messages
WHEN NEW.ab_group IN ('test', 'rest') AND OLD.ab_group IS NOT NEW.ab_group
  AND NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  INSERT INTO campaign_ab_tallies (campaign_id, ab_group, variant, panel_id, recipients, sent, failed, skipped, opens, unique_opens, clicks, unique_clicks, bounces, unsubscribes)
  VALUES (
    NEW.campaign_id, NEW.ab_group, CASE WHEN NEW.ab_group = 'test' THEN COALESCE(NEW.variant, -1) ELSE -1 END, NEW.panel_id, 1,
    NEW.status = 'sent', NEW.status = 'failed', NEW.status = 'skipped',
    NEW.opens, NEW.first_open_at IS NOT NULL, NEW.clicks, NEW.first_click_at IS NOT NULL,
    NEW.bounced_at IS NOT NULL, NEW.unsubscribed_at IS NOT NULL)
  ON CONFLICT (campaign_id, ab_group, variant) DO UPDATE SET
    recipients = recipients + excluded.recipients, sent = sent + excluded.sent, failed = failed + excluded.failed, skipped = skipped + excluded.skipped,
    opens = opens + excluded.opens, unique_opens = unique_opens + excluded.unique_opens, clicks = clicks + excluded.clicks,
    unique_clicks = unique_clicks + excluded.unique_clicks, bounces = bounces + excluded.bounces, unsubscribes = unsubscribes + excluded.unsubscribes;
END;

-- A grouped recipient's change (sent, failed, skipped, opened, clicked, bounced, unsubscribed):
-- its group's row, found by key. An UPDATE, not an upsert: a row grouped before this migration
-- (or one a split brought in, its group counted on the shard it came from) has no counters here.
CREATE TRIGGER IF NOT EXISTS campaign_ab_tallies_count AFTER UPDATE OF status, opens, first_open_at, clicks, first_click_at, bounced_at, unsubscribed_at ON campaign_messages
WHEN NEW.ab_group IN ('test', 'rest') AND OLD.ab_group = NEW.ab_group
  AND ((NEW.status IS NOT OLD.status AND (NEW.status IN ('sent', 'failed', 'skipped') OR OLD.status IN ('sent', 'failed', 'skipped')))
    OR NEW.opens <> OLD.opens OR NEW.first_open_at IS NOT OLD.first_open_at OR NEW.clicks <> OLD.clicks OR NEW.first_click_at IS NOT OLD.first_click_at
    OR NEW.bounced_at IS NOT OLD.bounced_at OR NEW.unsubscribed_at IS NOT OLD.unsubscribed_at)
  AND NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  UPDATE campaign_ab_tallies SET
    sent = sent + (NEW.status = 'sent') - (OLD.status = 'sent'),
    failed = failed + (NEW.status = 'failed') - (OLD.status = 'failed'),
    skipped = skipped + (NEW.status = 'skipped') - (OLD.status = 'skipped'),
    opens = opens + NEW.opens - OLD.opens,
    unique_opens = unique_opens + (NEW.first_open_at IS NOT NULL) - (OLD.first_open_at IS NOT NULL),
    clicks = clicks + NEW.clicks - OLD.clicks,
    unique_clicks = unique_clicks + (NEW.first_click_at IS NOT NULL) - (OLD.first_click_at IS NOT NULL),
    bounces = bounces + (NEW.bounced_at IS NOT NULL) - (OLD.bounced_at IS NOT NULL),
    unsubscribes = unsubscribes + (NEW.unsubscribed_at IS NOT NULL) - (OLD.unsubscribed_at IS NOT NULL)
  WHERE campaign_id = NEW.campaign_id AND ab_group = NEW.ab_group AND variant = CASE WHEN NEW.ab_group = 'test' THEN COALESCE(NEW.variant, -1) ELSE -1 END;
END;

-- campaigns / campaign_parts.ab_tallied: 1 when this shard's recipients of the campaign are
-- counted in campaign_ab_tallies (every campaign published from here on). A campaign whose
-- publication began before (its groups, or some of them, placed uncounted) is 0: its tallies are
-- read from its messages as before, and kept before housekeeping prunes them. No back-fill.
ALTER TABLE campaigns ADD COLUMN ab_tallied INTEGER NOT NULL DEFAULT 1;
ALTER TABLE campaign_parts ADD COLUMN ab_tallied INTEGER NOT NULL DEFAULT 1;
UPDATE campaigns SET ab_tallied = 0 WHERE ab_test IS NOT NULL AND published_at IS NOT NULL;
UPDATE campaign_parts SET ab_tallied = 0;
