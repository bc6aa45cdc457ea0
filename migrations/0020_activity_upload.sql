-- Activity API v2 (CONTRACT 8): the web or app property an event came from, and activity ids
-- numbered per panel.

-- `asset_id` of an upload event (or its X-Netcore-Asset-Id header); NULL when none was sent.
ALTER TABLE events ADD COLUMN asset_id TEXT;

-- Activity ids were handed out by one counter for every panel, so a panel's first activity
-- could be 57. They are now numbered within each panel from 1 (the key is panel and id).
-- Existing activities keep their ids, so clients posting them and events and webhooks
-- carrying them keep working; a panel's next activity takes the id after its highest.
CREATE TABLE activities_new (
  panel_id   TEXT NOT NULL REFERENCES panels(id),
  id         INTEGER NOT NULL,
  name       TEXT NOT NULL,
  name_key   TEXT NOT NULL,
  -- JSON object: parameter name -> "string" | "integer" | "float"
  params     TEXT NOT NULL DEFAULT '{}',
  created_at INTEGER NOT NULL,
  PRIMARY KEY (panel_id, id),
  UNIQUE (panel_id, name_key)
);

INSERT INTO activities_new (panel_id, id, name, name_key, params, created_at)
SELECT panel_id, id, name, name_key, params, created_at FROM activities;

DROP TABLE activities;
ALTER TABLE activities_new RENAME TO activities;
