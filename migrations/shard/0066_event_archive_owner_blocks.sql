-- Issue 42, bounded storage: the index from a contact or uniqueid to the archive parts holding
-- its events was a row per owner, day and part (about 120 B each with its key index, one for
-- the contact and one for the uniqueid of nearly every archived event). Now one row per owner
-- and 32-day block of days, listing the parts: [day number (days since 1970), part] pairs.
CREATE TABLE IF NOT EXISTS event_archive_owner_blocks (
  panel_id TEXT NOT NULL,
  -- 'c:<contact id>' or 'u:<uniqueid>'
  owner    TEXT NOT NULL,
  -- day number / 32
  block    INTEGER NOT NULL,
  -- JSON array of [day number, part]: the parts of the block's days holding the owner's events.
  parts    TEXT NOT NULL,
  PRIMARY KEY (panel_id, owner, block)
) WITHOUT ROWID;

INSERT INTO event_archive_owner_blocks (panel_id, owner, block, parts)
SELECT panel_id, owner, day / 86400000 / 32, json_group_array(json_array(day / 86400000, part))
FROM event_archive_owners GROUP BY panel_id, owner, day / 86400000 / 32;

DROP TABLE event_archive_owners;
