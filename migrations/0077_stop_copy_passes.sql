-- Decision 0061: the home's stops (email and SMS suppressions) copied onto each of a panel's
-- other shards by the cron, in bounded steps, where they are missing: stops the home recorded
-- before they were written on every shard, and those an isolate holding an older partition map
-- copied to the old map's shards only. One row a panel with a pass due or under way;
-- services/panels/stop-copies.ts.
CREATE TABLE stop_copy_passes (
  panel_id   TEXT PRIMARY KEY REFERENCES panels(id),
  -- When the cron's next run takes the pass up (on again at once while under way).
  due_at     INTEGER NOT NULL,
  -- JSON: the stop table and the source shard being copied and the last key copied; NULL: the
  -- pass starts from its beginning.
  cursor     TEXT,
  updated_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX stop_copy_passes_due ON stop_copy_passes (due_at);

-- Every panel already holding a partition off its home: its pass is due at once.
INSERT INTO stop_copy_passes (panel_id, due_at, updated_at)
SELECT DISTINCT pp.panel_id, 0, CAST(strftime('%s', 'now') AS INTEGER) * 1000
FROM panel_partitions pp JOIN panels p ON p.id = pp.panel_id
WHERE pp.shard <> p.shard;
