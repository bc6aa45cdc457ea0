-- Issue 42: the figures screens read are stored, not counted per request.
--
-- panel_counts: per panel, its number of contacts (subject '') and each saved segment's number
--   of members (subject: the segment's id), as the background refresh last counted them
--   (services/overview/counts.ts, from housekeeping). A count is a pass over the panel's index
--   in bounded chunks, one chunk per statement: `cursor` is where the pass stopped (NULL between
--   passes) and `pass_n` what it has counted so far; at the pass's end `n` and `counted_at` take
--   its result. A request reads `n` and shows `counted_at`; where `n` is NULL (never counted) it
--   counts up to a cap and says "at least". Nothing is added to the contact or membership writes.
CREATE TABLE IF NOT EXISTS panel_counts (
  panel_id   TEXT NOT NULL,
  subject    TEXT NOT NULL,
  n          INTEGER,
  counted_at INTEGER,
  -- No type: a contact's key (TEXT) for contacts, a contact id (INTEGER) for segment members.
  cursor,
  pass_n     INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (panel_id, subject)
) WITHOUT ROWID;

-- panel_received: events stored per panel and 15-minute slot of their receipt (epoch ms of the
--   slot's start), counted by the pipeline once per pass in the transaction that stores them
--   (store/event-batches.ts). Every time zone's midnight falls on a slot's start, so Home's
--   "events today" in the panel's zone is a sum of at most 96 rows instead of a scan of the
--   panel's events (events have no index on received_at, and adding one would cost every
--   stored event an index entry). The refresh removes a panel's slots older than two days.
CREATE TABLE IF NOT EXISTS panel_received (
  panel_id TEXT NOT NULL,
  slot     INTEGER NOT NULL,
  n        INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (panel_id, slot)
) WITHOUT ROWID;

-- The last two days, counted once from the events held (a scan of events, once per shard).
INSERT INTO panel_received (panel_id, slot, n)
SELECT panel_id, (received_at / 900000) * 900000 AS slot, COUNT(*) FROM events
WHERE received_at >= (unixepoch() - 2 * 86400) * 1000
GROUP BY panel_id, slot
ON CONFLICT (panel_id, slot) DO NOTHING;
