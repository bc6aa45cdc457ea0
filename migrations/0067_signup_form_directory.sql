-- Issue 45: a signup form's public page /f/{form} names only the form; this directory finds the
-- panel that owns it (and through panels.shard, the shard holding the form), as
-- panels.client_id does for the public API.
CREATE TABLE IF NOT EXISTS signup_form_directory (
  form_id  TEXT PRIMARY KEY,
  panel_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS signup_form_directory_panel ON signup_form_directory (panel_id);
