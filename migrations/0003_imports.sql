-- Bulk contact imports (CONTRACT 2.3): one row per job holding its state, its checkpoint and
-- its counters. The queue message that drives a job only names it; everything it needs to
-- resume lives here.
CREATE TABLE import_jobs (
  id              TEXT PRIMARY KEY,
  panel_id        TEXT NOT NULL REFERENCES panels(id),
  status          TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  -- What the engine does next: download the sources, check their headers, import rows,
  -- write the error report, send the email and the callback, nothing.
  phase           TEXT NOT NULL CHECK (phase IN ('fetch', 'header', 'rows', 'report', 'notify', 'done')),
  reason          TEXT,
  -- JSON array of the files imported as one job, in order:
  -- [{"url"?, "key", "name", "owned", "size"?, "data_offset"?, "header_row"?}]
  sources         TEXT NOT NULL,
  -- JSON, set once the headers are checked: {"header": [original cells], "columns": [{"name","type"}]}
  columns         TEXT,
  list_id         INTEGER,
  notify_emails   TEXT NOT NULL DEFAULT '[]',
  callback_url    TEXT,
  callback_state  TEXT NOT NULL DEFAULT 'none' CHECK (callback_state IN ('none', 'pending', 'sending', 'sent', 'failed')),
  callback_status INTEGER,
  callback_error  TEXT,
  callback_at     INTEGER,
  -- Origin of the call that started the job, for the error report's link.
  origin          TEXT NOT NULL DEFAULT '',
  -- Checkpoint, advanced in the same D1 batch as the rows of each chunk. seq is the number of
  -- chunks committed; a chunk commits only when seq still has the value it was read with.
  seq             INTEGER NOT NULL DEFAULT 0,
  source_index    INTEGER NOT NULL DEFAULT 0,
  byte_offset     INTEGER NOT NULL DEFAULT 0,
  row_number      INTEGER NOT NULL DEFAULT 0,
  -- Highest contacts.id before the chunk being committed: ids above it were created by it.
  contact_mark    INTEGER NOT NULL DEFAULT 0,
  total           INTEGER NOT NULL DEFAULT 0,
  created         INTEGER NOT NULL DEFAULT 0,
  updated         INTEGER NOT NULL DEFAULT 0,
  failed          INTEGER NOT NULL DEFAULT 0,
  error_report_key TEXT,
  -- Consecutive failed attempts without progress; past a limit the job fails.
  attempts        INTEGER NOT NULL DEFAULT 0,
  last_error      TEXT,
  created_at      INTEGER NOT NULL,
  started_at      INTEGER,
  finished_at     INTEGER,
  updated_at      INTEGER NOT NULL
);

CREATE INDEX import_jobs_by_panel ON import_jobs (panel_id, created_at);
-- The cron looks for unfinished jobs whose progress stalled.
CREATE INDEX import_jobs_unfinished ON import_jobs (updated_at) WHERE phase <> 'done';

-- Refused rows, written with their chunk, as rendered lines of the error report CSV. The report
-- is assembled into R2 when the rows are done, then these rows are deleted.
CREATE TABLE import_errors (
  panel_id     TEXT NOT NULL,
  job_id       TEXT NOT NULL REFERENCES import_jobs(id),
  source_index INTEGER NOT NULL,
  row_number   INTEGER NOT NULL,
  line         TEXT NOT NULL,
  PRIMARY KEY (job_id, source_index, row_number)
) WITHOUT ROWID;
