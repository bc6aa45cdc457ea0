-- Issue 47, item 4: a panel's owners subscribe to the operations alerts that concern their panel
-- (its webhooks disabled, its sender domains failing, its dead letters, its shards past 80%, a
-- late cron). NULL: the deployment admin's subscription, told of every condition.
ALTER TABLE alert_subscriptions ADD COLUMN panel_id TEXT REFERENCES panels(id);
CREATE INDEX alert_subscriptions_by_panel ON alert_subscriptions (panel_id);
