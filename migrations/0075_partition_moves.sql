-- Decision 0038 step 5, decision 0047: a move of some of a panel's buckets (a partition split)
-- rather than of the whole panel. Both NULL: the whole panel moves (decision 0031). Otherwise
-- buckets first_bucket..last_bucket of the partition on from_shard move to to_shard, and the
-- switch rewrites the partition map (panel_partitions) instead of the directory's shard.
ALTER TABLE panel_moves ADD COLUMN first_bucket INTEGER;
ALTER TABLE panel_moves ADD COLUMN last_bucket INTEGER;
