-- Issue 42, bounded storage: housekeeping (services/retention/housekeeping.ts) prunes rows that
-- grew forever, oldest first, a bounded chunk per statement. Each index below is what lets one
-- statement find its oldest rows across the shard's panels without scanning the table.

-- Caller-chosen guids (idempotency keys) are kept EVENT_GUID_DAYS from their claim. Keys
-- claimed before this migration have no time: housekeeping stamps them when it first sees them,
-- so their window starts then.
ALTER TABLE event_guids ADD COLUMN at INTEGER;
CREATE INDEX event_guids_by_time ON event_guids (at);

-- A finished campaign's recipient rows go CAMPAIGN_MESSAGES_DAYS after it finished; its report
-- reads campaign_stats and campaign_link_clicks, which stay. Set once its rows are all gone.
ALTER TABLE campaigns ADD COLUMN messages_pruned_at INTEGER;
CREATE INDEX campaigns_to_prune ON campaigns (finished_at) WHERE messages_pruned_at IS NULL AND finished_at IS NOT NULL;

CREATE INDEX audit_log_by_time ON audit_log (at);

CREATE INDEX segment_changes_by_time ON segment_changes (at);
