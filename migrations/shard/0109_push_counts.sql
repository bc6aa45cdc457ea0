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
