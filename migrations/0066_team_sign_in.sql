-- Issue 44: operators join a panel by an emailed invitation and set their own password, and may
-- sign in with a second factor (TOTP with recovery codes).

-- An owner's invitation of an address to a panel with a role. The link's token is kept only as
-- its SHA-256; resending replaces token_hash (the old link stops working) and the expiry.
-- Accepted and revoked rows stay so that their link can say so; one open invitation per address
-- and panel.
CREATE TABLE operator_invitations (
  id          TEXT PRIMARY KEY,
  panel_id    TEXT NOT NULL REFERENCES panels(id),
  email       TEXT NOT NULL,
  role        TEXT NOT NULL CHECK (role IN ('owner', 'marketer', 'viewer')),
  token_hash  TEXT NOT NULL UNIQUE,
  invited_by  TEXT,
  created_at  INTEGER NOT NULL,
  sent_at     INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  accepted_at INTEGER,
  revoked_at  INTEGER
);
CREATE UNIQUE INDEX operator_invitations_open ON operator_invitations (panel_id, email) WHERE accepted_at IS NULL AND revoked_at IS NULL;

-- An operator's TOTP second factor: the secret encrypted with SECRETS_KEY (AES-GCM). confirmed_at
-- stays NULL until a first code proves the authenticator holds it. last_step is the newest time
-- step a code was accepted for, so each code works once.
CREATE TABLE operator_totp (
  operator_id  TEXT PRIMARY KEY REFERENCES operators(id),
  secret       TEXT NOT NULL,
  confirmed_at INTEGER,
  last_step    INTEGER NOT NULL DEFAULT 0,
  created_at   INTEGER NOT NULL
);

-- Single-use recovery codes of an operator's second factor, kept as SHA-256 hashes.
CREATE TABLE operator_recovery_codes (
  operator_id TEXT NOT NULL REFERENCES operators(id),
  code_hash   TEXT NOT NULL,
  used_at     INTEGER,
  PRIMARY KEY (operator_id, code_hash)
);

-- A sign-in whose password was right and that waits for the second factor (`code`) or for the
-- operator to enrol one (`enrol`, a panel requires it). Kept as the SHA-256 of its token; a few
-- wrong codes end it.
CREATE TABLE sign_in_steps (
  token_hash  TEXT PRIMARY KEY,
  operator_id TEXT NOT NULL REFERENCES operators(id),
  step        TEXT NOT NULL CHECK (step IN ('code', 'enrol')),
  expires_at  INTEGER NOT NULL,
  failures    INTEGER NOT NULL DEFAULT 0
);

-- The owner's "require two-factor sign-in for this panel".
ALTER TABLE panels ADD COLUMN require_two_factor INTEGER NOT NULL DEFAULT 0;
