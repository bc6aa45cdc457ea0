-- Journey versions (issue 20): editing a running or paused journey makes a new version.
-- Contacts already inside finish on the version they entered (journey_instances.version);
-- new entries take the journey's current one (journeys.version). Every version's definition
-- is kept here, so the engine walks an instance's own steps however often the journey changes
-- (decision 0027). journeys.definition stays the current version's, for trigger lookups.
ALTER TABLE journeys ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE journey_instances ADD COLUMN version INTEGER NOT NULL DEFAULT 1;

CREATE TABLE IF NOT EXISTS journey_versions (
  journey_id TEXT NOT NULL,
  version    INTEGER NOT NULL,
  panel_id   TEXT NOT NULL,
  -- The definition as validated (JSON: name, trigger, filter, steps).
  definition TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  -- Who made it: the operator's email; NULL for the ADMIN_TOKEN and for versions from before this table.
  created_by TEXT,
  PRIMARY KEY (journey_id, version)
) WITHOUT ROWID;

INSERT OR IGNORE INTO journey_versions (journey_id, version, panel_id, definition, created_at)
SELECT id, 1, panel_id, definition, created_at FROM journeys;

-- The versions route counts entries per version.
CREATE INDEX IF NOT EXISTS journey_instances_by_version ON journey_instances (journey_id, version, status);
