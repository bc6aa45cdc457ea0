-- Issue 42, decision 0038 step 1: the journey tables of migration 0082 are contact-keyed and
-- were made without `bucket`. Their writers copy the instance's (store/journeys/splits.ts).
ALTER TABLE journey_split_entries ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;
ALTER TABLE journey_conversions ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;

-- Rows written since 0082 take their contact's bucket here: on a shard whose back-fill is
-- already done (bucket_fills) nothing else would reach them. Where the contact's bucket is
-- itself still 0, the back-fill's contacts phase sets both later (store/buckets.ts).
UPDATE journey_split_entries SET bucket = COALESCE((SELECT c.bucket FROM contacts c WHERE c.id = journey_split_entries.contact_id), 0);
UPDATE journey_conversions SET bucket = COALESCE((SELECT c.bucket FROM contacts c WHERE c.id = journey_conversions.contact_id), 0);

-- The back-fill and erasure find a contact's split entries by (panel_id, contact_id); the
-- only such index was partial (open goals), so each read the whole table.
CREATE INDEX journey_split_entries_by_contact ON journey_split_entries (panel_id, contact_id);
