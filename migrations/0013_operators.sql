-- Operators: the people who sign in to the panel (not the API users, whose keys call apiv2).
-- One operator may hold a role in several panels. Passwords are PBKDF2-SHA-256 hashes; sessions
-- are kept only as the SHA-256 of their random token.

CREATE TABLE operators (
  id            TEXT PRIMARY KEY,
  email         TEXT NOT NULL UNIQUE,
  name          TEXT,
  password_hash TEXT NOT NULL,
  disabled      INTEGER NOT NULL DEFAULT 0,
  created_at    INTEGER NOT NULL,
  updated_at    INTEGER NOT NULL
);

CREATE TABLE operator_roles (
  operator_id TEXT NOT NULL REFERENCES operators(id),
  panel_id    TEXT NOT NULL REFERENCES panels(id),
  role        TEXT NOT NULL CHECK (role IN ('owner', 'marketer', 'viewer')),
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (operator_id, panel_id)
);
CREATE INDEX operator_roles_by_panel ON operator_roles (panel_id);

CREATE TABLE operator_sessions (
  token_hash   TEXT PRIMARY KEY,
  operator_id  TEXT NOT NULL REFERENCES operators(id),
  csrf_token   TEXT NOT NULL,
  created_at   INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL
);
CREATE INDEX operator_sessions_by_operator ON operator_sessions (operator_id);

-- Failed sign-ins per address and per account in the current window (rate limit).
CREATE TABLE sign_in_failures (
  subject      TEXT PRIMARY KEY,
  window_start INTEGER NOT NULL,
  failures     INTEGER NOT NULL
);

-- One-time password reset links, kept as the SHA-256 of their token.
CREATE TABLE password_resets (
  token_hash  TEXT PRIMARY KEY,
  operator_id TEXT NOT NULL REFERENCES operators(id),
  expires_at  INTEGER NOT NULL,
  used_at     INTEGER
);
