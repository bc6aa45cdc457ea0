-- Migration 0032 on every shard (the same name: a database that is both control and shard 0 runs it once).
-- Sender domains of a panel (issue 21): the domains its mail is sent from, each with its DKIM
-- keys (private keys AES-GCM encrypted with SECRETS_KEY, public keys as DNS publishes them)
-- and the result of its last DNS check (SPF, DKIM, DMARC looked up over DNS-over-HTTPS).
CREATE TABLE sender_domains (
  panel_id      TEXT NOT NULL,
  domain        TEXT NOT NULL,
  rsa_selector  TEXT NOT NULL,
  rsa_private   TEXT NOT NULL,
  rsa_public    TEXT NOT NULL,
  ed_selector   TEXT NOT NULL,
  ed_private    TEXT NOT NULL,
  ed_public     TEXT NOT NULL,
  -- pending: never checked; verified: SPF, DKIM (RSA) and DMARC passed at the last check.
  state         TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'verified', 'failed')),
  -- The Ed25519 record passed at the last check: the second signature is added only then.
  ed_published  INTEGER NOT NULL DEFAULT 0,
  checks        TEXT,
  checked_at    INTEGER,
  created_at    INTEGER NOT NULL,
  PRIMARY KEY (panel_id, domain)
);

-- Why the outbox kept a message a real provider would refuse (an unverified sender domain).
ALTER TABLE outbox ADD COLUMN note TEXT;
