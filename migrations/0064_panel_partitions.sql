-- Issue 42, decision 0038 step 2: the partition map. A partition is the buckets
-- first_bucket..last_bucket (of 0..4095, src/domain/partitions.ts) of one panel's
-- contact-keyed data, held by the shard SHARD_<shard>. A panel with no rows here, every panel
-- made before this migration included, is one partition: every bucket on panels.shard.
-- state: 'active' (serves), 'moving' (a split or move under way; it still serves from here).
CREATE TABLE panel_partitions (
  panel_id     TEXT NOT NULL REFERENCES panels(id),
  first_bucket INTEGER NOT NULL CHECK (first_bucket BETWEEN 0 AND 4095),
  last_bucket  INTEGER NOT NULL CHECK (last_bucket BETWEEN first_bucket AND 4095),
  shard        INTEGER NOT NULL,
  state        TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'moving')),
  PRIMARY KEY (panel_id, first_bucket)
) WITHOUT ROWID;

-- Decision 0038 step 1: how far the back-fill of contact buckets (shard migration 0070) got on
-- each shard. phase: 'contacts' (contacts and their child rows, by contact id), 'anonymous'
-- (events with a uniqueid and no identity, by event id), 'profiles' (anon_profiles, by key),
-- 'done'. cursor: the last key the phase handled (JSON), NULL at its start.
CREATE TABLE bucket_fills (
  shard      INTEGER PRIMARY KEY,
  phase      TEXT NOT NULL DEFAULT 'contacts' CHECK (phase IN ('contacts', 'anonymous', 'profiles', 'done')),
  cursor     TEXT,
  updated_at INTEGER NOT NULL
);
