-- The shard that wrote an archive part (services/retention/archive.ts), named in its R2 key
-- (`.../part-{N}-s{shard}.ndjson.gz`) and in the owner index's pairs ([day, part, shard]): a
-- partition split (decision 0047) leaves a moved event on its source and its target until
-- cleaning, and both may archive it as the first event of a part of the same day, so a key of
-- panel, day and first event id alone was written by both and the later write lost the other's
-- rows. NULL: a part written before, under its key without the shard.
ALTER TABLE event_archive_parts ADD COLUMN shard INTEGER;
