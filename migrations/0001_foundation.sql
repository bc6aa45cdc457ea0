-- Panels, their users and API keys, the attribute schema, contacts, lists and memberships.
-- Every table that holds panel data carries panel_id, and every query filters on it.
-- Times are UTC epoch milliseconds.

CREATE TABLE panels (
  id          TEXT PRIMARY KEY,
  name        TEXT NOT NULL,
  primary_key TEXT NOT NULL DEFAULT 'EMAIL',
  timezone    TEXT NOT NULL DEFAULT 'UTC',
  api_mode    INTEGER NOT NULL DEFAULT 0,
  client_id   TEXT NOT NULL UNIQUE,
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL
);

CREATE TABLE users (
  id           TEXT PRIMARY KEY,
  panel_id     TEXT NOT NULL REFERENCES panels(id),
  email        TEXT NOT NULL,
  name         TEXT,
  api_key_hash TEXT NOT NULL UNIQUE,
  disabled     INTEGER NOT NULL DEFAULT 0,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  UNIQUE (panel_id, email)
);

CREATE TABLE attributes (
  panel_id   TEXT NOT NULL REFERENCES panels(id),
  name       TEXT NOT NULL,
  type       TEXT NOT NULL CHECK (type IN ('string', 'integer', 'float', 'date', 'boolean')),
  created_at INTEGER NOT NULL,
  PRIMARY KEY (panel_id, name)
);

-- attrs holds the contact's attributes as a JSON object; pk_value is the normalised
-- primary-key value, duplicated out of attrs so it can be unique and indexed.
CREATE TABLE contacts (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id   TEXT NOT NULL REFERENCES panels(id),
  pk_value   TEXT NOT NULL,
  attrs      TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (panel_id, pk_value)
);

-- List ids are what clients send as int32 `listid`, so they are integers.
CREATE TABLE lists (
  id          INTEGER PRIMARY KEY AUTOINCREMENT,
  panel_id    TEXT NOT NULL REFERENCES panels(id),
  name        TEXT NOT NULL,
  name_key    TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  UNIQUE (panel_id, name_key)
);

CREATE TABLE list_members (
  list_id    INTEGER NOT NULL REFERENCES lists(id),
  contact_id INTEGER NOT NULL REFERENCES contacts(id),
  panel_id   TEXT NOT NULL,
  added_at   INTEGER NOT NULL,
  PRIMARY KEY (list_id, contact_id)
) WITHOUT ROWID;

CREATE INDEX list_members_by_contact ON list_members (contact_id);
