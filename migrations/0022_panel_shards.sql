-- The directory: which shard database (binding SHARD_n) holds a panel's data. Panels made
-- before shards existed sit on shard 0.
ALTER TABLE panels ADD COLUMN shard INTEGER NOT NULL DEFAULT 0;
