-- Issue 46 (decision 0040): the marketing messages counted against the panel's frequency caps,
-- one row per message (campaign message or journey msgid), written by the conditional insert
-- that lets the message go. A cap's count is the contact's rows of the channel within its
-- window: an indexed range read of at most a few rows.
CREATE TABLE contact_sends (
  panel_id   TEXT NOT NULL,
  contact_id INTEGER NOT NULL,
  channel    TEXT NOT NULL CHECK (channel IN ('email', 'sms', 'push')),
  at         INTEGER NOT NULL,
  send_key   TEXT NOT NULL,
  PRIMARY KEY (panel_id, contact_id, channel, at, send_key)
) WITHOUT ROWID;

-- A message's row found by its key: a retried send finds the room it was given.
CREATE UNIQUE INDEX contact_sends_by_key ON contact_sends (panel_id, send_key);

-- A campaign recipient deferred by quiet hours or sent at the contact's local time: not claimed
-- before due_at (NULL: at once). The re-drive of sending campaigns nudges only batches with
-- recipients due.
ALTER TABLE campaign_messages ADD COLUMN due_at INTEGER;
-- Send at local time: each recipient at this HH:MM on its own clock (its TIMEZONE attribute,
-- else the panel's zone) on the campaign's send date (its date in the panel's zone); NULL: at once.
ALTER TABLE campaigns ADD COLUMN local_time TEXT;
