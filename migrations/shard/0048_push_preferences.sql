-- Contacts who turned push notifications (app and web) off, on the preference page or through
-- the admin API. Email and SMS preferences are their suppressions (unsubscribe, stop).
CREATE TABLE IF NOT EXISTS push_optouts (
  panel_id   TEXT NOT NULL,
  contact_id INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (panel_id, contact_id)
) WITHOUT ROWID;
