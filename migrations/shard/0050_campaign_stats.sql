-- Campaign reports from aggregates (issue 20): a campaign's counters per hour, and its clicks
-- per link, so a report reads a few rows per campaign instead of scanning its messages.
--
-- campaign_stats is kept by a trigger on campaign_messages, in the transaction of the change it
-- counts: each row change adds its difference (a status that became or stopped being sent,
-- failed or skipped; opens and clicks added; a first open, first click, bounce or unsubscribe
-- set). It is therefore exact under any redelivery: a repeated send, open or bounce that
-- changes no row adds nothing, and one that does adds what it changed. The hour is the one in
-- which the change was stored (UTC, epoch milliseconds of its start). Recipients and what is
-- still queued come from the campaign (recipients) and these sums.
CREATE TABLE IF NOT EXISTS campaign_stats (
  campaign_id   TEXT NOT NULL,
  hour          INTEGER NOT NULL,
  panel_id      TEXT NOT NULL,
  sent          INTEGER NOT NULL DEFAULT 0,
  failed        INTEGER NOT NULL DEFAULT 0,
  skipped       INTEGER NOT NULL DEFAULT 0,
  bounces       INTEGER NOT NULL DEFAULT 0,
  opens         INTEGER NOT NULL DEFAULT 0,
  unique_opens  INTEGER NOT NULL DEFAULT 0,
  clicks        INTEGER NOT NULL DEFAULT 0,
  unique_clicks INTEGER NOT NULL DEFAULT 0,
  unsubscribes  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (campaign_id, hour)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS campaign_stats_count AFTER UPDATE ON campaign_messages
WHEN (NEW.status IS NOT OLD.status AND (NEW.status IN ('sent', 'failed', 'skipped') OR OLD.status IN ('sent', 'failed', 'skipped')))
  OR NEW.opens <> OLD.opens OR NEW.clicks <> OLD.clicks
  OR NEW.bounced_at IS NOT OLD.bounced_at OR NEW.unsubscribed_at IS NOT OLD.unsubscribed_at
BEGIN
  INSERT INTO campaign_stats (campaign_id, hour, panel_id, sent, failed, skipped, bounces, opens, unique_opens, clicks, unique_clicks, unsubscribes)
  VALUES (
    NEW.campaign_id, (unixepoch() / 3600) * 3600000, NEW.panel_id,
    (NEW.status = 'sent') - (OLD.status = 'sent'),
    (NEW.status = 'failed') - (OLD.status = 'failed'),
    (NEW.status = 'skipped') - (OLD.status = 'skipped'),
    (NEW.bounced_at IS NOT NULL) - (OLD.bounced_at IS NOT NULL),
    NEW.opens - OLD.opens,
    (NEW.first_open_at IS NOT NULL) - (OLD.first_open_at IS NOT NULL),
    NEW.clicks - OLD.clicks,
    (NEW.first_click_at IS NOT NULL) - (OLD.first_click_at IS NOT NULL),
    (NEW.unsubscribed_at IS NOT NULL) - (OLD.unsubscribed_at IS NOT NULL))
  ON CONFLICT (campaign_id, hour) DO UPDATE SET
    sent = sent + excluded.sent, failed = failed + excluded.failed, skipped = skipped + excluded.skipped,
    bounces = bounces + excluded.bounces, opens = opens + excluded.opens, unique_opens = unique_opens + excluded.unique_opens,
    clicks = clicks + excluded.clicks, unique_clicks = unique_clicks + excluded.unique_clicks,
    unsubscribes = unsubscribes + excluded.unsubscribes;
END;

-- Clicks per link of a campaign (the tracked link's target URL), counted with the click.
CREATE TABLE IF NOT EXISTS campaign_link_clicks (
  campaign_id TEXT NOT NULL,
  url         TEXT NOT NULL,
  panel_id    TEXT NOT NULL,
  clicks      INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (campaign_id, url)
) WITHOUT ROWID;

-- Campaigns sent before this migration: their messages counted once, in the hour of the send.
INSERT INTO campaign_stats (campaign_id, hour, panel_id, sent, failed, skipped, bounces, opens, unique_opens, clicks, unique_clicks, unsubscribes)
SELECT campaign_id, (COALESCE(sent_at, attempted_at, 0) / 3600000) * 3600000, panel_id,
  SUM(status = 'sent'), SUM(status = 'failed'), SUM(status = 'skipped'), SUM(bounced_at IS NOT NULL),
  SUM(opens), SUM(first_open_at IS NOT NULL), SUM(clicks), SUM(first_click_at IS NOT NULL), SUM(unsubscribed_at IS NOT NULL)
FROM campaign_messages WHERE status IN ('sent', 'failed', 'skipped')
GROUP BY campaign_id, (COALESCE(sent_at, attempted_at, 0) / 3600000) * 3600000, panel_id
ON CONFLICT (campaign_id, hour) DO NOTHING;
