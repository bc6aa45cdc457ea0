-- Issue 42, decision 0038 step 4: a campaign of a panel whose contacts are split over
-- partitions on several shards publishes and sends on each of them. The campaign stays on the
-- panel's home; its recipients (campaign_messages) are inserted on the shard of their contact's
-- partition, by that shard's own publish steps, and sent from there (services/broadcasts).

-- On the home: one row per other shard holding some of the panel's partitions, made with the
-- campaign's start of publishing, in its transaction. What the home knows of each:
--   recipients    that shard's recipients, once its publishing ended (added to the campaign's
--                 `recipients` in the same transaction that sets published_at, once)
--   published_at  when its last publish step ran; NULL while its recipients are inserted
--   finished_at   when it had nothing left queued or in flight; the campaign is sent only once
--                 every row has one (completeCampaignIfDone)
CREATE TABLE campaign_shards (
  campaign_id TEXT NOT NULL,
  shard INTEGER NOT NULL,
  panel_id TEXT NOT NULL,
  recipients INTEGER NOT NULL DEFAULT 0,
  published_at INTEGER,
  finished_at INTEGER,
  PRIMARY KEY (campaign_id, shard)
);

-- On a shard other than the home: the campaign's publish progress there (as campaigns'
-- publish_after, publish_until and publish_batch keep the home's, migration 0071), moved by each
-- step's own transaction, so a step repeated after a crash inserts nothing twice. Send batches
-- are numbered per shard; a send nudge names its shard.
CREATE TABLE campaign_parts (
  campaign_id TEXT PRIMARY KEY,
  panel_id TEXT NOT NULL,
  publish_after INTEGER,
  publish_until INTEGER,
  publish_batch INTEGER NOT NULL DEFAULT 0,
  recipients INTEGER NOT NULL DEFAULT 0,
  started_at INTEGER NOT NULL,
  published_end_at INTEGER,
  updated_at INTEGER NOT NULL,
  -- Its recipient rows were pruned (housekeeping, as campaigns.messages_pruned_at on the home).
  messages_pruned_at INTEGER
);
CREATE INDEX campaign_parts_by_panel ON campaign_parts (panel_id);
