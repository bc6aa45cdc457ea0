-- Issue 48 (import and pipeline rates), decision 0053: contacts_by_bucket and events_by_bucket
-- (migration 0070) put each new contact and event at a random place of an index (the bucket
-- is a hash of the key), which cost the 1 M-row import four fifths of its rate and the event
-- pipeline a fifth to a third. No query reads events by bucket; a campaign's publish steps and a
-- segment count's sample go through the panel's contacts by id instead (contacts_by_panel:
-- each new contact lands at the end of its panel's entries), the bucket checked on each row.
DROP INDEX IF EXISTS events_by_bucket;
DROP INDEX IF EXISTS contacts_by_bucket;
CREATE INDEX IF NOT EXISTS contacts_by_panel ON contacts (panel_id, id);
-- An audience publish under way walked (bucket, id), so its cursor says nothing of ids: every
-- publish under way starts over from the first id (its recipients' UNIQUE (campaign_id,
-- contact_id) inserts none of them twice, and its count adds only the rows a step inserts).
-- publish_bucket (migration 0106) is no longer read.
UPDATE campaigns SET publish_after = 0, publish_bucket = 0 WHERE publish_after IS NOT NULL;
UPDATE campaign_parts SET publish_after = 0, publish_bucket = 0 WHERE publish_after IS NOT NULL;
