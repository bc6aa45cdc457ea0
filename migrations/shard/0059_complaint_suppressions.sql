-- Issue 41: a complaint (the recipient marked the mail as spam, reported by the provider) is its
-- own suppression reason. Stored as an unsubscribe until now, it was lifted like one by a
-- marketer's preferences change; mailbox providers' bulk-sender rules require honouring it.
-- Only the recipient, from the pages their own message links to, may take it back
-- (src/services/channels/preferences.ts).
--
-- SQLite cannot change a CHECK in place: the table is rebuilt and its rows copied as they are
-- (complaints stored before this stay `unsubscribe`; nothing tells them apart).

CREATE TABLE email_suppressions_new (
  panel_id    TEXT NOT NULL,
  address     TEXT NOT NULL,
  reason      TEXT NOT NULL CHECK (reason IN ('unsubscribe', 'hard_bounce', 'complaint')),
  campaign_id TEXT,
  created_at  INTEGER NOT NULL,
  PRIMARY KEY (panel_id, address)
) WITHOUT ROWID;
INSERT INTO email_suppressions_new (panel_id, address, reason, campaign_id, created_at)
SELECT panel_id, address, reason, campaign_id, created_at FROM email_suppressions;

DROP TABLE email_suppressions;
ALTER TABLE email_suppressions_new RENAME TO email_suppressions;
