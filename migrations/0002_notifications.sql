-- Transactional emails sent through MAILER (import summaries, broadcast notify_me copies,
-- webhook failure alerts): what was sent to whom, and whether the send succeeded.
CREATE TABLE notifications (
  id         TEXT PRIMARY KEY,
  panel_id   TEXT NOT NULL REFERENCES panels(id),
  kind       TEXT NOT NULL,
  recipients TEXT NOT NULL,
  subject    TEXT NOT NULL,
  body       TEXT NOT NULL,
  status     TEXT NOT NULL CHECK (status IN ('sending', 'sent', 'failed')),
  error      TEXT,
  -- Set by callers that must send at most once (e.g. "import:<jobid>"); a repeat is skipped.
  dedupe_key TEXT UNIQUE,
  created_at INTEGER NOT NULL
);

CREATE INDEX notifications_by_panel ON notifications (panel_id, created_at);
