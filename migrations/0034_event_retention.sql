-- How long a panel keeps recorded events in its shard before they move to R2 (services/retention).
ALTER TABLE panels ADD COLUMN event_retention_days INTEGER NOT NULL DEFAULT 90;
