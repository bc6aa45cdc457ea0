-- Issue 40, CONTRACT 10: lists are numbered per panel from 1, in creation order, so a list id
-- always fits a signed 32-bit integer (Java and C# clients keep ids in ints). Until now a
-- shard handed list ids out of its own range (decision 0030: shard 1 from 2^40 + 1).
--
-- The rule: lists that exist keep their ids (clients, journeys, segments, campaigns and
-- webhook subscribers hold them); a new list takes the next number above the panel's largest
-- list id below 2^31 (src/store/lists.ts nextListId). A panel whose lists all came from a
-- high range starts again from 1; its old lists keep answering their old ids.
--
-- The key is (panel_id, id), as for activities (migration 0020): two panels of a shard both
-- have a list 1. The tables naming a list (list_members, campaigns) name it by the pair, so
-- they are rebuilt with a foreign key on (panel_id, list_id); their rows are copied as they are.
-- The new tables name lists_new: renaming it to lists renames their references with it.

PRAGMA defer_foreign_keys = on;

CREATE TABLE lists_new (
  panel_id    TEXT NOT NULL,
  id          INTEGER NOT NULL,
  name        TEXT NOT NULL,
  name_key    TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (panel_id, id),
  UNIQUE (panel_id, name_key)
);
INSERT INTO lists_new (panel_id, id, name, name_key, description, created_at, updated_at)
SELECT panel_id, id, name, name_key, description, created_at, updated_at FROM lists;

CREATE TABLE list_members_new (
  list_id    INTEGER NOT NULL,
  contact_id INTEGER NOT NULL REFERENCES contacts(id),
  panel_id   TEXT NOT NULL,
  added_at   INTEGER NOT NULL,
  PRIMARY KEY (list_id, contact_id),
  FOREIGN KEY (panel_id, list_id) REFERENCES lists_new(panel_id, id)
) WITHOUT ROWID;
INSERT INTO list_members_new (list_id, contact_id, panel_id, added_at)
SELECT list_id, contact_id, panel_id, added_at FROM list_members;

CREATE TABLE campaigns_new (
  id             TEXT PRIMARY KEY,
  panel_id       TEXT NOT NULL,
  -- The campaign's own list (4.10); NULL for a campaign with an audience.
  list_id        INTEGER,
  name           TEXT NOT NULL,
  subject        TEXT NOT NULL,
  sender_name    TEXT NOT NULL,
  sender_email   TEXT NOT NULL,
  tags           TEXT NOT NULL DEFAULT '[]',
  schedule_local TEXT NOT NULL,
  send_at        INTEGER NOT NULL,
  body_key       TEXT NOT NULL,
  import_job_id  TEXT,
  status         TEXT NOT NULL CHECK (status IN ('scheduled', 'sending', 'sent', 'failed')),
  status_reason  TEXT,
  recipients     INTEGER NOT NULL DEFAULT 0,
  request_id     TEXT NOT NULL,
  created_at     INTEGER NOT NULL,
  published_at   INTEGER,
  finished_at    INTEGER,
  updated_at     INTEGER NOT NULL,
  -- JSON {"lists","segments","exclude_lists","exclude_segments"}; resolved into
  -- campaign_messages when the campaign is published.
  audience       TEXT,
  reply_to       TEXT,
  CHECK ((list_id IS NULL) <> (audience IS NULL)),
  FOREIGN KEY (panel_id, list_id) REFERENCES lists_new(panel_id, id)
);
INSERT INTO campaigns_new (id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key,
  import_job_id, status, status_reason, recipients, request_id, created_at, published_at, finished_at, updated_at, audience, reply_to)
SELECT id, panel_id, list_id, name, subject, sender_name, sender_email, tags, schedule_local, send_at, body_key,
  import_job_id, status, status_reason, recipients, request_id, created_at, published_at, finished_at, updated_at, audience, reply_to
FROM campaigns;

DROP TABLE campaigns;
DROP TABLE list_members;
DROP TABLE lists;
ALTER TABLE lists_new RENAME TO lists;
ALTER TABLE list_members_new RENAME TO list_members;
ALTER TABLE campaigns_new RENAME TO campaigns;

CREATE INDEX list_members_by_contact ON list_members (contact_id);
CREATE INDEX campaigns_due ON campaigns (status, send_at);
CREATE INDEX campaigns_by_panel ON campaigns (panel_id, created_at);

-- The triggers of list_members went with the old table: as migration 0054 left them.
CREATE TRIGGER list_members_enter_journeys AFTER INSERT ON list_members
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = NEW.panel_id)
BEGIN
  INSERT INTO journey_list_entries (panel_id, journey_id, list_id, contact_id)
  SELECT NEW.panel_id, j.id, NEW.list_id, NEW.contact_id FROM journeys j
  WHERE j.panel_id = NEW.panel_id AND j.status = 'running' AND j.trigger_type = 'list' AND j.trigger_key = CAST(NEW.list_id AS TEXT);
END;

CREATE TRIGGER list_members_leave_journeys AFTER DELETE ON list_members
WHEN NOT EXISTS (SELECT 1 FROM panels_in_transit WHERE panel_id = OLD.panel_id)
BEGIN
  DELETE FROM journey_list_entries WHERE panel_id = OLD.panel_id AND contact_id = OLD.contact_id AND list_id = OLD.list_id;
END;
