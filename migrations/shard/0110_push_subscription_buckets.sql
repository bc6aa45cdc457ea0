-- Issue 42, decisions 0038 (step 1) and 0047: a device's row carries the bucket of the key its
-- shard was chosen by (the contact's primary-key value when the site or app knew it, else the
-- uniqueid: services/channels/push/subscriptions.ts), so a partition move or split carries it
-- with its contact (store/panel-move/tables.ts BUCKETED_TABLES). Before, a split left the moved
-- contacts' devices on the source, where no push to them looked any more.
ALTER TABLE push_subscriptions ADD COLUMN bucket INTEGER NOT NULL DEFAULT 0;

-- The rows already held take the bucket of their owner's row on this shard (the contact, else
-- the anonymous profile), in one pass over the table as 0109's count. Where the bucket
-- back-fill (services/retention/buckets.ts) has not finished, it sets them again from the key.
UPDATE push_subscriptions SET bucket = COALESCE(
  CASE WHEN contact_key IS NOT NULL
    THEN (SELECT c.bucket FROM contacts c WHERE c.panel_id = push_subscriptions.panel_id AND c.pk_value = push_subscriptions.contact_key)
    ELSE (SELECT ap.bucket FROM anon_profiles ap WHERE ap.panel_id = push_subscriptions.panel_id AND ap.uniqueid = push_subscriptions.uniqueid)
  END, 0);
