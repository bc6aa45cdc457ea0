-- Issue 43, item 3: a panel's saved email templates (name, subject, preheader, HTML body).
-- Not the journey templates of spec 6.3 (whole journeys, kept in the panel's code): these are
-- message content a campaign or a journey email step copies when it names one, so editing or
-- deleting a template never changes what was scheduled or sent from it.
CREATE TABLE IF NOT EXISTS email_templates (
  panel_id    TEXT NOT NULL,
  id          TEXT NOT NULL,
  name        TEXT NOT NULL,
  subject     TEXT NOT NULL,
  preheader   TEXT NOT NULL DEFAULT '',
  body_html   TEXT NOT NULL,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (panel_id, id)
) WITHOUT ROWID;

-- A name is a marketer's handle for the template: one per panel, whatever the ASCII case.
CREATE UNIQUE INDEX IF NOT EXISTS email_templates_name ON email_templates (panel_id, name COLLATE NOCASE);

-- The template a campaign's subject and body were copied from when it was created (NULL: its own).
ALTER TABLE campaigns ADD COLUMN email_template_id TEXT;
