-- Issue 43, item 4: the visual email editor's source (domain/email-source.ts), JSON kept beside
-- the HTML it was rendered from, to open the message in the editor again. NULL: HTML written by
-- hand. Nothing sends from it: a campaign's HTML stays in R2 (body_key), a template's in body_html.
ALTER TABLE campaigns ADD COLUMN body_source TEXT;
ALTER TABLE email_templates ADD COLUMN body_source TEXT;
