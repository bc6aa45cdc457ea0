-- Issue 45, item 4: topics (subscription groups). A panel's topics, each a name and a
-- description, shown as boxes on the preference page; a campaign may name one and then skips
-- the contacts who left it.

CREATE TABLE IF NOT EXISTS topics (
  panel_id    TEXT NOT NULL,
  id          TEXT NOT NULL,
  name        TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at  INTEGER NOT NULL,
  updated_at  INTEGER NOT NULL,
  PRIMARY KEY (panel_id, id)
) WITHOUT ROWID;

CREATE UNIQUE INDEX IF NOT EXISTS topics_name ON topics (panel_id, name COLLATE NOCASE);

-- A contact's opt-out of a topic: a row means "left it". Contacts are in every topic until they
-- leave, so a new topic reaches everyone and only the choice to leave is stored.
CREATE TABLE IF NOT EXISTS topic_optouts (
  panel_id   TEXT NOT NULL,
  contact_id INTEGER NOT NULL,
  topic_id   TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (panel_id, contact_id, topic_id)
) WITHOUT ROWID;

CREATE INDEX IF NOT EXISTS topic_optouts_topic ON topic_optouts (panel_id, topic_id);

-- The topic a campaign is about (null: none); its send skips the contacts who left it.
ALTER TABLE campaigns ADD COLUMN topic_id TEXT;
