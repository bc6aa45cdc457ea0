-- Moves of a panel from one shard to another (decision 0031), run as a background job in steps
-- (src/services/panels/move.ts). One move at a time per panel; a finished or failed move stays
-- as the panel's record of it.
CREATE TABLE IF NOT EXISTS panel_moves (
  id           TEXT PRIMARY KEY,
  panel_id     TEXT NOT NULL,
  from_shard   INTEGER NOT NULL,
  to_shard     INTEGER NOT NULL,
  -- copying → catching_up → cleaning → done; failed from any state before the switch
  state        TEXT NOT NULL,
  -- copying: the table being copied (its index in the move's table order) and the last key copied
  table_index  INTEGER NOT NULL DEFAULT 0,
  cursor       TEXT,
  -- catching_up: the last change (panel_move_changes.seq on the source) copied
  change_seq   INTEGER NOT NULL DEFAULT 0,
  rows_copied  INTEGER NOT NULL DEFAULT 0,
  changes_applied INTEGER NOT NULL DEFAULT 0,
  rows_deleted INTEGER NOT NULL DEFAULT 0,
  -- the longest the panel's writes were refused (the fence), in ms
  pause_ms     INTEGER,
  lease_token  TEXT,
  lease_until  INTEGER,
  attempts     INTEGER NOT NULL DEFAULT 0,
  error        TEXT,
  created_at   INTEGER NOT NULL,
  updated_at   INTEGER NOT NULL,
  switched_at  INTEGER,
  finished_at  INTEGER
);
CREATE UNIQUE INDEX IF NOT EXISTS panel_moves_one_at_a_time ON panel_moves (panel_id) WHERE state NOT IN ('done', 'failed');
CREATE INDEX IF NOT EXISTS panel_moves_by_panel ON panel_moves (panel_id, created_at);

-- The next id range (decision 0030) for a shard that takes in a panel whose ids lie above its
-- own range (decision 0031): ranges from 1024 up, one per such move; shard indices stay below 1024.
CREATE TABLE IF NOT EXISTS id_ranges (
  id   INTEGER PRIMARY KEY CHECK (id = 1),
  next INTEGER NOT NULL
);
INSERT INTO id_ranges (id, next) VALUES (1, 1024) ON CONFLICT DO NOTHING;
