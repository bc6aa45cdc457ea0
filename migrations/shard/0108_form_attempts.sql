-- Issue 45 item 7, decision 0049 (option A): a signup form's rate limits are counted on the
-- contact's shard, in the batch that writes the contact, no longer in the control database's
-- sign_in_failures (a round trip of its own). A row counts one subject's submissions since its
-- window started: a contact key of a panel (panel_id, the per-address limit) or a client IP
-- (panel_id '', the per-IP limit, counted across the panels of this shard only). The subject is
-- the key's or the IP's erased identifier (domain/erasure.ts): no address or IP in clear.
-- `most` is the limit the last count was made under; a count past it fails the statement by its
-- named constraint, so D1 rolls back the whole batch (nothing of the submission is written) and
-- the service reads which limit refused it from the error.
CREATE TABLE form_attempts (
  panel_id TEXT NOT NULL,
  subject TEXT NOT NULL,
  window_start INTEGER NOT NULL,
  attempts INTEGER NOT NULL,
  most INTEGER NOT NULL,
  PRIMARY KEY (panel_id, subject),
  CONSTRAINT form_ip_limit CHECK (panel_id <> '' OR attempts <= most),
  CONSTRAINT form_address_limit CHECK (panel_id = '' OR attempts <= most)
) WITHOUT ROWID;

-- Housekeeping removes the rows whose window ended, oldest first (store/housekeeping.ts).
CREATE INDEX form_attempts_by_window ON form_attempts (window_start);
