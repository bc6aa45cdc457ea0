-- An erasure under way (services/contacts/erase.ts, decision 0023): the contact's own shard
-- records it `pending` before any other shard's batch deletes a row of the contact, and its own
-- batch turns it into `archive`. A request that dies between is finished by the cron's
-- `contacts.erase_archive` a few minutes on, and a retry takes the same record. SQLite cannot
-- change a CHECK in place, so the table is rebuilt as 0047 made it, with the wider state rule.
-- Nothing references contact_erasures by foreign key.

CREATE TABLE contact_erasures_new (
  id          TEXT PRIMARY KEY,
  panel_id    TEXT NOT NULL,
  contact_id  INTEGER NOT NULL,
  owners      TEXT NOT NULL,
  state       TEXT NOT NULL CHECK (state IN ('pending', 'archive', 'done')),
  parts_done  INTEGER NOT NULL DEFAULT 0,
  created_at  INTEGER NOT NULL,
  finished_at INTEGER
);
INSERT INTO contact_erasures_new (id, panel_id, contact_id, owners, state, parts_done, created_at, finished_at)
  SELECT id, panel_id, contact_id, owners, state, parts_done, created_at, finished_at FROM contact_erasures;
DROP TABLE contact_erasures;
ALTER TABLE contact_erasures_new RENAME TO contact_erasures;
CREATE INDEX IF NOT EXISTS contact_erasures_pending ON contact_erasures (created_at) WHERE state = 'archive';
-- Erasures under way, few and short-lived: a retry finds its contact's, the cron the old ones.
CREATE INDEX IF NOT EXISTS contact_erasures_under_way ON contact_erasures (panel_id, contact_id) WHERE state = 'pending';
