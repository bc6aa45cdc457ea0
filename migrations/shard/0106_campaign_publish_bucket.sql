-- Issue 42: an audience campaign's publish steps go through the panel's own contacts by
-- contacts_by_bucket (panel_id, bucket, id), within the shard's bucket ranges, not through every
-- contact id of the shard. Their cursor is the key (publish_bucket, publish_after) of the last
-- contact a step went through (migration 0071's publish_after alone was an id of the shard).
-- A list campaign's steps go by its members' ids and leave it 0. A campaign publishing when
-- this runs goes on from (0, its id): the ids it has done are stepped through again, and its
-- recipients' UNIQUE (campaign_id, contact_id) inserts none of them twice.
ALTER TABLE campaigns ADD COLUMN publish_bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_parts ADD COLUMN publish_bucket INTEGER NOT NULL DEFAULT 0;
