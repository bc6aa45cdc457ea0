-- Issue 45: housekeeping removes double opt-in signups whose link expired (they confirm
-- nothing, and hold the visitor's values), oldest first through this index, a bounded
-- statement at a time.
CREATE INDEX IF NOT EXISTS form_signups_expiry ON form_signups (expires_at);
