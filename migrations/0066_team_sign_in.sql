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
