-- Exports of a saved segment's members as CSV (issue 18): a background job on the IMPORTS
-- queue writes the file to R2 in parts, one per step, under a lease renewed while it runs.
CREATE TABLE segment_exports (
  id TEXT PRIMARY KEY,
  panel_id TEXT NOT NULL,
  segment_id TEXT NOT NULL,
  -- JSON array of the attribute names written, the panel's primary key first.
  columns TEXT NOT NULL,
  -- queued | running | completed | failed
  status TEXT NOT NULL DEFAULT 'queued',
  reason TEXT,
  -- Members when writing began (progress), rows written so far, the last contact id written.
  total INTEGER,
  rows_written INTEGER NOT NULL DEFAULT 0,
  cursor INTEGER NOT NULL DEFAULT 0,
  -- JSON array of {"key","size"}: the R2 objects of the file, in order.
  parts TEXT NOT NULL DEFAULT '[]',
  lease TEXT,
  leased_until INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  started_at INTEGER,
  finished_at INTEGER
);
CREATE INDEX segment_exports_by_panel ON segment_exports (panel_id, created_at);
-- The re-drive reads unfinished exports untouched for a while.
CREATE INDEX segment_exports_open ON segment_exports (updated_at) WHERE status IN ('queued', 'running');
