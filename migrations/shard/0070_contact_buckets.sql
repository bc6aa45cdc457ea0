-- Issue 42, decision 0038 step 1: every contact-keyed row carries its contact's bucket,
-- fnv1a32(panel_id || ':' || key) % 4096 (src/domain/partitions.ts contactBucket), so a
-- panel's data can be split into partitions by bucket range and a partition's rows found.
-- The Worker computes it (D1 has no user functions): contacts from pk_value, anonymous rows
-- from the uniqueid; child rows copy their contact's when written. Rows made before this
-- migration hold 0 until the back-fill (src/services/retention/buckets.ts) reaches them.
ALTER TABLE contacts ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE list_members ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE events ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE event_guids ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE uniqueid_contacts ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE anon_profiles ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE journey_instances ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE journey_points ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE journey_messages ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_messages ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE segment_members ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
-- The contact suppression kept by contact (email and SMS suppressions are kept by address).
ALTER TABLE push_optouts ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
-- A partition's contacts and events, read in id order (a split's copy, per-partition tasks).
CREATE INDEX IF NOT EXISTS contacts_by_bucket ON contacts (panel_id, bucket, id);
CREATE INDEX IF NOT EXISTS events_by_bucket ON events (panel_id, bucket, id);
