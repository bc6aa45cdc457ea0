-- Issue 44: imports with column mapping, and a history of imports per panel and per list.
--
-- mapping: the panel's column mapping (CSV header -> attribute, new attribute, or skip) as JSON,
--   applied when the header phase plans the columns; NULL: headers name attributes (the API's
--   bulk upload, unchanged).
-- via: who started the job: 'api' (bulkupload), 'panel' (an upload or URL import into a list),
--   'broadcast' (a campaign's contact file). Jobs made before this migration read as 'api'.
ALTER TABLE import_jobs ADD COLUMN mapping TEXT;
ALTER TABLE import_jobs ADD COLUMN via TEXT NOT NULL DEFAULT 'api';
-- The history of one list, newest first (the panel's history reads import_jobs_by_panel).
CREATE INDEX IF NOT EXISTS import_jobs_by_list ON import_jobs (panel_id, list_id, created_at) WHERE list_id IS NOT NULL;
