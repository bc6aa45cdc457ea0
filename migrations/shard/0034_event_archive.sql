-- Event retention (services/retention): events older than the panel's event_retention_days
-- move to R2 as gzipped NDJSON parts, one object per part of a panel's day.
CREATE INDEX IF NOT EXISTS events_by_time ON events (panel_id, occurred_at);

-- A part: events of (panel, UTC day), ids part..last_id; state written -> verified
-- (the object read back whole; rows being deleted) -> done.
CREATE TABLE IF NOT EXISTS event_archive_parts (
  panel_id   TEXT NOT NULL,
  -- The ids of the events it holds (JSON array): a resumed part works on exactly these rows.
  ids        TEXT NOT NULL,
  day        INTEGER NOT NULL,
  part       INTEGER NOT NULL,
  last_id    INTEGER NOT NULL,
  events     INTEGER NOT NULL,
  state      TEXT NOT NULL CHECK (state IN ('written', 'verified', 'done')),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (panel_id, day, part)
);
CREATE INDEX IF NOT EXISTS event_archive_parts_unfinished ON event_archive_parts (created_at) WHERE state <> 'done';

-- Whose events a part holds ('c:<contact id>' or 'u:<uniqueid>'): history pages read only those parts.
CREATE TABLE IF NOT EXISTS event_archive_owners (
  panel_id TEXT NOT NULL,
  owner    TEXT NOT NULL,
  day      INTEGER NOT NULL,
  part     INTEGER NOT NULL,
  PRIMARY KEY (panel_id, owner, day, part)
);

-- Housekeeping (services/retention/housekeeping.ts) finds old rows by time across the shard.
CREATE INDEX IF NOT EXISTS import_jobs_finished ON import_jobs (finished_at) WHERE phase = 'done';
CREATE INDEX IF NOT EXISTS outbox_by_time ON outbox (created_at);
