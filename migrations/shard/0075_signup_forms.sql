-- Issue 45: signup forms, their unconfirmed signups (double opt-in) and consent records.

-- A panel's signup form: which attributes it asks for (JSON [{attribute, label, required}]),
-- the lists it offers (JSON [id]), its texts, where it sends the visitor after success, the
-- origins that may post to it from a browser, double opt-in, and Turnstile (on when a site key is set).
CREATE TABLE IF NOT EXISTS signup_forms (
  panel_id           TEXT NOT NULL,
  id                 TEXT NOT NULL,
  name               TEXT NOT NULL,
  title              TEXT NOT NULL DEFAULT '',
  fields             TEXT NOT NULL DEFAULT '[]',
  list_ids           TEXT NOT NULL DEFAULT '[]',
  consent_text       TEXT NOT NULL DEFAULT '',
  confirmation_text  TEXT NOT NULL DEFAULT '',
  thank_you_text     TEXT NOT NULL DEFAULT '',
  redirect_url       TEXT,
  allowed_origins    TEXT NOT NULL DEFAULT '[]',
  double_opt_in      INTEGER NOT NULL DEFAULT 1,
  turnstile_site_key TEXT,
  created_at         INTEGER NOT NULL,
  updated_at         INTEGER NOT NULL,
  PRIMARY KEY (panel_id, id)
) WITHOUT ROWID;

CREATE UNIQUE INDEX IF NOT EXISTS signup_forms_name ON signup_forms (panel_id, name COLLATE NOCASE);

-- The panel's form settings: the Turnstile secret (AES-GCM, SECRETS_KEY) and whether consent
-- records keep the visitor's IP address and user agent.
CREATE TABLE IF NOT EXISTS form_settings (
  panel_id             TEXT PRIMARY KEY,
  turnstile_secret_enc TEXT,
  consent_keeps_client INTEGER NOT NULL DEFAULT 1,
  updated_at           INTEGER NOT NULL
) WITHOUT ROWID;

-- A double opt-in signup waiting for its confirmation: the contact's membership of the form's
-- lists is unconfirmed until the link is followed, so it is no row of list_members (no campaign
-- audience, list-entry journey or segment sees it). The submitted values wait here too: an
-- unconfirmed visitor never changes an existing contact. One per form and contact; a
-- resubmission replaces the token (at most one mail per 10 minutes: sent_at).
CREATE TABLE IF NOT EXISTS form_signups (
  panel_id     TEXT NOT NULL,
  form_id      TEXT NOT NULL,
  contact_id   INTEGER NOT NULL,
  token_hash   TEXT NOT NULL,
  list_ids     TEXT NOT NULL DEFAULT '[]',
  attrs        TEXT NOT NULL DEFAULT '{}',
  consent_text TEXT NOT NULL DEFAULT '',
  ip           TEXT,
  user_agent   TEXT,
  created_at   INTEGER NOT NULL,
  sent_at      INTEGER NOT NULL,
  expires_at   INTEGER NOT NULL,
  PRIMARY KEY (panel_id, form_id, contact_id)
) WITHOUT ROWID;

CREATE UNIQUE INDEX IF NOT EXISTS form_signups_token ON form_signups (token_hash);
CREATE INDEX IF NOT EXISTS form_signups_contact ON form_signups (panel_id, contact_id);

-- Proof of consent: each subscribe, confirm, topic change (topic_join, topic_leave; `topic`)
-- and unsubscribe, how (`via`: form, api_key, import, preference_page, unsubscribe_page,
-- one_click; `via_id`: the form or key), from where (kept per form_settings), and the text shown.
CREATE TABLE IF NOT EXISTS consent_records (
  panel_id   TEXT NOT NULL,
  id         TEXT NOT NULL,
  contact_id INTEGER NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('subscribe', 'confirm', 'unsubscribe', 'topic_join', 'topic_leave')),
  list_id    INTEGER,
  topic      TEXT,
  via        TEXT NOT NULL,
  via_id     TEXT,
  ip         TEXT,
  user_agent TEXT,
  text       TEXT NOT NULL DEFAULT '',
  at         INTEGER NOT NULL,
  PRIMARY KEY (panel_id, id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS consent_records_contact ON consent_records (panel_id, contact_id);
