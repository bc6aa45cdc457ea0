-- The saved segments of migration 0030, on every shard (the same name: a database that is both control and shard 0 runs it once).
-- Saved segments (CONTRACT 9): definitions, their live membership, and the log of entries
-- and exits (size over time; what a segment journey enters).

CREATE TABLE segments (
  id           TEXT PRIMARY KEY,
  panel_id     TEXT NOT NULL,
  name         TEXT NOT NULL,
  -- The `match` as validated (JSON).
  definition   TEXT NOT NULL,
  -- What can change membership (domain/segments.ts dependenciesOf), as flags: the hooks of
  -- contact writes, the pipeline and the cron look only at the segments concerned.
  on_attributes INTEGER NOT NULL DEFAULT 0,
  on_lists      INTEGER NOT NULL DEFAULT 0,
  on_events     INTEGER NOT NULL DEFAULT 0,
  on_sends      INTEGER NOT NULL DEFAULT 0,
  slides        INTEGER NOT NULL DEFAULT 0,
  -- Bumped by each edit: a build page of an older definition writes nothing.
  version      INTEGER NOT NULL DEFAULT 1,
  -- A full build (after creation, an edit, a bulk upload): the last contact id it reached;
  -- NULL when no build is due. rebuild_due: start over once the current pass ends.
  build_cursor INTEGER,
  rebuild_due  INTEGER NOT NULL DEFAULT 0,
  -- Sliding windows were re-checked up to this time.
  checked_at   INTEGER NOT NULL,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL
);

CREATE INDEX segments_by_panel ON segments (panel_id, created_at);
CREATE INDEX segments_building ON segments (updated_at) WHERE build_cursor IS NOT NULL;

CREATE TABLE segment_members (
  segment_id TEXT NOT NULL,
  contact_id INTEGER NOT NULL,
  panel_id   TEXT NOT NULL,
  entered_at INTEGER NOT NULL,
  PRIMARY KEY (segment_id, contact_id)
) WITHOUT ROWID;

CREATE INDEX segment_members_by_contact ON segment_members (contact_id);

-- Every entry and exit, with its time.
CREATE TABLE segment_changes (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  segment_id TEXT NOT NULL,
  panel_id   TEXT NOT NULL,
  contact_id INTEGER NOT NULL,
  change     TEXT NOT NULL CHECK (change IN ('enter', 'exit')),
  at         INTEGER NOT NULL
);

CREATE INDEX segment_changes_by_segment ON segment_changes (segment_id, at);

-- Segment journeys enter through the list entries' queue (decision 0014): an entry names the
-- segment instead of a list (list_id 0).
ALTER TABLE journey_list_entries ADD COLUMN segment_id TEXT;

CREATE TRIGGER segment_members_enter AFTER INSERT ON segment_members
BEGIN
  INSERT INTO segment_changes (segment_id, panel_id, contact_id, change, at) VALUES (NEW.segment_id, NEW.panel_id, NEW.contact_id, 'enter', NEW.entered_at);
  INSERT INTO journey_list_entries (panel_id, journey_id, list_id, contact_id, segment_id)
  SELECT NEW.panel_id, j.id, 0, NEW.contact_id, NEW.segment_id FROM journeys j
  WHERE j.panel_id = NEW.panel_id AND j.status = 'running' AND j.trigger_type = 'segment' AND j.trigger_key = NEW.segment_id;
END;

CREATE TRIGGER segment_members_exit AFTER DELETE ON segment_members
BEGIN
  INSERT INTO segment_changes (segment_id, panel_id, contact_id, change, at)
  VALUES (OLD.segment_id, OLD.panel_id, OLD.contact_id, 'exit', CAST(unixepoch('subsec') * 1000 AS INTEGER));
  DELETE FROM journey_list_entries WHERE panel_id = OLD.panel_id AND contact_id = OLD.contact_id AND segment_id = OLD.segment_id;
END;

-- Behaviour conditions find the contacts who performed an activity (or an email event) in a
-- window without reading every event of the panel.
CREATE INDEX events_by_name ON events (panel_id, channel, name, occurred_at, contact_id);

-- A campaign of the admin API may name its audience (lists and segments, with exclusions)
-- instead of a list of its own; resolved into campaign_messages when it is published.
ALTER TABLE campaigns ADD COLUMN audience TEXT;
