-- Issue 44: operators may register passkeys (WebAuthn) and sign in with one; a passkey verified
-- with user verification counts as both factors.

-- A registered passkey: the credential id and COSE public key (base64url), the authenticator's
-- signature counter (a counter that goes backwards means a cloned key), transports as JSON, and
-- a name the operator chose.
CREATE TABLE operator_passkeys (
  id            TEXT PRIMARY KEY,
  operator_id   TEXT NOT NULL REFERENCES operators(id),
  credential_id TEXT NOT NULL UNIQUE,
  public_key    TEXT NOT NULL,
  counter       INTEGER NOT NULL DEFAULT 0,
  transports    TEXT NOT NULL DEFAULT '[]',
  name          TEXT NOT NULL,
  created_at    INTEGER NOT NULL,
  last_used_at  INTEGER
);
CREATE INDEX operator_passkeys_operator ON operator_passkeys (operator_id);

-- A WebAuthn challenge waiting for its answer, kept as its SHA-256: registration challenges
-- belong to an operator, sign-in ones to nobody yet. Spent (deleted) by the first answer.
CREATE TABLE webauthn_challenges (
  challenge_hash TEXT PRIMARY KEY,
  purpose        TEXT NOT NULL CHECK (purpose IN ('register', 'authenticate')),
  operator_id    TEXT,
  expires_at     INTEGER NOT NULL
);
