-- An erasure's outbox copies still to delete (services/contacts/erase.ts): the batch that deletes
-- a contact's campaign and journey email messages records them here in the same batch, and the
-- rows go only once the outbox rows and R2 copies of those messages are gone. A request dying
-- after the batch so loses no message id: a retry's batch reads them back, the cron's
-- `contacts.erase_archive` sweeps what is left, and the erasure reads `done` only when none of its
-- contact's is left on its shard. `message`: the campaign id of a campaign message (its id is
-- `{campaign}.{contact}`), a journey message's msgid. Ids only, no address.
CREATE TABLE IF NOT EXISTS erased_message_copies (
  panel_id   TEXT NOT NULL,
  contact_id INTEGER NOT NULL,
  kind       TEXT NOT NULL CHECK (kind IN ('campaign', 'journey')),
  message    TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (panel_id, contact_id, kind, message)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS erased_message_copies_by_age ON erased_message_copies (created_at);
