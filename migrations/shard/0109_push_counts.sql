-- Issue 42 (item 2: the figures screens read are kept, never a COUNT over a panel in a request):
-- the push settings screen's numbers of browsers and app installs a panel reaches.
--
-- push_counts: per panel and kind ('web', 'app'), the subscriptions this shard holds, kept by
--   triggers on push_subscriptions as lists.member_count is kept by list_members' (a subscribe
--   inserts, a device leaving, a push service's "gone" and an erasure delete; an upsert of a
--   device seen before updates its row and counts nothing). A panel over several shards counts
--   each shard's own rows, summed by the reader (decision 0038 step 6). Like the list counters,
--   the triggers are quiet while the panel is in transit on the shard: a whole move copies this
--   row with the rest, a partition split recounts the target at its switch (services/panels/move.ts).
CREATE TABLE IF NOT EXISTS push_counts (
  panel_id TEXT NOT NULL,
  kind     TEXT NOT NULL,
  n        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (panel_id, kind)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS push_subscriptions_count_in AFTER INSERT ON push_subscriptions
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  INSERT INTO push_counts (panel_id, kind, n) VALUES (NEW.panel_id, NEW.kind, 1)
  ON CONFLICT (panel_id, kind) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS push_subscriptions_count_out AFTER DELETE ON push_subscriptions
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
BEGIN
  UPDATE push_counts SET n = n - 1 WHERE panel_id = OLD.panel_id AND kind = OLD.kind;
END;

-- The subscriptions already held, counted once (one scan of the table, per shard).
INSERT INTO push_counts (panel_id, kind, n)
SELECT panel_id, kind, COUNT(*) FROM push_subscriptions GROUP BY panel_id, kind
ON CONFLICT (panel_id, kind) DO UPDATE SET n = excluded.n;

-- Issue 42 (item 2: each statement bounded): an A/B test's recipients are ranked into its groups
-- in bounded steps at the end of a shard's publication, not in one statement over the campaign's
-- recipients (store/campaigns.ts abRankStep; decision 0055).
--
-- campaign_messages.ab_order: a held ('pending') recipient's place in the test's order, the
--   campaign's hash of the contact (domain/ab-test.ts abOrderKey), written by the publish step
--   that inserts it; campaign_messages_ab_held reads the held ones in that order, a step's
--   worth at a time (an entry leaves it as its recipient is ranked).
-- campaigns / campaign_parts.ab_held: the recipients this shard's publish steps held for the
--   test (each step adds its own); ab_ranked: how many of them the ranking steps placed, NULL
--   before the ranking begins. Publication ends (publish_after NULL) with the last ranking step.
ALTER TABLE campaign_messages ADD COLUMN ab_order INTEGER;
CREATE INDEX IF NOT EXISTS campaign_messages_ab_held ON campaign_messages (campaign_id, ab_order, contact_id) WHERE ab_group = 'pending';
ALTER TABLE campaigns ADD COLUMN ab_held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaigns ADD COLUMN ab_ranked INTEGER;
ALTER TABLE campaign_parts ADD COLUMN ab_held INTEGER NOT NULL DEFAULT 0;
ALTER TABLE campaign_parts ADD COLUMN ab_ranked INTEGER;
-- A test publishing as this runs: its held recipients so far counted once; their order is the
-- contact id (no hash stored for them), the rest of its rows the hash's.
UPDATE campaigns SET ab_held = (SELECT COUNT(*) FROM campaign_messages m WHERE m.campaign_id = campaigns.id AND m.ab_group = 'pending')
WHERE publish_after IS NOT NULL AND ab_test IS NOT NULL;
UPDATE campaign_parts SET ab_held = (SELECT COUNT(*) FROM campaign_messages m WHERE m.campaign_id = campaign_parts.campaign_id AND m.ab_group = 'pending')
WHERE publish_after IS NOT NULL;
